module github.com/open-telemetry/opentelemetry-collector-contrib/extension/encoding

go 1.25
