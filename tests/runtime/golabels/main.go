// The Go labels workload: burns CPU 2:1:1 under two pprof label sets, each naming a trace
// and a span the way OpenTelemetry-to-pprof-label bridges do (trace_id, span_id in hex),
// and under no labels. Runs until killed, or for the seconds given as its argument.
package main

import (
	"context"
	"os"
	"runtime/pprof"
	"strconv"
	"time"
)

const (
	traceA = "0af7651916cd43dd8448eb211c80319c"
	spanA  = "b7ad6b7169203331"
	traceB = "4bf92f3577b34da6a3ce929d0e0e4736"
	spanB  = "00f067aa0ba902b7"
)

var sink uint64

//go:noinline
func burn(units int) {
	x := sink
	for i := 0; i < units*2000000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	sink = x
}

//go:noinline
func checkout() { burn(2) }

//go:noinline
func payment() { burn(1) }

//go:noinline
func background() { burn(1) }

func main() {
	deadline := time.Time{}
	if len(os.Args) > 1 {
		s, err := strconv.Atoi(os.Args[1])
		if err == nil {
			deadline = time.Now().Add(time.Duration(s) * time.Second)
		}
	}
	ctx := context.Background()
	a := pprof.Labels("trace_id", traceA, "span_id", spanA, "route", "/checkout")
	b := pprof.Labels("trace_id", traceB, "span_id", spanB, "route", "/payment")
	for deadline.IsZero() || time.Now().Before(deadline) {
		pprof.Do(ctx, a, func(context.Context) { checkout() })
		pprof.Do(ctx, b, func(context.Context) { payment() })
		background()
	}
}
