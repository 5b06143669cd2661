"""Off-CPU profiling (issue 16): what it costs a context-switch-heavy program.

bench_pingpong (two threads passing a byte over two pipes, both pinned to one CPU so that
every round trip is two context switches on it) runs for a fixed window alone, under
`otelprof record --pid` without off-CPU, with --off-cpu (every interval recorded, the CLI's
default) and --off-cpu=0.01, and under `perf record -e sched:sched_switch -g` (perf's way to
see where threads switch out, every event with its stack). Throughput is its round trips per
second over its whole run (the recorder attaches within its first half second, so the
slowdown is understated by up to a tenth); the slowdown is against the runs alone of the same
repetition. BPF time per switch
event: the run time of every BPF program of the recorder over the runs of on_sched_switch
(kernel.bpf_stats_enabled). Medians of the repetitions."""
import os
import re
import signal
import subprocess
import time

ROUNDS = re.compile(r"rounds_per_s=(\d+)")


def pingpong(ctx, secs):
    return ["taskset", "-c", "1", os.path.join(ctx["WL"], "bench_pingpong"), str(secs)]


def alone(ctx, secs):
    r = ctx["sh"](pingpong(ctx, secs))
    m = ROUNDS.search(r.stdout)
    return float(m.group(1)) if m else None


def under_otelprof(ctx, secs, extra):
    """Round trips/s of the workload while otelprof records it, and BPF ns per switch."""
    w = subprocess.Popen(pingpong(ctx, secs), stdout=subprocess.PIPE, text=True)
    time.sleep(0.1)
    cli = os.path.join(ctx["BUILD"], "otelprof")
    p = subprocess.Popen([cli, "record", "--verbose", "--pid", str(w.pid), "--frequency", "99",
                          "--duration", "0", "--output", os.devnull] + extra,
                         stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        if "recording" in line:
            break
    progs0, _ = ctx["bpf_snapshot"]([p.pid])
    out, _ = w.communicate(timeout=secs + 60)
    progs1, _ = ctx["bpf_snapshot"]([p.pid])
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=120)
    run_ns = sum(v[1] - progs0.get(k, (0, 0, 0))[1] for k, v in progs1.items())
    switches = sum(v[2] - progs0.get(k, (0, 0, 0))[2] for k, v in progs1.items()
                   if v[3] == "on_sched_switch")
    m = ROUNDS.search(out)
    return (float(m.group(1)) if m else None), (run_ns / switches if switches else None)


def under_perf(ctx, secs, workdir):
    w = subprocess.Popen(pingpong(ctx, secs), stdout=subprocess.PIPE, text=True)
    time.sleep(0.1)
    data = os.path.join(workdir, "pingpong.perf.data")
    p = subprocess.Popen(["perf", "record", "-q", "-e", "sched:sched_switch", "-g", "-p",
                          str(w.pid), "-o", data], stderr=subprocess.DEVNULL)
    out, _ = w.communicate(timeout=secs + 60)
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=120)
    m = ROUNDS.search(out)
    return float(m.group(1)) if m else None


def run(ctx):
    reps = 1 if ctx["QUICK"] else 3
    secs = 3 if ctx["QUICK"] else 5
    rows = {k: [] for k in ("alone", "cpu", "off1", "off001", "perf")}
    bpf = {k: [] for k in ("off1", "off001")}
    have_perf = ctx["sh"](["sh", "-c", "command -v perf"]).returncode == 0
    for _ in range(reps):
        rows["alone"].append(alone(ctx, secs))
        r, _ = under_otelprof(ctx, secs, [])
        rows["cpu"].append(r)
        r, ns = under_otelprof(ctx, secs, ["--off-cpu"])
        rows["off1"].append(r)
        bpf["off1"].append(ns)
        r, ns = under_otelprof(ctx, secs, ["--off-cpu=0.01"])
        rows["off001"].append(r)
        bpf["off001"].append(ns)
        if have_perf:
            rows["perf"].append(under_perf(ctx, secs, ctx["workdir"]))
        ctx["log"](f"  pingpong round trips/s: alone {rows['alone'][-1]}, otelprof cpu only "
                   f"{rows['cpu'][-1]}, off-cpu p=1 {rows['off1'][-1]} ({bpf['off1'][-1]} ns/switch), "
                   f"p=0.01 {rows['off001'][-1]}, perf {rows['perf'][-1] if have_perf else 'n/a'}")
    med = {k: ctx["median"]([x for x in v if x]) if any(v) else None for k, v in rows.items()}
    base = med["alone"]

    def slow(k):
        return f"{100 * (1 - med[k] / base):.1f}%" if med.get(k) and base else "n/a"

    def fmt(v):
        return f"{v:.0f}" if v else "n/a"

    bmed = {k: ctx["median"]([x for x in v if x]) if any(v) else None for k, v in bpf.items()}
    return {
        "title": "Off-CPU: context-switch-heavy workload (pipe ping-pong, one CPU)",
        "columns": ["", "round trips/s", "slowdown", "BPF time per switch (ns)"],
        "rows": [
            ["alone", fmt(base), "-", "-"],
            ["otelprof record, CPU only (99 Hz)", fmt(med["cpu"]), slow("cpu"), "-"],
            ["otelprof record --off-cpu (every interval)", fmt(med["off1"]), slow("off1"),
             fmt(bmed["off1"])],
            ["otelprof record --off-cpu=0.01", fmt(med["off001"]), slow("off001"),
             fmt(bmed["off001"])],
            ["perf record -e sched:sched_switch -g", fmt(med["perf"]), slow("perf"), "n/a (no BPF)"],
        ],
        "notes": __doc__.split("\n\n", 1)[1].replace("\n", " ") +
        f" {reps} repetition(s) of {secs} s each.",
    }
