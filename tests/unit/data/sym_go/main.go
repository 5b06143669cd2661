// A CPU-bound Go program for the symbolizer tests: its functions must be named from
// .gopclntab, also when the binary is built with -ldflags="-s -w".
package main

import (
	"fmt"
	"os"
)

// symGoSquare is inlined into symGoHotLoop: its frames come from DWARF or, stripped, from
// the pclntab inline tree.
func symGoSquare(i int) int {
	return i * i % 7
}

//go:noinline
func symGoHotLoop(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += symGoSquare(i)
	}
	return s
}

type worker struct{ n int }

//go:noinline
func (w *worker) symGoMethod() int {
	return symGoHotLoop(w.n) + 1
}

func main() {
	w := &worker{n: 1000}
	if len(os.Args) > 1 {
		fmt.Sscan(os.Args[1], &w.n)
	}
	fmt.Println(w.symGoMethod())
}
