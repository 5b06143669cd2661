module otelprof/benchgo

go 1.21
