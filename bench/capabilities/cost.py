"""Own cost (issue 14): agent CPU, memory, first-profile latency and the exec storm, with the
upstream profiler side by side in the same run, and the collector's floor.

For each profiler (otelprof record, otelcol-otelprof, the upstream otelcol-ebpf-profiler):
  - agent CPU (% of one CPU, the process tree's schedstat over the window) at 20 Hz on an idle
    host (300 sleepers, bench_idle), at 20 Hz busy (bench_ratio on every CPU) and 999 Hz busy;
    on the idle host also over the window after it: the bench's own process sleeps through the
    warm-up and starts polling /proc as the first window opens, so that window holds each
    agent's first sight of it (its maps, unwind tables, debug info) and the next one what an
    idle host costs once everything running has been seen;
  - RSS steady (median of the second half of the idle window) and peak (VmHWM at its end);
  - time to first profile (launch -> first profile on disk; 1 s duration or reporter interval)
    while one CPU is busy (bench_ratio): on an idle host neither collector sends an empty
    report, so the figure would measure when something happens to run;
  - exec storm: rel_storm at 400 spawns/s, each child burning 2 ms (exits about 3 ms after
    exec); share of the children's samples whose every frame is named (a child's samples in
    ld.so count when named), the share in rel_storm_burn, and peak RSS.
The floor: our collector build run with only an `otlp` receiver (nothing profiling): the Go
runtime's and the collector's own RSS and CPU; each collector's figure above it is reported.
The upstream build has no otlp receiver, so the same floor (same collector version) is taken
for both. Medians of the repetitions (3, 1 with QUICK); ratios pair by pair in a repetition.

Run alone: python3 bench/capabilities/cost.py (root; QUICK=1 for the short run).
"""
import glob
import os
import signal
import statistics
import subprocess
import sys
import time

SLEEPERS = 300


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def _fmt(v, f="{:.2f}"):
    return "n/a" if v is None else f.format(v)


def _launch(ctx, prof, hz, tag):
    out = os.path.join(ctx["workdir"], f"cost-{prof.name}-{tag}-{hz}.out")
    for f in glob.glob(out + "*"):
        os.unlink(f)
    prof.launch(hz, out)
    ready = prof.wait_ready()
    if ready is None or prof.proc.poll() is not None:
        prof.stop()
        return None
    return out


def _window(ctx, pid, secs, until=None):
    """CPU % of one CPU and RSS samples (KiB) of pid's tree over secs (or until until())."""
    c0, t0, rss = ctx["tree_cpu_ns"](pid), time.time(), []
    while True:
        rss.append(ctx["tree_kb"](pid, "VmRSS"))
        time.sleep(0.25)
        if until is not None:
            if until():
                break
        elif time.time() - t0 >= secs:
            break
    wall = time.time() - t0
    cpu = 100.0 * (ctx["tree_cpu_ns"](pid) - c0) / 1e9 / wall
    return cpu, rss


def steady(ctx, prof, hz, tag, secs, warmup, workload=None, then=0):
    """One session: (cpu %, rss steady MiB, rss peak MiB) of prof over the window, and with
    then > 0 the cpu % over the then seconds after it (a fourth element)."""
    pre = None
    if tag == "idle":
        pre = subprocess.Popen([os.path.join(ctx["WL"], "bench_idle"), "600", str(SLEEPERS)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
    try:
        if _launch(ctx, prof, hz, tag) is None:
            return None
        time.sleep(warmup)
        pid = prof.proc.pid
        w = None
        if workload:
            w = subprocess.Popen(workload, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            cpu, rss = _window(ctx, pid, secs, until=lambda: w.poll() is not None)
        else:
            cpu, rss = _window(ctx, pid, secs)
        peak = ctx["tree_kb"](pid, "VmHWM") / 1024
        after = _window(ctx, pid, then)[0] if then else None
        prof.stop()
        return cpu, _median(rss[len(rss) // 2:]) / 1024, peak, after
    finally:
        if pre:
            pre.send_signal(signal.SIGTERM)
            pre.communicate()


def storm(ctx, prof, secs, warmup):
    """Exec storm: (named % of the children's samples, children's samples, peak RSS MiB)."""
    out = _launch(ctx, prof, 20, "storm")
    if out is None:
        return None
    time.sleep(warmup)
    pid = prof.proc.pid
    w = subprocess.Popen([os.path.join(ctx["WL"], "rel_storm"), "400", str(secs), "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    peak_rss = 0
    while w.poll() is None:
        peak_rss = max(peak_rss, ctx["tree_kb"](pid, "VmRSS"))
        time.sleep(0.25)
    w.communicate()
    time.sleep(1.0)
    peak = max(peak_rss, ctx["tree_kb"](pid, "VmHWM")) / 1024
    prof.stop()
    samples, _ = prof.read()
    kids = [s for s in samples if s.get("pid") != w.pid and
            (s.get("comm", "").startswith("rel_storm") or "rel_storm_burn" in _names(ctx, s))]
    total = sum(s["count"] for s in kids)
    named = sum(s["count"] for s in kids if _all_named(ctx, prof, s))
    burn = sum(s["count"] for s in kids if "rel_storm_burn" in _names(ctx, s))
    pct = (lambda n: 100.0 * n / total if total else None)
    return pct(named), total, peak, pct(burn)


def _all_named(ctx, prof, s):
    """A sample whose every frame is named: a function name, or for the upstream profiler
    (it leaves native names to a backend) a native frame in a known file the backend names
    by build id. Marker frames ("[unwind error: ...]") neither name nor unname a sample; a
    sample of markers only is not named. A child spends part of its 3 ms in ld.so (cpuid in
    init_cpu_features is slow under a hypervisor): those frames count when named, unlike
    the rel_storm_burn share."""
    names = _names(ctx, s)
    seen = False
    for fr, fn in zip(s.get("frames") or [], names):
        if fn.startswith("["):
            continue
        if not fn and not (prof.name == "upstream" and fr.get("file")):
            return False
        seen = True
    return seen


_syms = {}


def _names(ctx, s):
    """Frame names; native frames of rel_storm the profiler left as addresses (the upstream
    profiler leaves symbolization to a backend) are named from its symbol table, as a backend
    would."""
    out = []
    for fr in s.get("frames") or []:
        fn = fr.get("fn") or ""
        if not fn and os.path.basename(fr.get("file") or "") == "rel_storm":
            path = os.path.join(ctx["WL"], "rel_storm")
            if path not in _syms:
                rows = []
                for line in ctx["sh"](["nm", "-S", "--defined-only", path]).stdout.splitlines():
                    f = line.split()
                    if len(f) == 4 and f[2] in "tTwW":
                        rows.append((int(f[0], 16), int(f[0], 16) + int(f[1], 16), f[3]))
                _syms[path] = rows
            a = fr.get("addr", 0)
            fn = next((r[2] for r in _syms[path] if r[0] <= a < r[1]), "")
        out.append(fn)
    return out


class Floor:
    """Our collector build with only an otlp receiver: no profiling at all."""
    name = "floor"

    def __init__(self, binary):
        self.binary, self.proc = binary, None

    def run(self, ctx, secs):
        cfg = os.path.join(ctx["workdir"], "cost-floor.yaml")
        with open(cfg, "w") as f:
            f.write("""receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:0
exporters:
  debug:
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [debug]
""")
        log = open(cfg + ".log", "w")
        self.proc = subprocess.Popen([self.binary, "--config", cfg,
                                      "--feature-gates=service.profilesSupport"],
                                     stdout=subprocess.DEVNULL, stderr=log)
        end = time.time() + 30
        while time.time() < end and self.proc.poll() is None:
            if "Everything is ready" in open(cfg + ".log").read():
                break
            time.sleep(0.05)
        if self.proc.poll() is not None:
            return None
        time.sleep(2)
        cpu, rss = _window(ctx, self.proc.pid, secs)
        peak = ctx["tree_kb"](self.proc.pid, "VmHWM") / 1024
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        return cpu, _median(rss[len(rss) // 2:]) / 1024, peak


def run(ctx):
    quick = ctx["QUICK"]
    reps = 1 if quick else 3
    secs = 5 if quick else 10
    warmup = 5.0 if quick else 8.0  # startup (the first symbolization of every process) is not steady state
    storm_s = 10 if quick else 60
    profs = [ctx["profilers"][n] for n in ("upstream", "cli", "collector")
             if n in ctx["profilers"]]
    busy = [os.path.join(ctx["WL"], "bench_ratio"), str(secs), str(os.cpu_count() or 1)]
    keys = ("idle_cpu", "idle_next_cpu", "busy_cpu", "busy999_cpu", "rss", "peak", "first", "storm_named",
            "storm_burn", "storm_samples", "storm_peak")
    res = {p.name: {k: [] for k in keys} for p in profs}
    ratios = {}
    floor = {"cpu": [], "rss": [], "peak": []}
    log = ctx["log"]
    for rep in range(reps):
        order = profs[rep % len(profs):] + profs[:rep % len(profs)]
        per = {}
        for p in order:
            r = res[p.name]
            log(f"cost: {p.name} idle 20 Hz")
            s = steady(ctx, p, 20, "idle", secs, warmup, then=secs)
            r["idle_cpu"].append(s and s[0])
            r["idle_next_cpu"].append(s and s[3])
            r["rss"].append(s and s[1])
            r["peak"].append(s and s[2])
            log(f"cost: {p.name} busy 20 Hz")
            s = steady(ctx, p, 20, "busy", secs, warmup, busy)
            r["busy_cpu"].append(s and s[0])
            log(f"cost: {p.name} busy 999 Hz")
            s = steady(ctx, p, 999, "busy", secs, warmup, busy)
            r["busy999_cpu"].append(s and s[0])
            log(f"cost: {p.name} first profile")
            w = subprocess.Popen([os.path.join(ctx["WL"], "bench_ratio"), "60", "1"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                r["first"].append(p.first_profile_s(20, ctx["workdir"]))
            finally:
                w.kill()
                w.wait()
            log(f"cost: {p.name} exec storm")
            s = storm(ctx, p, storm_s, warmup)
            r["storm_named"].append(s and s[0])
            r["storm_samples"].append(s and s[1])
            r["storm_peak"].append(s and s[2])
            r["storm_burn"].append(s and s[3])
            per[p.name] = {k: r[k][-1] for k in keys}
            log(f"cost: {p.name}: " + ", ".join(f"{k} {_fmt(v)}" for k, v in per[p.name].items()))
        if "collector" in ctx["profilers"]:
            log("cost: floor collector (otlp receiver only)")
            f = Floor(ctx["profilers"]["collector"].binary).run(ctx, secs)
            floor["cpu"].append(f and f[0])
            floor["rss"].append(f and f[1])
            floor["peak"].append(f and f[2])
        up = per.get("upstream")
        for n in ("cli", "collector"):
            if up and n in per:
                for k in ("idle_cpu", "idle_next_cpu", "busy_cpu", "busy999_cpu", "rss",
                          "peak", "first",
                          "storm_peak"):
                    a, b = per[n][k], up[k]
                    if a is not None and b:
                        ratios.setdefault(f"{n}/upstream {k}", []).append(a / b)
                fr = floor["rss"][-1]
                # the CLI is no collector: it has no Go floor under it
                if n == "collector" and fr is not None and per[n]["rss"] is not None \
                        and up["rss"] is not None and up["rss"] > fr:
                    ratios.setdefault(f"{n}/upstream rss above floor", []).append(
                        (per[n]["rss"] - fr) / (up["rss"] - fr))
    labels = [("idle_cpu", "Agent CPU, idle host, 20 Hz (% of one CPU)", "{:.2f}"),
              ("idle_next_cpu", "Agent CPU, idle host, 20 Hz, the 10 s after (% of one CPU)",
               "{:.2f}"),
              ("busy_cpu", "Agent CPU, busy host, 20 Hz (% of one CPU)", "{:.2f}"),
              ("busy999_cpu", "Agent CPU, busy host, 999 Hz (% of one CPU)", "{:.2f}"),
              ("rss", "RSS steady, idle host (MiB)", "{:.1f}"),
              ("peak", "RSS peak VmHWM, idle host (MiB)", "{:.1f}"),
              ("first", "First profile after launch (s)", "{:.2f}"),
              ("storm_named", "Exec storm: children's samples with every frame named (%)",
               "{:.1f}"),
              ("storm_burn", "Exec storm: children's samples in rel_storm_burn (%)", "{:.1f}"),
              ("storm_samples", "Exec storm: children's samples", "{:.0f}"),
              ("storm_peak", "Exec storm: peak RSS (MiB)", "{:.1f}")]
    names = [p.name for p in profs]
    cols = ["", *[{"upstream": "upstream otelcol-ebpf-profiler", "cli": "otelprof record",
                   "collector": "otelprof otelcol-otelprof"}[n] for n in names]]
    rows = [[label, *[_fmt(_median(res[n][k]), f) for n in names]] for k, label, f in labels]
    fr, fc = _median(floor["rss"]), _median(floor["cpu"])
    if fr is not None:
        rows.append(["RSS above the floor collector's (MiB)",
                     *[_fmt(_median(res[n]["rss"]) - fr if _median(res[n]["rss"]) else None,
                            "{:.1f}") if n != "cli" else "n/a" for n in names]])
    notes = [f"Floor (our collector build, only an otlp receiver, nothing profiling): RSS "
             f"{_fmt(fr, '{:.1f}')} MiB steady, peak {_fmt(_median(floor['peak']), '{:.1f}')} "
             f"MiB, CPU {_fmt(fc)} % of one CPU. The upstream build has no otlp receiver: the "
             "same floor (same collector version) is subtracted from both collectors.", "",
             f"Ours/upstream, pair by pair in the same repetition (median of {reps}; below 1 "
             "means otelprof uses less):", ""]
    for k in sorted(ratios):
        notes.append(f"- {k}: {_fmt(_median(ratios[k]))}")
    notes.append("")
    notes.append(__doc__.split("\n\n")[1].replace("\n", " ") if "\n\n" in __doc__ else "")
    return {"title": "Own cost: CPU, memory, first profile, exec storm (issue 14)",
            "columns": cols, "rows": rows, "notes": "\n".join(notes),
            "raw": {"results": res, "floor": floor, "ratios": ratios}}


if __name__ == "__main__":
    # standalone: the harness's profilers and helpers, this module only
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import harness as H  # noqa: E402
    import json
    import tempfile
    profs = [p for p in (H.Upstream(), H.Cli(), H.Collector()) if not p.missing()]
    wd = tempfile.mkdtemp(prefix="cost-")
    ctx = {"BUILD": H.BUILD, "WL": H.WL, "QUICK": H.QUICK, "workdir": wd, "ROOT": H.ROOT,
           "profilers": {p.name: p for p in profs}, "bpf_snapshot": H.bpf_snapshot,
           "tree_cpu_ns": H.tree_cpu_ns, "tree_kb": H.tree_kb, "proc_tree": H.proc_tree,
           "median": H.median, "sh": H.sh, "log": H.log}
    sec = run(ctx)
    sec["module"] = "cost"
    print(H.render_capabilities([sec]))
    out = os.environ.get("COST_JSON")
    if out:
        with open(out, "w") as f:
            json.dump(sec, f, indent=1, default=str)
