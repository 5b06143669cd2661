module github.com/open-telemetry/opentelemetry-collector-contrib/extension/encoding/otlpencodingextension

go 1.25
