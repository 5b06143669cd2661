"""The HTML report (issue 18): what a big profile costs to turn into a page and to open.

build/fixtures/fixture_bigprofile writes a synthetic CPU profile with the recorder's own
builder: 1,000,000 samples over 100,000 distinct stacks (6 processes, 48 threads, 6,000
functions in 12 binaries, stacks 6-60 frames deep sharing prefixes), gzipped pprof as
`otelprof record` writes it. `otelprof report` turns it into the HTML page (wall time and peak
RSS of the command); bench/browse opens the page in headless Chromium (the system's package)
over the DevTools protocol and reads the page's own mark: navigation start to the first
complete render (data parsed, totals computed, flamegraph and the three tables drawn), and
the frame after it. Also the time of `otelprof convert` to OTLP and back, and of `diff` of the
profile with itself. Medians of the repetitions."""
import json
import os
import subprocess
import time


def timed(cmd):
    """Wall seconds and peak RSS (MiB) of one run of cmd."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}")
    return wall, ru.ru_maxrss / 1024.0


def run(ctx):
    build, work = ctx["BUILD"], ctx["workdir"]
    title = "Report: 1 M samples, 100 k distinct stacks"
    fixture = os.path.join(build, "fixtures", "fixture_bigprofile")
    cli = os.path.join(build, "otelprof")
    browse = os.path.join(work, "browse")
    if not os.path.exists("/usr/bin/chromium"):
        return {"title": title, "error": "chromium is not installed (scripts/install-deps.sh)"}
    r = ctx["sh"](["go", "build", "-o", browse, "."], cwd=os.path.join(ctx["ROOT"], "bench", "browse"))
    if r.returncode != 0:
        return {"title": title, "error": "go build bench/browse failed: " + r.stderr[-300:]}
    prof = os.path.join(work, "big.pb.gz")
    html = os.path.join(work, "big.html")
    r = ctx["sh"]([fixture, prof])
    if r.returncode != 0:
        return {"title": title, "error": "fixture_bigprofile failed: " + r.stderr[-300:]}
    reps = 1 if ctx["QUICK"] else 3
    gen, rss, opened, painted, conv, diff = [], [], [], [], [], []
    errors = []
    for _ in range(reps):
        w, m = timed([cli, "report", prof, "-o", html])
        gen.append(w)
        rss.append(m)
        out = subprocess.run([browse, html], capture_output=True, text=True, timeout=300)
        if out.returncode != 0:
            return {"title": title, "error": "browse failed: " + out.stderr[-300:]}
        res = json.loads(out.stdout)
        opened.append(res["readyMs"])
        painted.append(res["paintMs"])
        errors += res.get("errors") or []
        otlp = os.path.join(work, "big.otlp.pb")
        back = os.path.join(work, "back.pb.gz")
        w1, _ = timed([cli, "convert", prof, otlp])
        w2, _ = timed([cli, "convert", otlp, back])
        conv.append(w1 + w2)
        w, _ = timed([cli, "diff", prof, prof, "--html", os.path.join(work, "diff.html")])
        diff.append(w)
        ctx["log"](f"  report {gen[-1]:.2f} s, opens in {opened[-1]:.0f} ms")
    size = os.path.getsize(html)
    med = ctx["median"]
    rows = [
        ["`otelprof report` wall time (s)", f"{med(gen):.2f}"],
        ["`otelprof report` peak RSS (MiB)", f"{med(rss):.0f}"],
        ["HTML size (MiB)", f"{size / 1048576:.1f}"],
        ["pprof input size (MiB)", f"{os.path.getsize(prof) / 1048576:.1f}"],
        ["opens in Chromium: navigation to complete render (ms)", f"{med(opened):.0f}"],
        ["... to the next painted frame (ms)", f"{med(painted):.0f}"],
        ["console errors", str(len(errors))],
        ["`otelprof convert` pprof -> OTLP -> pprof (s)", f"{med(conv):.2f}"],
        ["`otelprof diff` of the profile with itself, with --html (s)", f"{med(diff):.2f}"],
    ]
    return {
        "title": title,
        "columns": ["", "otelprof"],
        "rows": rows,
        "notes": __doc__.split("\n\n", 1)[1].replace("\n", " ") + f" {reps} repetition(s).",
    }
