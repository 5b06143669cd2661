package integration

import (
	_ "github.com/google/pprof/profile"
	_ "go.opentelemetry.io/collector/pdata/pprofile"
)
