"""CPython frames (issue 15): what naming Python frames costs, and what we name vs the upstream
profiler on the same workload.

BPF time per sample: the run time of every BPF program of `otelprof record --pid` over the
runs of on_cpu_sample (kernel.bpf_stats_enabled), for a Python stack 50 frames deep
(tests/runtime/python/work.py deep: <module>, deep_loop, deep x 49, leaf; Python 3.12, whose
eval loop runs them all in one native frame, and 3.10, with one native eval-loop frame per
Python frame and one _PyEval_Vector frame between two Python frames, so its trace fills its
128 user slots at ~42 Python frames) against bench_deep at depth 50 (native frames, CFI). Agent CPU: CPU time of the
recorder (99 Hz) while one Python 3.12 process is busy, per second of wall time. Side by side:
work.py ab (work_a does twice work_b's work through the shared leaf) under our CLI and under
the upstream profiler's collector (file exporter): whether each names work_a, work_b, leaf and
<module>, and work_a's share of work_a + work_b (the truth: 66.7%). Medians of the
repetitions."""
import glob
import json
import os
import signal
import subprocess
import time


def python(ver):
    m = sorted(glob.glob(f"/root/.pyenv/versions/{ver}.*/bin/python{ver}"))
    return m[0] if m else None


def work(ctx, py, mode, secs):
    script = os.path.join(ctx["ROOT"], "tests", "runtime", "python", "work.py")
    p = subprocess.Popen([py, script, mode, str(secs)], stdout=subprocess.PIPE, text=True)
    p.stdout.readline()  # "ready PID"
    return p


def record_stats(ctx, cmd, secs):
    """BPF ns per sample and recorder CPU s per s while @cmd runs for @secs."""
    w = subprocess.Popen(cmd, stdout=subprocess.DEVNULL) if isinstance(cmd, list) else cmd
    time.sleep(0.3)
    cli = os.path.join(ctx["BUILD"], "otelprof")
    p = subprocess.Popen([cli, "record", "--verbose", "--pid", str(w.pid), "--frequency", "99",
                          "--duration", "0", "--output", os.devnull],
                         stderr=subprocess.PIPE, text=True)
    try:
        for line in p.stderr:
            if "recording" in line:
                break
        progs0, _ = ctx["bpf_snapshot"]([p.pid])
        cpu0, t0 = ctx["tree_cpu_ns"](p.pid), time.time()
        time.sleep(secs)
        progs1, _ = ctx["bpf_snapshot"]([p.pid])
        cpu1, t1 = ctx["tree_cpu_ns"](p.pid), time.time()
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        w.kill()
        w.wait()
    run_ns = sum(v[1] - progs0.get(k, (0, 0, 0))[1] for k, v in progs1.items())
    samples = sum(v[2] - progs0.get(k, (0, 0, 0))[2] for k, v in progs1.items()
                  if v[3] == "on_cpu_sample")
    return (run_ns / samples if samples else None), (cpu1 - cpu0) / 1e9 / (t1 - t0)


def decode(ctx, fmt, path):
    """Samples of a profile file as the harness's decoder gives them (bench/decode)."""
    r = ctx["sh"]([os.path.join(ctx["BUILD"], "bench", "decode"), fmt, path])
    out = []
    for line in (r.stdout or "").splitlines():
        d = json.loads(line)
        if "summary" not in d:
            d["names"] = [f.get("fn", "") for f in d.get("frames") or []]
            out.append(d)
    return out


def shares(samples, pid=None):
    names = ("work_a", "work_b", "leaf", "<module>")
    seen = {n: 0 for n in names}
    n = 0
    for s in samples:
        if pid is not None and s.get("pid") != pid:
            continue
        c = s.get("count") or 1
        n += c
        for k in names:
            if k in (s.get("names") or []):
                seen[k] += c
    a, b = seen["work_a"], seen["work_b"]
    return n, seen, (100.0 * a / (a + b) if a + b else None)


def ours_ab(ctx, py, secs):
    w = work(ctx, py, "ab", secs + 30)
    out = os.path.join(ctx["workdir"], "python-ab.otlp")
    r = ctx["sh"]([os.path.join(ctx["BUILD"], "otelprof"), "record", "--pid", str(w.pid),
                   "--frequency", "99", "--duration", str(secs), "--format", "otlp",
                   "--output", out])
    w.kill()
    w.wait()
    if r.returncode != 0:
        return None
    return shares(decode(ctx, "otlp", out), w.pid)


def upstream_ab(ctx, py, secs):
    up = ctx["profilers"].get("upstream")
    if up is None or up.missing():
        return None
    out = os.path.join(ctx["workdir"], "python-upstream.json")
    for f in glob.glob(out + "*"):
        os.unlink(f)
    # the upstream profiler drops the samples of processes that start while it is still
    # syncing those that exist: the workload starts once it is settled
    up.launch(99, out, interval=1.0)
    w = None
    try:
        up.wait_ready()
        time.sleep(3)
        w = work(ctx, py, "ab", secs + 90)
        time.sleep(secs + 2)
    finally:
        up.stop()
        if w is not None:
            w.kill()
            w.wait()
    samples, _ = up.read()
    return shares(samples, w.pid)


def run(ctx):
    reps = 1 if ctx["QUICK"] else 3
    secs = 4 if ctx["QUICK"] else 8
    py312, py310 = python("3.12"), python("3.10")
    if not py312:
        return {"title": "Python", "error": "no Python 3.12 under /root/.pyenv/versions"}
    ctx["sh"](["sysctl", "-q", "kernel.bpf_stats_enabled=1"])
    bpf = {"py312": [], "py310": [], "native": []}
    cpu = []
    for _ in range(reps):
        ns, c = record_stats(ctx, work(ctx, py312, "deep", secs + 30), secs)
        bpf["py312"].append(ns)
        cpu.append(c)
        if py310:
            ns, _ = record_stats(ctx, work(ctx, py310, "deep", secs + 30), secs)
            bpf["py310"].append(ns)
        ns, _ = record_stats(ctx, [os.path.join(ctx["WL"], "bench_deep"), str(secs + 30), "50"],
                             secs)
        bpf["native"].append(ns)
        ctx["log"](f"  python: BPF ns/sample 3.12 {bpf['py312'][-1]}, 3.10 "
                   f"{bpf['py310'][-1] if py310 else 'n/a'}, native {bpf['native'][-1]}; "
                   f"agent CPU {cpu[-1]:.4f} s/s")
    med = {k: ctx["median"]([x for x in v if x]) if any(v) else None for k, v in bpf.items()}
    ours = ours_ab(ctx, py312, secs)
    theirs = upstream_ab(ctx, py312, secs)

    def fmt(v, f="{:.0f}"):
        return f.format(v) if v is not None else "n/a"

    def side(r):
        if r is None:
            return ["n/a", "n/a", "n/a"]
        n, seen, share = r
        found = ", ".join(k for k, v in seen.items() if v) or "none"
        return [str(n), found, fmt(share, "{:.1f}%")]

    return {
        "title": "Python (CPython frames in BPF)",
        "columns": ["", "value", "", ""],
        "rows": [
            ["BPF time per sample, 50-deep Python 3.12 stack (ns)", fmt(med["py312"]), "", ""],
            ["BPF time per sample, 50-deep Python 3.10 stack (ns)", fmt(med["py310"]), "", ""],
            ["BPF time per sample, 50-deep native stack (ns)", fmt(med["native"]), "", ""],
            ["agent CPU, one busy Python 3.12 process, 99 Hz (ms CPU per s)",
             fmt(1000 * ctx["median"](cpu), "{:.2f}"), "", ""],
            ["work.py ab: samples / names found / work_a share (truth 66.7%)", "", "", ""],
            ["otelprof record (OTLP)"] + side(ours),
            ["upstream otelcol-ebpf-profiler"] + side(theirs),
        ],
        "notes": __doc__.split("\n\n", 1)[1].replace("\n", " ") +
        f" {reps} repetition(s) of {secs} s each.",
    }
