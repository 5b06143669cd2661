module otelprof/tests/runtime/golabels

go 1.21
