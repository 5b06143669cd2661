"""Memory allocations (issue 19): what the allocator uprobes cost a malloc-heavy program.

bench_malloc (one thread: malloc of 16 B to 4 KiB, each block freed 64 allocations later)
runs for a fixed window alone, under `otelprof record --pid --alloc` at the default mean
(512 KiB) and at 64 KiB with uprobes on malloc/free (every call traps), the same with the
in-process route (libotelprof_alloc.so preloaded, OTELPROF_ALLOC_MEAN: only sampled calls
and their frees trap), under heaptrack and under valgrind --tool=massif where they are
installed. The workload waits for the recorder to attach before it starts (SIGUSR1), so its
whole window is probed. Throughput is allocations (each with its free) per second of the
workload's own CPU time: the host is shared, and the uprobe traps are spent in the workload's
own thread, so they count there. Agent CPU: the recorder's CPU time over the window. BPF time:
run time of the recorder's programs over the allocator calls they ran for. Medians of the
repetitions."""
import os
import re
import signal
import subprocess
import time

RES = re.compile(r"allocs_per_s=(\d+) allocs_per_cpu_s=(\d+)")


def bench(ctx, secs, wait=False):
    return [os.path.join(ctx["WL"], "bench_malloc"), str(secs)] + (["wait"] if wait else [])


def parse(out):
    m = RES.search(out or "")
    return (float(m.group(1)), float(m.group(2))) if m else (None, None)


def alone(ctx, secs):
    return parse(ctx["sh"](bench(ctx, secs)).stdout)


def preload_env(ctx, mean):
    return dict(os.environ, LD_PRELOAD=os.path.join(ctx["BUILD"], "libotelprof_alloc.so"),
                OTELPROF_ALLOC_MEAN=mean)


def under_otelprof(ctx, secs, mean, preload=False):
    """(allocs/s, allocs per CPU s) of the workload, agent CPU %, BPF ns per probed call."""
    w = subprocess.Popen(bench(ctx, secs, True), stdout=subprocess.PIPE, text=True,
                         env=preload_env(ctx, mean) if preload else None)
    w.stdout.readline()  # ready
    cli = os.path.join(ctx["BUILD"], "otelprof")
    p = subprocess.Popen([cli, "record", "--verbose", "--pid", str(w.pid), "--frequency", "19",
                          "--alloc=" + mean, "--output", os.devnull],
                         stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        if "recording" in line:
            break
    progs0, _ = ctx["bpf_snapshot"]([p.pid])
    cpu0, t0 = ctx["tree_cpu_ns"](p.pid), time.monotonic()
    w.send_signal(signal.SIGUSR1)
    out, _ = w.communicate(timeout=secs * 20 + 60)
    cpu1, t1 = ctx["tree_cpu_ns"](p.pid), time.monotonic()
    progs1, _ = ctx["bpf_snapshot"]([p.pid])
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=120)
    run_ns = sum(v[1] - progs0.get(k, (0, 0, 0))[1] for k, v in progs1.items())
    # uprobe route: per allocator call (malloc, free...); in-process: per sampled allocation
    calls = sum(v[2] - progs0.get(k, (0, 0, 0))[2] for k, v in progs1.items()
                if (v[3].startswith("alloc_pre_samp") if preload else
                    v[3].startswith("alloc_") and v[3] != "alloc_ret"))
    rate, cpu_rate = parse(out)
    return rate, cpu_rate, 100 * (cpu1 - cpu0) / 1e9 / (t1 - t0), (run_ns / calls if calls else None)


def under_tool(ctx, secs, cmd):
    r = ctx["sh"](cmd + bench(ctx, secs), cwd=ctx["workdir"])
    return parse(r.stdout)


def run(ctx):
    reps = 1 if ctx["QUICK"] else 3
    secs = 2 if ctx["QUICK"] else 5
    have = {t: ctx["sh"](["sh", "-c", f"command -v {t}"]).returncode == 0
            for t in ("heaptrack", "valgrind")}
    keys = ("alone", "d512", "d64", "pre_alone", "p512", "p64", "heaptrack", "massif")
    rows = {k: [] for k in keys}
    agent = {k: [] for k in ("d512", "d64", "p512", "p64")}
    bpf = {k: [] for k in ("d512", "d64", "p512", "p64")}
    for _ in range(reps):
        rows["alone"].append(alone(ctx, secs))
        rows["pre_alone"].append(parse(ctx["sh"](bench(ctx, secs),
                                                 env=preload_env(ctx, "512k")).stdout))
        for k, mean, pre in (("d512", "512k", False), ("d64", "64k", False),
                             ("p512", "512k", True), ("p64", "64k", True)):
            r, c, a, ns = under_otelprof(ctx, secs, mean, pre)
            rows[k].append((r, c))
            agent[k].append(a)
            if k in bpf:
                bpf[k].append(ns)
        if have["heaptrack"]:
            rows["heaptrack"].append(under_tool(ctx, secs, [
                "heaptrack", "-o", os.path.join(ctx["workdir"], "bench_malloc.heaptrack")]))
        if have["valgrind"]:
            rows["massif"].append(under_tool(ctx, secs, [
                "valgrind", "--tool=massif", "--massif-out-file=" +
                os.path.join(ctx["workdir"], "bench_malloc.massif")]))
        ctx["log"]("  bench_malloc allocs per CPU s: " + ", ".join(
            f"{k} {rows[k][-1][1] if rows[k] and rows[k][-1][1] else 'n/a'}" for k in keys))

    def med(vals):
        vals = [v for v in vals if v]
        return ctx["median"](vals) if vals else None

    wall = {k: med([v[0] for v in rows[k]]) for k in keys}
    cpu = {k: med([v[1] for v in rows[k]]) for k in keys}

    def slow(k):
        if not cpu.get(k) or not cpu["alone"]:
            return "n/a"
        return f"{cpu['alone'] / cpu[k]:.1f}x ({100 * (1 - cpu[k] / cpu['alone']):.0f}% fewer)"

    def fmt(v, f="{:.0f}"):
        return f.format(v) if v else "n/a"

    def agent_cell(k):
        if k == "pre_alone":
            return "-"
        return fmt(med(agent[k]), "{:.1f}%") if k in agent else "n/a (in-process)"

    def bpf_cell(k):
        return fmt(med(bpf[k])) if k in bpf else "-"

    names = {"alone": "alone", "d512": "otelprof record --alloc (mean 512 KiB)",
             "d64": "otelprof record --alloc=64k",
             "pre_alone": "libotelprof_alloc.so preloaded, no recorder",
             "p512": "preloaded + otelprof record --alloc (mean 512 KiB)",
             "p64": "preloaded (mean 64 KiB) + otelprof record --alloc",
             "heaptrack": "heaptrack (every call)",
             "massif": "valgrind --tool=massif"}
    out = []
    for k in keys:
        if k in ("heaptrack", "massif") and not have["heaptrack" if k == "heaptrack" else "valgrind"]:
            out.append([names[k], "not installed", "", "", "", ""])
            continue
        out.append([names[k], fmt(cpu[k]), fmt(wall[k]), "-" if k == "alone" else slow(k),
                    "-" if k == "alone" else agent_cell(k), bpf_cell(k)])
    return {
        "title": "Memory allocations: malloc-heavy workload (uprobes on malloc/free)",
        "columns": ["", "allocs per CPU s", "allocs/s (wall)", "slowdown (CPU)", "agent CPU",
                    "BPF ns per probed call (preloaded: per sample)"],
        "rows": out,
        "notes": __doc__.split("\n\n", 1)[1].replace("\n", " ") +
        f" {reps} repetition(s) of {secs} s each.",
    }
