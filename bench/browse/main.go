// browse: open an otelprof HTML report in headless Chromium and say how long it took to
// show. Used by bench/capabilities/report.py.
//
//	browse FILE.html [CHROMIUM]
//
// Prints one JSON line: readyMs (navigation start to the page's first complete render: data
// parsed, totals computed, flamegraph and tables drawn), paintMs (to the frame after that),
// wallMs (from the navigate command to the page saying it is ready, as the harness saw it),
// nodes drawn, and the console errors.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: browse FILE.html [CHROMIUM]")
		os.Exit(2)
	}
	exe := "/usr/bin/chromium"
	if len(os.Args) > 2 {
		exe = os.Args[2]
	}
	dir, err := os.MkdirTemp("", "browse-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(1400, 1000),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		fail(err)
	}
	var mu sync.Mutex
	var errs []string
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				errs = append(errs, m.String())
				mu.Unlock()
			}
		}
	}()
	abs, _ := filepath.Abs(os.Args[1])
	tctx, tcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer tcancel()
	t0 := time.Now()
	if err := chromedp.Do(tctx, chromedp.Navigate("file://"+abs),
		chromedp.WaitReady(chromedp.CSS("body[data-paint-ms]"))); err != nil {
		fail(err)
	}
	wall := time.Since(t0)
	res, err := chromedp.Run(tctx, chromedp.Evaluate[map[string]string](`({
		ready: document.body.dataset.readyMs, paint: document.body.dataset.paintMs,
		drawn: String(otelprof.drawn().length)})`))
	if err != nil {
		fail(err)
	}
	mu.Lock()
	defer mu.Unlock()
	num := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	out, _ := json.Marshal(map[string]any{
		"readyMs": num(res["ready"]), "paintMs": num(res["paint"]),
		"wallMs": float64(wall.Microseconds()) / 1000, "drawn": num(res["drawn"]),
		"errors": errs,
	})
	fmt.Println(string(out))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "browse:", err)
	os.Exit(1)
}
