// A CPU-bound Go program for the benchmark's Go row (bench/harness.py): main.main ->
// main.goMid -> main.goLeaf for the given number of seconds. The harness builds it with
// -ldflags="-s -w" (no symbol table, no DWARF, no .debug_frame: what container images ship),
// so names come from .gopclntab and stacks from its SP-delta tables. goLeaf is a frameless
// leaf: a frame-pointer walk cannot see its caller.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

//go:noinline
func goLeaf(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i % 7
	}
	return s
}

//go:noinline
func goMid(n int) int {
	return goLeaf(n) + 1
}

func main() {
	secs := 4.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			secs = v
		}
	}
	deadline := time.Now().Add(time.Duration(secs * float64(time.Second)))
	rounds, sink := 0, 0
	for time.Now().Before(deadline) {
		sink += goMid(200000)
		rounds++
	}
	fmt.Printf("rounds=%d sink=%d\n", rounds, sink)
}
