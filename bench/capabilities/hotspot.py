"""Java (HotSpot) frames (issue 21): what a Java stack costs in BPF, and what each profiler names.

tests/runtime/hotspot/HotMethods.java (heavy() and light() doing 2:1 work, called through 20
recursive down() calls from an interpreted main, no JVM flag) runs under each JDK of the
machine; after 3 s of JIT warm-up, `otelprof record --pid` samples it at 499 Hz. BPF time per
sample: the run time of every BPF program of the recorder over the runs of its perf_event
program (kernel.bpf_stats_enabled), i.e. the whole walk of a ~35-frame Java+native stack
(interpreted, compiled and stub frames, then the JVM's and libc's native frames by CFI). The
same program, started the same way, under the upstream profiler (its receiver's default
tracers, file exporter, 499 Hz) gives its names and shares side by side. Shares: among the
main thread's samples that hold heavy or light; complete: the share of the main thread's
samples that hold HotMethods.main and end at the thread start (clone3/start_thread).
Medians of the repetitions."""
import glob
import os
import signal
import subprocess
import tempfile
import time

JDKS = [("17", "/usr/lib/jvm/java-17-openjdk-amd64"), ("25", "/usr/lib/jvm/temurin-25-jdk-amd64")]
HEAVY, LIGHT, MAIN = "HotMethods.heavy", "HotMethods.light", "HotMethods.main"
WARMUP_S = 3
DEPTH = "20"


def compile_java(ctx, out):
    src = os.path.join(ctx["ROOT"], "tests", "runtime", "hotspot", "HotMethods.java")
    r = ctx["sh"]([os.path.join(JDKS[0][1], "bin", "javac"), "-d", out, src])
    if r.returncode != 0:
        raise RuntimeError("javac: " + r.stderr[-300:])


def start_java(home, classes, secs):
    return subprocess.Popen([os.path.join(home, "bin", "java"), "-cp", classes, "HotMethods",
                             str(secs), DEPTH], stdout=subprocess.DEVNULL)


def summarize(samples):
    """(shares of heavy/light in %, complete %, n) over the main thread's samples: dicts with
    names (leaf first) and count."""
    n = hv = lt = ok = 0
    for s in samples:
        names, c = s["names"], s["count"]
        n += c
        if HEAVY in names:
            hv += c
        elif LIGHT in names:
            lt += c
        if names and MAIN in names and names[-1] in ("clone3", "clone", "start_thread"):
            ok += c
    both = hv + lt
    return ((100 * hv / both if both else None), (100 * lt / both if both else None),
            (100 * ok / n if n else None), n)


def decoded(ctx, fmt, path):
    """Samples (pid, comm, count, names leaf first) of a profile, by bench/decode."""
    import json
    r = subprocess.run([os.path.join(ctx["BUILD"], "bench", "decode"), fmt, path],
                       capture_output=True, text=True)
    out = []
    for line in r.stdout.splitlines():
        d = json.loads(line)
        if "summary" in d:
            continue
        d["names"] = [f.get("fn", "") for f in d.get("frames") or []]
        out.append(d)
    return out


def main_thread(samples, pid):
    """The samples of the thread running the Java main (the launcher names it "java")."""
    return [s for s in samples if s.get("pid") == pid and s.get("comm") == "java"]


def under_otelprof(ctx, home, classes, secs, workdir):
    w = start_java(home, classes, secs + WARMUP_S + 5)
    time.sleep(WARMUP_S)
    out = os.path.join(workdir, "hotspot-otelprof.pb.gz")
    cli = os.path.join(ctx["BUILD"], "otelprof")
    p = subprocess.Popen([cli, "record", "--verbose", "--pid", str(w.pid), "--frequency", "499",
                          "--duration", "0", "--output", out],
                         stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        if "recording" in line:
            break
    progs0, _ = ctx["bpf_snapshot"]([p.pid])
    time.sleep(secs)
    progs1, _ = ctx["bpf_snapshot"]([p.pid])
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=120)
    w.kill()
    w.wait()
    run_ns = sum(v[1] - progs0.get(k, (0, 0, 0))[1] for k, v in progs1.items())
    runs = sum(v[2] - progs0.get(k, (0, 0, 0))[2] for k, v in progs1.items()
               if v[0] == "perf_event" and not v[3].startswith("unwind_"))
    samples = main_thread(decoded(ctx, "pprof", out), w.pid)
    return summarize(samples), (run_ns / runs if runs else None)


def under_upstream(ctx, home, classes, secs, workdir):
    up = ctx["profilers"].get("upstream")
    if up is None or up.missing():
        return None
    out = os.path.join(workdir, "hotspot-upstream.out")
    for f in glob.glob(out + "*"):
        os.unlink(f)
    up.launch(499, out, interval=1.0)
    if up.wait_ready() is None:
        up.stop()
        return None
    w = start_java(home, classes, secs + WARMUP_S + 5)
    time.sleep(WARMUP_S + secs)
    w.kill()
    w.wait()
    time.sleep(2)  # its last report
    up.stop()
    main = main_thread(decoded(ctx, "otlp-json", out), w.pid)
    names = sorted({n for s in main for n in s["names"] if n.startswith("HotMethods")})
    return summarize(main), names


def run(ctx):
    reps = 1 if ctx["QUICK"] else 3
    secs = 4 if ctx["QUICK"] else 8
    rows = []
    with tempfile.TemporaryDirectory() as classes:
        compile_java(ctx, classes)
        for ver, home in JDKS:
            if not os.access(os.path.join(home, "bin", "java"), os.X_OK):
                rows.append([f"JDK {ver}", "not installed", "", "", "", ""])
                continue
            ours, ns, theirs = [], [], []
            for _ in range(reps):
                s, b = under_otelprof(ctx, home, classes, secs, ctx["workdir"])
                ours.append(s)
                ns.append(b)
                u = under_upstream(ctx, home, classes, secs, ctx["workdir"])
                theirs.append(u)
                ctx["log"](f"  JDK {ver}: otelprof heavy/light/complete/n {s}, {b} ns/sample; "
                           f"upstream {u}")
            med = ctx["median"]

            def fmt(vals, i):
                v = [x[i] for x in vals if x and x[i] is not None]
                return f"{med(v):.1f}" if v else "n/a"

            nsv = [x for x in ns if x]
            rows.append([f"JDK {ver}: otelprof", f"{med(nsv):.0f}" if nsv else "n/a",
                         fmt(ours, 0), fmt(ours, 1), fmt(ours, 2),
                         "HotMethods.heavy, .light, .down, .main, .round"])
            ut = [x[0] for x in theirs if x]
            unames = next((x[1] for x in theirs if x), None)
            rows.append([f"JDK {ver}: upstream", "n/a (not measured)", fmt(ut, 0), fmt(ut, 1),
                         fmt(ut, 2), ", ".join(unames) if unames else "not run"])
    return {
        "title": "Java (HotSpot): BPF time per Java sample, names and shares vs the upstream "
                 "profiler",
        "columns": ["", "BPF ns/sample", "heavy % (want 66.7)", "light % (want 33.3)",
                    "complete stacks %", "Java names"],
        "rows": rows,
        "notes": __doc__.split("\n\n", 1)[1].replace("\n", " ") +
        f" {reps} repetition(s) of {secs} s each.",
    }


if __name__ == "__main__":
    # standalone: python3 bench/capabilities/hotspot.py (root; QUICK=1 for one repetition)
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    import harness
    wd = tempfile.mkdtemp()
    profs = [harness.Upstream()]
    ctx = {"BUILD": harness.BUILD, "WL": harness.WL, "QUICK": harness.QUICK, "workdir": wd,
           "ROOT": harness.ROOT, "profilers": {p.name: p for p in profs},
           "bpf_snapshot": harness.bpf_snapshot, "median": harness.median, "sh": harness.sh,
           "log": harness.log}
    sec = run(ctx)
    print("| " + " | ".join(sec["columns"]) + " |")
    for r in sec["rows"]:
        print("| " + " | ".join(str(c) for c in r) + " |")
