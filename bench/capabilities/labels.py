"""Trace correlation (issue 17): what reading labels costs the BPF side.

The Go labels workload (tests/runtime/golabels: a goroutine under pprof labels three quarters
of the time) is recorded by `otelprof record --pid` at 999 Hz, with labels read and with
--no-labels, alternately; BPF time per sample is the run time of every program of the
recorder over the runs of its perf_event programs (kernel.bpf_stats_enabled), measured over
the same window of each session. Medians of the repetitions."""
import os
import signal
import subprocess
import time


def session(ctx, pid, extra, window):
    cli = os.path.join(ctx["BUILD"], "otelprof")
    p = subprocess.Popen([cli, "record", "--verbose", "--pid", str(pid), "--frequency", "999",
                          "--duration", "0", "--output", os.devnull] + extra,
                         stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        if "recording" in line:
            break
    time.sleep(1.0)  # tables loaded, labels map filled
    progs0, _ = ctx["bpf_snapshot"]([p.pid])
    time.sleep(window)
    progs1, _ = ctx["bpf_snapshot"]([p.pid])
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=60)
    run_ns = sum(v[1] - progs0.get(k, (0, 0, 0))[1] for k, v in progs1.items())
    samples = sum(v[2] - progs0.get(k, (0, 0, 0))[2] for k, v in progs1.items()
                  if v[3] == "on_cpu_sample")
    return run_ns / samples if samples else None, samples


def run(ctx):
    work = os.path.join(ctx["workdir"], "golabels")
    src = os.path.join(ctx["ROOT"], "tests", "runtime", "golabels")
    r = ctx["sh"](["go", "build", "-o", work, "."], cwd=src)
    if r.returncode != 0:
        return {"title": "Labels: BPF cost", "error": "go build failed: " + r.stderr[-300:]}
    reps = 1 if ctx["QUICK"] else 3
    window = 2 if ctx["QUICK"] else 5
    on, off = [], []
    w = subprocess.Popen([work, "0"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        for _ in range(reps):
            ns, n = session(ctx, w.pid, [], window)
            on.append(ns)
            ctx["log"](f"  labels on: {ns:.0f} ns/sample over {n} samples")
            ns, n = session(ctx, w.pid, ["--no-labels"], window)
            off.append(ns)
            ctx["log"](f"  labels off: {ns:.0f} ns/sample over {n} samples")
    finally:
        w.kill()
        w.wait()
    m_on, m_off = ctx["median"](on), ctx["median"](off)
    return {
        "title": "Labels: BPF time per sample, Go program under pprof labels, 999 Hz",
        "columns": ["", "labels read", "--no-labels", "ratio"],
        "rows": [["BPF time per sample (ns)", f"{m_on:.0f}", f"{m_off:.0f}",
                  f"{m_on / m_off:.2f}x" if m_off else "n/a"]],
        "notes": __doc__.split("\n\n", 1)[1].replace("\n", " ") +
        f" {reps} repetition(s) of {window} s each.",
    }
