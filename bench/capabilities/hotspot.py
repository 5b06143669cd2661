"""Java (HotSpot) frames (issue 21): what a Java stack costs in BPF, and what each profiler names.

tests/runtime/hotspot/HotMethods.java (heavy() and light() doing 2:1 work, called through 20
recursive down() calls from an interpreted main, no JVM flag) runs under each JDK of the
machine; after 3 s of JIT warm-up, `otelprof record --pid` samples it at 499 Hz. BPF time per
JVM sample: the run time of every BPF program of the recorder (kernel.bpf_stats_enabled) over
the samples it recorded of the JVM, i.e. the whole walk of a ~35-frame Java+native stack
(interpreted, compiled and stub frames, then the JVM's and libc's native frames by CFI); the
early exits for other processes' events are included, so it is an upper bound. Whole system:
the run time over the events of the perf_event entry programs, every process walked, for
otelprof and the upstream profiler alike (the same program started the same way; its
receiver's default tracers, file exporter, 499 Hz), on a shared machine whose other load
varies between runs. The upstream profiler's names and shares come from its own output. Shares: among the
main thread's samples that hold heavy or light; complete: the share of the main thread's
samples that hold HotMethods.main and end at the thread start (clone3/start_thread).
Medians of the repetitions."""
import glob
import os
import re
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
    names (leaf first), at_start and count."""
    n = hv = lt = ok = 0
    for s in samples:
        names, c = s["names"], s["count"]
        n += c
        if HEAVY in names:
            hv += c
        elif LIGHT in names:
            lt += c
        if MAIN in names and s["at_start"]:
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
        d["names"] = [java_name(f.get("fn", "")) for f in d.get("frames") or []]
        last = (d.get("frames") or [{}])[-1]
        # the thread start: named (ours), or an unsymbolized libc frame (the upstream profiler
        # leaves native frames to a backend)
        d["at_start"] = d["names"][-1:] in (["clone3"], ["clone"], ["start_thread"]) or (
            not last.get("fn") and os.path.basename(last.get("file", "")).startswith("libc.so"))
        out.append(d)
    return out


JAVA_SIG = re.compile(r"^(?:[\w.$\[\]<>]+ )?([\w.$<>]+)\(")


def java_name(fn):
    """"long HotMethods.heavy(long, int)" (the upstream profiler's) -> "HotMethods.heavy"."""
    m = JAVA_SIG.match(fn)
    return m.group(1) if m else fn


def main_thread(samples, pid):
    """The samples of the thread running the Java main (the launcher names it "java")."""
    return [s for s in samples if s.get("pid") == pid and s.get("comm") == "java"]


def bpf_ns(progs0, progs1, per=None):
    """BPF run time between two snapshots, over @per or the runs of the perf_event entry
    programs (tail-called programs count no runs of their own)."""
    run_ns = sum(v[1] - progs0.get(k, (0, 0, 0))[1] for k, v in progs1.items())
    if per is None:
        per = sum(v[2] - progs0.get(k, (0, 0, 0))[2] for k, v in progs1.items()
                  if v[0] == "perf_event")
    return run_ns / per if per else None


def under_otelprof(ctx, home, classes, secs, workdir, whole=False):
    """Summary of the main thread's samples and BPF ns: per sample of the JVM (--pid: the
    early exits of other processes' events included, so an upper bound), or per event of the
    whole system (whole)."""
    w = start_java(home, classes, secs + WARMUP_S + 60)  # killed when done
    time.sleep(WARMUP_S)
    out = os.path.join(workdir, "hotspot-otelprof.pb.gz")
    cli = os.path.join(ctx["BUILD"], "otelprof")
    p = subprocess.Popen([cli, "record", "--verbose", "--frequency", "499", "--duration", "0",
                          "--output", out] + ([] if whole else ["--pid", str(w.pid)]),
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
    all_samples = decoded(ctx, "pprof", out)
    samples = main_thread(all_samples, w.pid)
    if whole:
        return summarize(samples), bpf_ns(progs0, progs1)
    n = sum(s["count"] for s in all_samples if s.get("pid") == w.pid)
    return summarize(samples), bpf_ns(progs0, progs1, n)


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
    w = start_java(home, classes, secs + WARMUP_S + 60)  # killed when done
    time.sleep(WARMUP_S)
    progs0, _ = ctx["bpf_snapshot"]([up.proc.pid])
    time.sleep(secs)
    progs1, _ = ctx["bpf_snapshot"]([up.proc.pid])
    w.kill()
    w.wait()
    time.sleep(2)  # its last report
    up.stop()
    main = main_thread(decoded(ctx, "otlp-json", out), w.pid)
    names = sorted({n for s in main for n in s["names"] if n.startswith("HotMethods")})
    return summarize(main), names, bpf_ns(progs0, progs1)


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
            ours, ns, wns, theirs = [], [], [], []
            for _ in range(reps):
                s, b = under_otelprof(ctx, home, classes, secs, ctx["workdir"])
                ours.append(s)
                ns.append(b)
                _, b2 = under_otelprof(ctx, home, classes, secs, ctx["workdir"], whole=True)
                wns.append(b2)
                u = under_upstream(ctx, home, classes, secs, ctx["workdir"])
                theirs.append(u)
                ctx["log"](f"  JDK {ver}: otelprof heavy/light/complete/n {s}, {b} ns/JVM "
                           f"sample, {b2} ns/event whole system; upstream {u}")
            med = ctx["median"]

            def fmt(vals, i):
                v = [x[i] for x in vals if x and x[i] is not None]
                return f"{med(v):.1f}" if v else "n/a"

            def ns_fmt(v):
                v = [x for x in v if x]
                return f"{med(v):.0f}" if v else "n/a"

            rows.append([f"JDK {ver}: otelprof", ns_fmt(ns), ns_fmt(wns), fmt(ours, 0),
                         fmt(ours, 1), fmt(ours, 2),
                         "HotMethods.heavy, .light, .down, .main, .round"])
            ut = [x[0] for x in theirs if x]
            unames = next((x[1] for x in theirs if x), None)
            rows.append([f"JDK {ver}: upstream", "n/a (whole system only)",
                         ns_fmt([x[2] for x in theirs if x]), fmt(ut, 0), fmt(ut, 1),
                         fmt(ut, 2), ", ".join(unames) if unames else "not run"])
    return {
        "title": "Java (HotSpot): BPF time per Java sample, names and shares vs the upstream "
                 "profiler",
        "columns": ["", "BPF ns per JVM sample (--pid)", "BPF ns per event (whole system)",
                    "heavy % (want 66.7)", "light % (want 33.3)",
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
