#!/usr/bin/env python3
"""Side-by-side benchmark of otelprof against perf and the upstream OpenTelemetry eBPF profiler.

Run by bench/run.sh (`make bench`, QUICK=1 for a short run). Writes bench/results/latest.json
and bench/results/latest.md. Every figure comes from this run; each is a median over the
repetitions, and each ours/theirs ratio is taken pair by pair inside one repetition.

Profilers (a profiler whose binary is missing is skipped and its cells say so):
  perf      perf record -a -e cpu-clock --call-graph dwarf (Debian linux-perf)
  upstream  otelcol-ebpf-profiler (ocb build of go.opentelemetry.io/ebpf-profiler, receiver
            `profiling`, file exporter) from bench/build-upstream.sh
  cli       $BUILD/otelprof record (pprof)
  collector $BUILD/otelcol-otelprof (receiver `ebpfprofiler`, file exporter)
"""
import bisect
import glob
import json
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD") or os.path.join(ROOT, "build")
QUICK = os.environ.get("QUICK", "") not in ("", "0")
WL = os.path.join(BUILD, "workloads")
BB = os.path.join(BUILD, "bench")
RESULTS = os.path.join(ROOT, "bench", "results")
NCPU = os.cpu_count() or 1

# run plan: (repetitions, seconds per measured window)
REPS = 1 if QUICK else 3
T_BUSY = 3 if QUICK else 6
T_IDLE = 3 if QUICK else 10
T_EXTRA = 2 if QUICK else 4
SLEEPERS = 300
DEEP = 100
THREADS = 16
# Seconds between "ready" and the measured window. The upstream profiler drops the samples of
# processes that start in its first few seconds after startup at 999 Hz (it is still syncing
# the processes that exist), so the window starts once every profiler is in its steady state.
WARMUP = 2.0 if QUICK else 8.0
HOT = ("hot_a", "hot_b", "hot_c")

T0 = time.time()


def log(msg):
    print(f"[bench {time.time() - T0:6.1f}s] {msg}", flush=True)


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=isinstance(cmd, str), capture_output=True, text=True, **kw)


# --------------------------------------------------------------------------- process metrics
def tasks_cpu_ns(pid):
    """On-CPU nanoseconds of every live thread of pid (schedstat), plus reaped children."""
    total = 0
    for st in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(st) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        # cutime + cstime (fields 16, 17): children waited for
        total += (int(fields[13]) + int(fields[14])) * 10_000_000
    except (OSError, ValueError, IndexError):
        pass
    return total


def proc_tree(pid):
    """pid and all its descendants."""
    kids = {}
    for st in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(st) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            kids.setdefault(int(fields[1]), []).append(int(st.split("/")[2]))
        except (OSError, ValueError, IndexError):
            pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def status_kb(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_cpu_ns(pid):
    return sum(tasks_cpu_ns(p) for p in proc_tree(pid))


_trees = {}


def _tree_cached(pid, max_age=2.0):
    """proc_tree(pid), listed again at most every max_age seconds. The RSS samples (every
    0.25 s) scanned all of /proc each time: on the idle host (300 sleepers) that made the
    bench's own Python process the busiest on the machine, and the agents measured profiled
    it (at 999 Hz most of our symbolizer's work was naming its interpreter's frames)."""
    now = time.monotonic()
    t = _trees.get(pid)
    if t is None or now - t[0] > max_age:
        t = _trees[pid] = (now, proc_tree(pid))
    return t[1]


def tree_kb(pid, key):
    return sum(status_kb(p, key) for p in _tree_cached(pid))


def bpf_ids(pids):
    """BPF program and map ids held by pids, from their file descriptors (/proc/PID/fdinfo:
    prog fds, map fds, and links, which name their program)."""
    progs, maps = set(), set()
    for pid in pids:
        for fd in glob.glob(f"/proc/{pid}/fd/*"):
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if not target.startswith("anon_inode:bpf"):
                continue
            try:
                with open(fd.replace("/fd/", "/fdinfo/")) as f:
                    for line in f:
                        k, _, v = line.partition(":")
                        if k == "prog_id":
                            progs.add(int(v))
                        elif k == "map_id":
                            maps.add(int(v))
            except (OSError, ValueError):
                pass
    return progs, maps


def bpf_snapshot(pids):
    """Programs and maps held by any of pids: {prog id: (type, run_time_ns, run_cnt, name)},
    and the bytes_memlock of their maps (those held directly and those their programs use)."""
    prog_ids, map_ids = bpf_ids(pids)
    progs, memlock = {}, 0
    if not prog_ids and not map_ids:
        return progs, memlock
    r = sh(["bpftool", "prog", "show", "--json"])
    try:
        for p in json.loads(r.stdout or "[]"):
            if p["id"] in prog_ids:
                progs[p["id"]] = (p.get("type"), p.get("run_time_ns", 0), p.get("run_cnt", 0),
                                  p.get("name", ""))
                map_ids.update(p.get("map_ids", []))
    except ValueError:
        pass
    r = sh(["bpftool", "map", "show", "--json"])
    try:
        for m in json.loads(r.stdout or "[]"):
            if m["id"] in map_ids:
                memlock += m.get("bytes_memlock", 0)
    except ValueError:
        pass
    return progs, memlock


# --------------------------------------------------------------------------- symbolization
_symtabs = {}


def symtab(path):
    """Sorted (start, end, name) of a workload binary's functions, from nm."""
    if path not in _symtabs:
        rows = []
        r = sh(["nm", "-S", "--defined-only", path])
        for line in r.stdout.splitlines():
            parts = line.split()
            if len(parts) == 4 and parts[2] in "tTwW":
                start, size = int(parts[0], 16), int(parts[1], 16)
                rows.append((start, start + max(size, 1), parts[3]))
        rows.sort()
        _symtabs[path] = ([r[0] for r in rows], rows)
    return _symtabs[path]


def workload_binary(file):
    """The benchmark workload binary a mapping file name refers to, if any."""
    if not file:
        return None
    base = os.path.basename(file)
    cand = os.path.join(WL, base)
    if base.startswith("bench_") and os.path.exists(cand):
        return cand
    return None


def frame_name(fr):
    """Function name of a decoded frame; symbolizes workload frames the profiler left as
    addresses (the upstream profiler sends native frames unsymbolized, for a backend to do)."""
    if fr.get("fn"):
        return fr["fn"]
    path = workload_binary(fr.get("file"))
    if path is None:
        return ""
    starts, rows = symtab(path)
    addr = fr.get("addr", 0)
    i = bisect.bisect_right(starts, addr) - 1
    if i >= 0 and rows[i][0] <= addr < rows[i][1]:
        fr["fn"] = rows[i][2]
        fr["backend_symbolized"] = True
        return rows[i][2]
    return ""


# --------------------------------------------------------------------------- profile readers
def read_decoded(fmt, path):
    samples, summary = [], {}
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return samples, {"error": "no output"}
    r = subprocess.run([os.path.join(BB, "decode"), fmt, path], capture_output=True, text=True)
    if r.returncode != 0:
        return samples, {"error": r.stderr.strip()[:300]}
    for line in r.stdout.splitlines():
        d = json.loads(line)
        if "summary" in d:
            summary = d["summary"]
            continue
        d["names"] = [frame_name(f) for f in d.get("frames") or []]
        samples.append(d)
    return samples, summary


def read_perf(path):
    """perf script output: blocks of 'comm pid/tid' then one frame per line."""
    samples = []
    if not os.path.exists(path):
        return samples, {"error": "no output"}
    r = subprocess.run(["perf", "script", "-i", path, "-F", "comm,pid,tid,ip,sym,dso",
                        "--no-inline"], capture_output=True, text=True)
    head = re.compile(r"^(\S.*?)\s+(\d+)/(\d+)\s*$")
    frame = re.compile(r"^\s+([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$")
    cur = None
    for line in r.stdout.splitlines():
        m = head.match(line)
        if m:
            cur = {"comm": m.group(1), "pid": int(m.group(2)), "tid": int(m.group(3)),
                   "count": 1, "frames": []}
            samples.append(cur)
            continue
        m = frame.match(line)
        if m and cur is not None:
            sym = m.group(2)
            sym = "" if sym.startswith("[unknown]") else re.sub(r"\+0x[0-9a-f]+$", "", sym)
            cur["frames"].append({"fn": sym, "file": m.group(3), "addr": int(m.group(1), 16)})
    for s in samples:
        s["names"] = [frame_name(f) for f in s["frames"]]
    summary = {"samples": len(samples), "lost_samples": 0, "lost_sideband": 0}
    # what perf itself dropped when its ring buffers overflowed: samples of cpu-clock, and the
    # mmap/comm records of the dummy event (without them a process stays unsymbolized)
    r = subprocess.run(["perf", "report", "-i", path, "--stats"], capture_output=True, text=True)
    section = ""
    for line in r.stdout.splitlines():
        if line.rstrip().endswith("stats:"):
            section = line.strip()
        m = re.match(r"\s*LOST_SAMPLES events:\s+(\d+)", line)
        if m and section.startswith("cpu-clock"):
            summary["lost_samples"] += int(m.group(1))
        elif m and section.startswith("dummy"):
            summary["lost_sideband"] += int(m.group(1))
    return samples, summary


# --------------------------------------------------------------------------- accuracy
def ordered_contains(names, chain):
    """chain (leaf first) appears in names in order (other frames may sit between)."""
    i = 0
    for n in names:
        if i < len(chain) and n == chain[i]:
            i += 1
    return i == len(chain)


def ratio_accuracy(samples, pid, truth, chain_tail, expected):
    """Share error (max over hot functions, points), complete-stack share and delivered share
    of the expected samples (CPU seconds x frequency) for one process."""
    mine = [s for s in samples if s["pid"] == pid]
    total = sum(s["count"] for s in mine)
    if total == 0:
        return {"samples": 0, "expected": expected, "captured_pct": 0.0}
    share, complete, hot_total = {}, 0, 0
    for h in HOT:
        share[h] = sum(s["count"] for s in mine if h in s["names"]) / total
    for s in mine:
        hot = next((h for h in HOT if h in s["names"]), None)
        if hot:
            hot_total += s["count"]
            if ordered_contains(s["names"], [hot] + chain_tail):
                complete += s["count"]
    err = max(abs(share[h] - truth[h]) * 100 for h in HOT)
    return {"samples": total, "expected": expected,
            "captured_pct": 100.0 * total / expected if expected else None,
            "share": share, "truth": truth, "share_error_pts": err,
            "complete_pct": 100.0 * complete / hot_total if hot_total else None}


def deep_accuracy(samples, pid):
    mine = [s for s in samples if s["pid"] == pid and "deep_leaf" in s["names"]]
    total = sum(s["count"] for s in mine)
    if total == 0:
        return {"samples": 0}
    ok = sum(s["count"] for s in mine
             if s["names"].count("recurse") >= DEEP
             and ordered_contains(s["names"], ["deep_leaf", "recurse", "deep_start", "main"]))
    depth = median([s["names"].count("recurse") for s in mine])
    return {"samples": total, "complete_pct": 100.0 * ok / total, "median_recurse_frames": depth}


GO_CHAIN = ["main.goLeaf", "main.goMid", "main.main", "runtime.main"]


def go_accuracy(samples, pid):
    """bench/go built with -s -w: samples in goLeaf whose stack holds goMid (the frameless
    leaf's caller), main.main and runtime.main, by name."""
    mine = [s for s in samples if s["pid"] == pid]
    total = sum(s["count"] for s in mine)
    leaf = [s for s in mine if GO_CHAIN[0] in s["names"]]
    hot = sum(s["count"] for s in leaf)
    ok = sum(s["count"] for s in leaf if ordered_contains(s["names"], GO_CHAIN))
    return {"samples": total, "leaf_samples": hot,
            "complete_pct": 100.0 * ok / hot if hot else (0.0 if total else None)}


def go_workload():
    """Build bench/go stripped (-s -w) into the bench directory; (path, None) or (None, why)."""
    out = os.path.join(BB, "bench_go")
    src = os.path.join(ROOT, "bench", "go")
    if not shutil.which("go"):
        return None, "no go toolchain"
    env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
    r = subprocess.run(["go", "build", "-ldflags=-s -w", "-o", out, "."], cwd=src, env=env,
                       capture_output=True, text=True)
    if r.returncode:
        return None, "go build failed: " + r.stderr[-300:]
    return out, None


def spawn_accuracy(samples, parent_pid, child_cpu_s, hz):
    mine = [s for s in samples if s["pid"] != parent_pid and "child_work" in s["names"]]
    got = sum(s["count"] for s in mine)
    ok = sum(s["count"] for s in mine if ordered_contains(s["names"], ["child_work", "main"]))
    expected = child_cpu_s * hz
    return {"samples": got, "expected": expected,
            "captured_pct": 100.0 * got / expected if expected else None,
            "complete_pct": 100.0 * ok / got if got else None}


# --------------------------------------------------------------------------- profilers
class Profiler:
    name = label = ""

    def __init__(self):
        self.proc = None
        self.out = None
        self.t_launch = None

    def missing(self):
        return None

    def version(self):
        return ""

    def launch(self, hz, out, interval=1.0):
        raise NotImplementedError

    def wait_ready(self, timeout=30):
        """Seconds from launch until the profiler is sampling (or None)."""
        time.sleep(0.5)
        return None

    def first_profile_s(self, hz, workdir):
        """Launch with a 1 s profile duration/interval: seconds until a profile is on disk."""
        raise NotImplementedError

    def stop(self, timeout=60):
        if self.proc is None:
            return
        try:
            self.proc.send_signal(signal.SIGINT if self.name == "perf" else signal.SIGTERM)
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def read(self):
        raise NotImplementedError


class Perf(Profiler):
    name, label = "perf", "perf record --call-graph dwarf"

    def missing(self):
        return None if shutil.which("perf") else "perf not installed"

    def version(self):
        return sh(["perf", "--version"]).stdout.strip()

    def cmd(self, hz, out, extra=()):
        return ["perf", "record", "-q", "-a", "-e", "cpu-clock", "-F", str(hz), "--call-graph",
                "dwarf", "-o", out, *extra]

    def launch(self, hz, out, interval=1.0):
        self.out = out
        self.t_launch = time.time()
        self.proc = subprocess.Popen(self.cmd(hz, out), stdout=subprocess.DEVNULL,
                                     stderr=open(out + ".log", "w"))

    def first_profile_s(self, hz, workdir):
        out = os.path.join(workdir, "perf-first.data")
        if os.path.exists(out):
            os.unlink(out)
        t = time.time()
        r = subprocess.run(self.cmd(hz, out, ["--", "sleep", "1"]), capture_output=True)
        if r.returncode != 0 or not os.path.exists(out):
            return None
        return time.time() - t

    def read(self):
        return read_perf(self.out)


class Upstream(Profiler):
    name, label = "upstream", "upstream otelcol-ebpf-profiler"
    binary = os.path.join(BB, "otelcol-ebpf-profiler")

    def missing(self):
        if not os.access(self.binary, os.X_OK):
            return "not built (bench/build-upstream.sh failed)"
        return None

    def version(self):
        return "go.opentelemetry.io/ebpf-profiler v0.0.202633, collector v0.164.0"

    # The receiver block and launcher are the only differences from our collector (below).
    receiver = "profiling"
    receiver_extra = "    reporter_jitter: 0\n"

    def launcher(self):
        return [os.path.join(BB, "memlock-shim"), self.binary]

    def config(self, hz, out, interval):
        cfg = out + ".yaml"
        with open(cfg, "w") as f:
            f.write(f"""receivers:
  {self.receiver}:
    samples_per_second: {hz}
    reporter_interval: {interval}s
{self.receiver_extra}exporters:
  file:
    path: {out}
service:
  telemetry:
    metrics:
      level: none
    logs:
      level: info
  pipelines:
    profiles:
      receivers: [{self.receiver}]
      exporters: [file]
""")
        return cfg

    def launch(self, hz, out, interval=1.0):
        self.out = out
        cfg = self.config(hz, out, interval)
        self.t_launch = time.time()
        self.proc = subprocess.Popen(
            self.launcher() + ["--config", cfg, "--feature-gates=service.profilesSupport"],
            stdout=subprocess.DEVNULL, stderr=open(out + ".log", "w"))

    def wait_ready(self, timeout=60):
        """Ready when the collector says so ("Everything is ready", after every receiver has
        started: the upstream receiver attaches its programs seconds after loading them)."""
        end = time.time() + timeout
        while time.time() < end and self.proc.poll() is None:
            try:
                with open(self.out + ".log") as f:
                    if "Everything is ready" in f.read():
                        return time.time() - self.t_launch
            except OSError:
                pass
            time.sleep(0.05)
        return None

    def first_profile_s(self, hz, workdir):
        out = os.path.join(workdir, f"{self.name}-first.out")
        for f in glob.glob(out + "*"):
            os.unlink(f)
        self.launch(hz, out, interval=1.0)
        t = None
        end = time.time() + 30
        while time.time() < end and self.proc.poll() is None:
            if os.path.exists(out) and os.path.getsize(out) > 0:
                t = time.time() - self.t_launch
                break
            time.sleep(0.05)
        self.stop()
        return t

    def read(self):
        return read_decoded("otlp-json", self.out)


class Collector(Upstream):
    name, label = "collector", "otelprof otelcol-otelprof"
    binary = os.path.join(BUILD, "otelcol-otelprof")

    def missing(self):
        return None if os.access(self.binary, os.X_OK) else "not built"

    def version(self):
        return sh([self.binary, "--version"]).stdout.strip()

    receiver = "ebpfprofiler"
    receiver_extra = ""

    def launcher(self):
        return [self.binary]


class Cli(Profiler):
    name, label = "cli", "otelprof record"
    binary = os.path.join(BUILD, "otelprof")

    def missing(self):
        return None if os.access(self.binary, os.X_OK) else "not built"

    def version(self):
        return sh([self.binary, "version"]).stdout.strip().replace("\n", "; ")

    def launch(self, hz, out, interval=1.0):
        self.out = out
        self.t_launch = time.time()
        self.proc = subprocess.Popen(
            [self.binary, "record", "-d", "0", "-F", str(hz), "-o", out, "-v"],
            stdout=subprocess.DEVNULL, stderr=open(out + ".log", "w"))

    def wait_ready(self, timeout=60):
        """Ready when it reports that it is recording (printed after the attach)."""
        end = time.time() + timeout
        while time.time() < end and self.proc.poll() is None:
            try:
                with open(self.out + ".log") as f:
                    if "recording" in f.read():
                        return time.time() - self.t_launch
            except OSError:
                pass
            time.sleep(0.05)
        return None

    def first_profile_s(self, hz, workdir):
        out = os.path.join(workdir, "cli-first.pb.gz")
        if os.path.exists(out):
            os.unlink(out)
        t = time.time()
        r = subprocess.run([self.binary, "record", "-d", "1", "-F", str(hz), "-o", out, "-q"],
                           capture_output=True)
        if r.returncode != 0 or not os.path.exists(out):
            return None
        return time.time() - t

    def read(self):
        return read_decoded("pprof", self.out)


# --------------------------------------------------------------------------- workloads
def parse_kv(text):
    out = {}
    for tok in text.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            try:
                out[k] = float(v)
            except ValueError:
                out[k] = v
    return out


def start(cmd):
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def finish(p):
    out, _ = p.communicate()
    return parse_kv(out)


# --------------------------------------------------------------------------- measurements
def measured_session(prof, hz, workdir, tag, stages, window, idle=None):
    """Launch prof, wait until sampling, run the stages one after another (the workloads of a
    stage together) while measuring the profiler's CPU, memory and BPF figures, stop it and
    analyse its output. idle: workloads started before the profiler and measured for window
    seconds once the profiler is in its steady state (the idle host)."""
    res = {"profiler": prof.name if prof else "none", "hz": hz, "tag": tag}
    ready = None
    pre = [(name, start(cmd)) for name, cmd in idle or []]
    if pre:
        time.sleep(0.5)
    if prof:
        out = os.path.join(workdir, f"{prof.name}-{tag}-{hz}.out")
        for f in glob.glob(out + "*"):
            os.unlink(f)
        prof_t0 = time.time()
        prof.launch(hz, out)
        ready = prof.wait_ready()
        if prof.proc.poll() is not None:
            res["error"] = f"{prof.name} exited with {prof.proc.returncode}: " + \
                open(out + ".log").read()[-400:].replace("\n", " ")
            prof.proc = None
            for _, p in pre:
                p.send_signal(signal.SIGTERM)
                p.communicate()
            return res
        time.sleep(WARMUP)
        res["ready_s"] = ready
    t0 = time.time()
    if prof:
        pid = prof.proc.pid
        c0 = tree_cpu_ns(pid)
        progs0, _ = bpf_snapshot(proc_tree(pid))
    rss = []
    results = {}
    for workloads in stages:
        procs = [(name, start(cmd)) for name, cmd in workloads]
        while any(p.poll() is None for _, p in procs):
            if prof:
                rss.append(tree_kb(pid, "VmRSS"))
            time.sleep(0.25)
        for name, p in procs:
            results[name] = (p.pid, finish(p))
    while pre and time.time() - t0 < window:
        if prof:
            rss.append(tree_kb(pid, "VmRSS"))
        time.sleep(0.25)
    wall = time.time() - t0
    if prof:
        c1 = tree_cpu_ns(pid)
        progs1, memlock = bpf_snapshot(proc_tree(pid))
        res["agent_cpu_pct"] = 100.0 * (c1 - c0) / 1e9 / wall
        res["rss_steady_mib"] = median(rss[len(rss) // 2:]) / 1024 if rss else None
        res["rss_peak_mib"] = tree_kb(pid, "VmHWM") / 1024
        res["bpf_memlock_mib"] = memlock / 2**20
        run_ns = sum(v[1] - progs0.get(k, (0, 0, 0))[1] for k, v in progs1.items())
        samples = sum(v[2] - progs0.get(k, (0, 0, 0))[2] for k, v in progs1.items()
                      if v[0] == "perf_event")
        res["bpf_programs"] = len(progs1)
        res["bpf_run_cnt"] = samples
        res["bpf_ns_per_sample"] = run_ns / samples if samples else None
        if prof.name == "perf":
            # perf samples without BPF: no programs, no maps
            res["bpf_memlock_mib"] = res["bpf_ns_per_sample"] = None
    for name, p in pre:
        p.send_signal(signal.SIGTERM)
        results[name] = (p.pid, finish(p))
    res["workloads"] = {k: v[1] for k, v in results.items()}
    if prof:
        # every workload has been reaped: what the children counters gain now is the
        # profiler's whole session (startup, window, final write), then perf's offline pass
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        prof.stop()
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        samples, summary = prof.read()
        ru2 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = lambda a, b: (b.ru_utime + b.ru_stime) - (a.ru_utime + a.ru_stime)
        res["session_cpu_s"] = cpu(ru0, ru1)
        res["session_wall_s"] = time.time() - prof_t0
        if prof.name == "perf":
            res["offline_cpu_s"] = cpu(ru1, ru2)
        res["decode"] = summary
        res["accuracy"] = {}
        for name, (wpid, kv) in results.items():
            if name.startswith("ratio"):
                tail = ["run_ratio", "main"] if kv.get("threads", 1) == 1 else \
                    ["run_ratio", "ratio_thread"]
                truth = {h: kv.get("truth_" + h, 0) for h in HOT}
                res["accuracy"][name] = ratio_accuracy(samples, wpid, truth, tail,
                                                       kv.get("cpu", 0) * hz)
            elif name == "deep":
                res["accuracy"][name] = deep_accuracy(samples, wpid)
            elif name == "spawn":
                res["accuracy"][name] = spawn_accuracy(samples, wpid, kv.get("child_cpu", 0), hz)
            elif name == "go-stripped":
                res["accuracy"][name] = go_accuracy(samples, wpid)
        res["backend_symbolized_frames"] = sum(
            1 for s in samples for f in s.get("frames", []) if f.get("backend_symbolized"))
    return res


def machine():
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = status = 0
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) // 1024
    osr = ""
    if os.path.exists("/etc/os-release"):
        for line in open("/etc/os-release"):
            if line.startswith("PRETTY_NAME="):
                osr = line.split("=", 1)[1].strip().strip('"')
    return {"cpu": cpu, "cpus": NCPU, "mem_mib": mem, "kernel": platform.release(), "os": osr,
            "loadavg_at_start": open("/proc/loadavg").read().split()[:3]}


def main():
    workdir = os.path.join(BB, "run")
    os.makedirs(workdir, exist_ok=True)
    os.makedirs(RESULTS, exist_ok=True)
    all_profs = [Perf(), Upstream(), Cli(), Collector()]
    profs, skipped = [], {}
    for p in all_profs:
        why = p.missing()
        if why:
            skipped[p.name] = why
            log(f"skipping {p.label}: {why}")
        else:
            profs.append(p)
    ratio = lambda nofp="", thr=NCPU, secs=T_BUSY: [
        os.path.join(WL, "bench_ratio" + nofp), str(secs), str(thr)]
    runs = []
    plan = len(profs) * REPS * 3 + REPS * (1 if QUICK else 2) + len(profs) * 2
    done = 0

    def step(prof, hz, tag, workloads, window, idle=None):
        nonlocal done
        done += 1
        log(f"({done}/{plan}) {prof.name if prof else 'no profiler'} {hz} Hz: {tag}")
        r = measured_session(prof, hz, workdir, tag, workloads, window, idle)
        r["rep"] = rep
        if "error" in r:
            log("  error: " + r["error"])
        else:
            bits = []
            if "agent_cpu_pct" in r:
                bits.append(f"agent cpu {r['agent_cpu_pct']:.2f}%")
                bits.append(f"rss {r['rss_steady_mib']:.1f} MiB")
            for k, v in r.get("workloads", {}).items():
                if v.get("cpu"):
                    bits.append(f"{k} {v['rounds'] / v['cpu']:.0f} rounds/cpu-s")
            for k, a in r.get("accuracy", {}).items():
                if a.get("share_error_pts") is not None:
                    bits.append(f"{k} err {a['share_error_pts']:.2f} pts")
                if a.get("complete_pct") is not None:
                    bits.append(f"{k} complete {a['complete_pct']:.1f}%")
            log("  " + ", ".join(bits))
        runs.append(r)
        return r

    for rep in range(REPS):
        # rotate the order so that no profiler always runs first or last
        order = profs[rep % len(profs):] + profs[:rep % len(profs)] if profs else []
        # no-profiler baseline before and after the profilers of this repetition
        step(None, 0, "busy", [[("ratio", ratio())]], T_BUSY)
        for p in order:
            for hz in (20, 999):
                step(p, hz, "busy", [[("ratio", ratio())]], T_BUSY)
        for p in order:
            done += 1
            log(f"({done}/{plan}) {p.name}: time to first profile")
            r = {"profiler": p.name, "tag": "first", "hz": 20, "rep": rep,
                 "first_profile_s": p.first_profile_s(20, workdir)}
            log(f"  {r['first_profile_s']}")
            runs.append(r)
        if not QUICK:
            step(None, 0, "busy", [[("ratio", ratio())]], T_BUSY)
    rep = 0
    gobin, why = go_workload()
    if why:
        log(f"Go row skipped: {why}")
    for p in profs:
        step(p, 20, "idle", [], T_IDLE,
             idle=[("idle", [os.path.join(WL, "bench_idle"), "600", str(SLEEPERS)])])
        step(p, 999, "mixed", [
            [("ratio-nofp", ratio("-nofp", NCPU, T_EXTRA))],
            [("ratio-threads", ratio("", THREADS, T_EXTRA))],
            [("deep", [os.path.join(WL, "bench_deep"), str(T_EXTRA), str(DEEP)])],
            [("spawn", [os.path.join(WL, "bench_spawn"), str(T_EXTRA), "20"])],
        ] + ([[("go-stripped", [gobin, str(T_EXTRA)])]] if gobin else []), T_EXTRA)

    report = summarize(runs, all_profs, skipped)
    report["capabilities"] = capability_benchmarks(profs, workdir)
    with open(os.path.join(RESULTS, "latest.json"), "w") as f:
        json.dump(report, f, indent=1, default=str)
    with open(os.path.join(RESULTS, "latest.md"), "w") as f:
        f.write(render(report))
        f.write(render_capabilities(report["capabilities"]))
    log(f"wrote {RESULTS}/latest.md and latest.json in {time.time() - T0:.0f} s")


# --------------------------------------------------------------------------- capabilities
def capability_benchmarks(profs, workdir):
    """Run every bench/capabilities/*.py module: one capability's figures each (a language
    runtime, off-CPU, allocations, labels, the report...), measured side by side where it has
    a counterpart. A module defines run(ctx) returning a section:
      {"title": str, "columns": [header, ...], "rows": [[cell, ...], ...], "notes": str}
    ctx gives it what the harness knows: BUILD, WL (workloads), QUICK, workdir, the profilers
    that are built (by name: perf, upstream, cli, collector), and the measuring helpers
    (bpf_snapshot, tree_cpu_ns, tree_kb, proc_tree, median, sh, log). A module that fails is
    reported with its error, and the others still run."""
    import importlib.util
    ctx = {"BUILD": BUILD, "WL": WL, "QUICK": QUICK, "workdir": workdir, "ROOT": ROOT,
           "profilers": {p.name: p for p in profs}, "bpf_snapshot": bpf_snapshot,
           "tree_cpu_ns": tree_cpu_ns, "tree_kb": tree_kb, "proc_tree": proc_tree,
           "median": median, "sh": sh, "log": log}
    sections = []
    for path in sorted(glob.glob(os.path.join(ROOT, "bench", "capabilities", "*.py"))):
        name = os.path.splitext(os.path.basename(path))[0]
        log(f"capability benchmark: {name}")
        try:
            spec = importlib.util.spec_from_file_location(f"capability_{name}", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            sec = mod.run(ctx)
        except Exception as e:  # one broken module must not lose the whole run
            sec = {"title": name, "error": f"{type(e).__name__}: {e}"}
        sec["module"] = name
        sections.append(sec)
    return sections


def render_capabilities(sections):
    L = []
    for sec in sections:
        L.append(f"\n## {sec.get('title', sec['module'])}\n")
        if "error" in sec:
            L.append(f"Not measured: {sec['error']}\n")
            continue
        cols = sec.get("columns", [])
        if cols:
            L.append("| " + " | ".join(cols) + " |")
            L.append("|" + "---|" * len(cols))
            for row in sec.get("rows", []):
                L.append("| " + " | ".join(str(c) for c in row) + " |")
        if sec.get("notes"):
            L.append("\n" + sec["notes"].strip() + "\n")
    return "\n".join(L) + "\n"


# --------------------------------------------------------------------------- summary
def summarize(runs, profs, skipped):
    def sel(prof, tag, hz=None):
        return [r for r in runs if r["profiler"] == prof and r["tag"] == tag
                and (hz is None or r["hz"] == hz) and "error" not in r]

    def rate(r):
        """bench_ratio rounds per CPU second of the workload: the host is shared, so wall-clock
        throughput swings with the neighbours' load; the profiler's own CPU is reported
        separately as agent CPU."""
        w = r["workloads"].get("ratio", {})
        return w["rounds"] / w["cpu"] if w.get("cpu") else None

    base_runs = {}
    for r in sel("none", "busy"):
        if rate(r):
            base_runs.setdefault(r["rep"], []).append(rate(r))
    base = {k: statistics.mean(v) for k, v in base_runs.items()}
    # how far two no-profiler runs of one repetition lie apart: the noise floor of the
    # slowdown rows on this host
    noise = median([100.0 * abs(v[0] - v[-1]) / statistics.mean(v)
                    for v in base_runs.values() if len(v) > 1])
    rows = {}
    for p in profs:
        n = p.name
        if n in skipped:
            rows[n] = {"skipped": skipped[n]}
            continue
        row = {}
        b20, b999 = sel(n, "busy", 20), sel(n, "busy", 999)
        idle, mixed, first = sel(n, "idle"), sel(n, "mixed"), sel(n, "first")
        errs = [r["error"] for r in runs if r["profiler"] == n and "error" in r]
        if errs:
            row["errors"] = errs
        row["agent_cpu_idle_pct"] = median([r.get("agent_cpu_pct") for r in idle])
        row["agent_cpu_busy_pct"] = median([r.get("agent_cpu_pct") for r in b20])
        row["rss_steady_mib"] = median([r.get("rss_steady_mib") for r in b20 + idle])
        row["rss_peak_mib"] = median([r.get("rss_peak_mib") for r in b20 + b999])
        row["bpf_memlock_mib"] = median([r.get("bpf_memlock_mib") for r in b20 + b999])
        row["bpf_ns_per_sample"] = median([r.get("bpf_ns_per_sample") for r in b999])
        for hz, rs in ((20, b20), (999, b999)):
            sl = [100.0 * (1 - rate(r) / base[r["rep"]]) for r in rs
                  if r["rep"] in base and rate(r)]
            row[f"slowdown_{hz}hz_pct"] = median(sl)
            row[f"slowdown_{hz}hz_runs"] = sl
        row["first_profile_s"] = median([r.get("first_profile_s") for r in first])
        row["session_cpu_20hz_s"] = median([r.get("session_cpu_s") for r in b20])
        row["offline_cpu_20hz_s"] = median([r.get("offline_cpu_s") for r in b20])
        row["session_wall_s"] = median([r.get("session_wall_s") for r in b20])
        for hz, rs in ((20, b20), (999, b999)):
            acc = [r["accuracy"].get("ratio", {}) for r in rs]
            row[f"ratio_share_error_{hz}hz_pts"] = median([a.get("share_error_pts") for a in acc])
            row[f"ratio_complete_{hz}hz_pct"] = median([a.get("complete_pct") for a in acc])
            row[f"ratio_captured_{hz}hz_pct"] = median([a.get("captured_pct") for a in acc])
        for key in ("ratio-nofp", "ratio-threads", "deep", "spawn", "go-stripped"):
            acc = [r["accuracy"].get(key, {}) for r in mixed]
            k = key.replace("-", "_")
            if key.startswith("ratio"):
                row[f"{k}_share_error_pts"] = median([a.get("share_error_pts") for a in acc])
            if key == "spawn":
                row["spawn_captured_pct"] = median([a.get("captured_pct") for a in acc])
            row[f"{k}_complete_pct"] = median([a.get("complete_pct") for a in acc])
        row["backend_symbolized_frames"] = sum(r.get("backend_symbolized_frames", 0)
                                               for r in runs if r["profiler"] == n)
        rows[n] = row
    # ours/theirs ratios, pair by pair within one repetition, then the median
    pairs = {}
    for ours in ("cli", "collector"):
        for theirs in ("upstream", "perf"):
            for metric, tag, hz, title in (
                    ("agent_cpu_pct", "busy", 20, "agent CPU, busy host, 20 Hz"),
                    ("agent_cpu_pct", "idle", 20, "agent CPU, idle host, 20 Hz"),
                    ("rss_steady_mib", "busy", 20, "resident memory, busy host, 20 Hz"),
                    ("bpf_ns_per_sample", "busy", 999, "BPF time per sample, 999 Hz")):
                vals = []
                for r in sel(ours, tag, hz):
                    t = [x for x in sel(theirs, tag, hz) if x["rep"] == r["rep"]]
                    if t and r.get(metric) and t[0].get(metric):
                        vals.append(r[metric] / t[0][metric])
                if vals:
                    pairs[f"{title}: {ours} / {theirs}"] = median(vals)
    return {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "quick": QUICK, "reps": REPS,
            "windows_s": {"busy": T_BUSY, "idle": T_IDLE, "mixed": T_EXTRA},
            "machine": machine(), "baseline_rounds_per_s": median(list(base.values())),
            "baseline_noise_pct": noise,
            "versions": {p.name: (p.version() if p.name not in skipped else skipped[p.name])
                         for p in profs},
            "labels": {p.name: p.label for p in profs},
            "rows": rows, "ratios": pairs, "runs": runs,
            "duration_s": time.time() - T0}


ROWS = [
    ("agent_cpu_idle_pct", "Agent CPU, idle host, 20 Hz (% of one CPU)", "{:.2f}", "low"),
    ("agent_cpu_busy_pct", "Agent CPU, busy host, 20 Hz (% of one CPU)", "{:.2f}", "low"),
    ("session_cpu_20hz_s", "Agent CPU, whole session from start to exit, busy, 20 Hz (s)",
     "{:.2f}", "low"),
    ("offline_cpu_20hz_s", "Offline processing after the session, 20 Hz (s of CPU)", "{:.2f}",
     "low"),
    ("rss_steady_mib", "Resident memory, steady (MiB)", "{:.1f}", "low"),
    ("rss_peak_mib", "Resident memory, peak VmHWM (MiB)", "{:.1f}", "low"),
    ("bpf_memlock_mib", "Locked BPF map memory (MiB)", "{:.1f}", "low"),
    ("bpf_ns_per_sample", "BPF time per sample (ns)", "{:.0f}", "low"),
    ("slowdown_20hz_pct", "Workload slowdown at 20 Hz (%)", "{:.1f}", "low"),
    ("slowdown_999hz_pct", "Workload slowdown at 999 Hz (%)", "{:.1f}", "low"),
    ("first_profile_s", "Time to first profile on disk (s)", "{:.2f}", "low"),
    ("ratio_captured_20hz_pct", "Samples delivered, busy host, 20 Hz (% of CPU time × Hz)",
     "{:.0f}", "100"),
    ("ratio_captured_999hz_pct", "Samples delivered, busy host, 999 Hz (% of CPU time × Hz)",
     "{:.0f}", "100"),
    ("ratio_share_error_999hz_pts", "Share error, hot functions, 999 Hz (points)", "{:.2f}", "low"),
    ("ratio_complete_999hz_pct", "Complete stacks, frame pointers (%)", "{:.1f}", "high"),
    ("ratio_nofp_share_error_pts", "Share error, no frame pointers (points)", "{:.2f}", "low"),
    ("ratio_nofp_complete_pct", "Complete stacks, no frame pointers (%)", "{:.1f}", "high"),
    ("ratio_threads_share_error_pts", f"Share error, {THREADS} threads (points)", "{:.2f}", "low"),
    ("ratio_threads_complete_pct", f"Complete stacks, {THREADS} threads (%)", "{:.1f}", "high"),
    ("deep_complete_pct", f"Complete stacks, {DEEP}-deep recursion (%)", "{:.1f}", "high"),
    ("spawn_captured_pct", "Short-lived processes: CPU captured (%)", "{:.0f}", "100"),
    ("spawn_complete_pct", "Short-lived processes: complete stacks (%)", "{:.1f}", "high"),
    ("go_stripped_complete_pct", "Complete stacks, Go built with -s -w (%)", "{:.1f}", "high"),
]


def render(rep):
    names = ["perf", "upstream", "cli", "collector"]
    rows = rep["rows"]
    m = rep["machine"]
    L = []
    L.append("# otelprof benchmarks (latest run)\n")
    L.append(f"Generated by `make bench{' QUICK=1' if rep['quick'] else ''}` on {rep['date']} "
             f"in {rep['duration_s']:.0f} s. Every cell comes from this run; figures are medians "
             f"over {rep['reps']} repetition(s).\n")
    L.append(f"Machine: {m['cpu']}, {m['cpus']} CPUs, {m['mem_mib']} MiB, {m['os']}, kernel "
             f"{m['kernel']}; load average at start {' '.join(m['loadavg_at_start'])} (the host is "
             f"shared, so throughput figures carry noise of a few percent).\n")
    L.append("Versions:\n")
    for n in names:
        L.append(f"- {rep['labels'][n]}: {rep['versions'][n]}")
    L.append("")
    hdr = "| | " + " | ".join(rep["labels"][n] for n in names) + " |"
    L.append(hdr)
    L.append("|---" * (len(names) + 1) + "|")
    behind = []
    for key, title, fmt, better in ROWS:
        cells = []
        for n in names:
            r = rows.get(n, {})
            if "skipped" in r:
                cells.append(f"n/a ({r['skipped']})")
                continue
            v = r.get(key)
            na = (key.startswith("bpf") and n == "perf") or \
                (key.startswith("offline") and n != "perf")
            cells.append(fmt.format(v) if isinstance(v, (int, float)) else
                         ("n/a" if na else "—"))
        L.append(f"| {title} | " + " | ".join(cells) + " |")
        for ours in ("cli", "collector"):
            o = rows.get(ours, {}).get(key)
            if not isinstance(o, (int, float)):
                continue
            for theirs in ("upstream", "perf"):
                t = rows.get(theirs, {}).get(key)
                if not isinstance(t, (int, float)):
                    continue
                # a margin below which the difference is within this host's noise
                if key.endswith("_pts"):
                    margin = 0.5
                elif key.startswith(("slowdown", "ratio_captured", "spawn_captured")):
                    margin = 3.0
                elif key.endswith("_pct") and not key.startswith("agent"):
                    margin = 1.0
                else:
                    margin = abs(t) * 0.05 + 0.01
                if better == "100":  # the truth is 100%: closer is better
                    worse = abs(o - 100) > abs(t - 100) + margin
                elif better == "low":
                    worse = o > t + margin
                else:
                    worse = o < t - margin
                if worse:
                    behind.append(f"- {title}: {rep['labels'][ours]} {fmt.format(o)} vs "
                                  f"{rep['labels'][theirs]} {fmt.format(t)}")
    L.append("")
    L.append(f"No-profiler baseline: {rep['baseline_rounds_per_s'] or 0:.0f} bench_ratio rounds "
             f"per CPU second ({NCPU} threads)"
             + (f"; the two no-profiler runs of a repetition differ by "
                f"{rep['baseline_noise_pct']:.1f}% (median), the noise floor of the slowdown "
                f"rows" if rep.get("baseline_noise_pct") is not None else "")
             + f". A dash means the profiler delivered no samples "
             f"of that workload (see samples delivered); n/a means the figure does not apply.\n")
    if rep["quick"]:
        L.append(f"QUICK run: one repetition, {WARMUP:.0f} s warm-up. The upstream profiler does "
                 f"not pick up processes that start in its first seconds at 999 Hz on a loaded "
                 f"host, so its 999 Hz cells can be empty here; the full run waits 8 s.\n")
    if rep["ratios"]:
        L.append("Ours/theirs, pair by pair in the same repetition (median; below 1 means "
                 "otelprof uses less; cli = otelprof record, collector = otelcol-otelprof):\n")
        for k, v in sorted(rep["ratios"].items()):
            L.append(f"- {k}: {v:.2f}")
        L.append("")
    L.append("## Where otelprof is behind\n")
    L.extend(behind or ["- nowhere on this run"])
    L.append("")
    goals = []
    for ours in ("cli", "collector"):
        r = rows.get(ours, {})
        u = rows.get("upstream", {})
        if "skipped" in r:
            continue
        def g(ok, text):
            goals.append(f"- {rep['labels'][ours]}: {text}: {'met' if ok else 'NOT met'}")
        if r.get("agent_cpu_busy_pct") is not None and u.get("agent_cpu_busy_pct"):
            g(r["agent_cpu_busy_pct"] <= u["agent_cpu_busy_pct"] / 2,
              "agent CPU ≤ half the upstream profiler's (busy, 20 Hz)")
        if r.get("rss_steady_mib") is not None and u.get("rss_steady_mib"):
            g(r["rss_steady_mib"] <= u["rss_steady_mib"] / 2, "resident memory ≤ half")
        if r.get("bpf_ns_per_sample") is not None and u.get("bpf_ns_per_sample"):
            g(r["bpf_ns_per_sample"] <= u["bpf_ns_per_sample"], "BPF time per sample ≤ upstream")
        ck = ("ratio_complete_999hz_pct", "ratio_nofp_complete_pct", "ratio_threads_complete_pct",
              "deep_complete_pct", "spawn_complete_pct")
        c = [r.get(k) for k in ck]
        if any(x is not None for x in c):
            worst = min(x for x in c if x is not None)
            g(worst >= 99 and None not in c, f"complete stacks ≥ 99% (worst {worst:.1f}%"
              + (", and some workloads without samples)" if None in c else ")"))
        ek = ("ratio_share_error_999hz_pts", "ratio_nofp_share_error_pts",
              "ratio_threads_share_error_pts")
        e = [r.get(k) for k in ek]
        if any(x is not None for x in e):
            worst = max(x for x in e if x is not None)
            g(worst <= 2 and None not in e, f"share error ≤ 2 points (worst {worst:.2f}"
              + (", and some workloads without samples)" if None in e else ")"))
    if goals:
        L.append("## Goals\n")
        L.extend(goals)
        L.append("")
    nsym = sum(r.get("backend_symbolized_frames", 0) for r in rows.values()
               if isinstance(r, dict))
    L.append("## How each figure is measured\n")
    L.append(f"""- Each profiler samples the whole system (`perf record -a`, the collectors' receivers,
  `otelprof record` without `--pid`) with cpu-clock at the stated frequency per CPU.
- Busy host: `bench_ratio` on {NCPU} threads ({T_BUSY} s): hot_a/hot_b/hot_c run 5:3:2
  iterations of one loop body; the true shares are measured inside the workload
  (CLOCK_THREAD_CPUTIME_ID around each call). Idle host: {SLEEPERS} sleeping processes
  (`bench_idle`, two threads each) started before the profiler, {T_IDLE} s window. The host is
  shared with other jobs (see the load average), so "idle" means no benchmark load.
- Agent CPU: on-CPU time of the profiler's process tree (/proc/PID/task/*/schedstat) over the
  measured window, which starts {WARMUP:.0f} s after the profiler says it is ready (steady
  state: see time to first profile for startup); perf's offline
  `perf script` unwinding is not counted, and neither is the CLI's final profile encoding.
- Whole session: the profiler's user+sys CPU from launch to exit (startup, warm-up, window,
  final write) of a 20 Hz busy session lasting {WARMUP + T_BUSY:.0f} s plus startup. Offline
  processing: `perf script` turning perf.data into stacks (DWARF unwinding happens there).
  otelprof delivers symbolized stacks; the upstream profiler leaves native frames for a backend
  to symbolize (not measured here).
- Resident memory: VmRSS sampled every 0.25 s (median of the second half of the window) and
  VmHWM at the end. Locked BPF map memory: `bytes_memlock` of the maps the profiler's process
  holds (`bpftool map show`). BPF time per sample: `kernel.bpf_stats_enabled=1`, the change in
  run_time_ns summed over the profiler's programs divided by the change in run_cnt of its
  perf_event programs, at 999 Hz (tail-called programs are timed inside their caller).
- Slowdown: bench_ratio rounds per CPU second of the workload against the mean of the
  no-profiler runs of the same repetition (work per CPU second, because the host is shared and
  wall-clock throughput swings with the neighbours' load; it includes the BPF and kernel work done in the
  workload's context, while the profiler's own CPU is the agent CPU row).
- Time to first profile: launch → first profile on disk, with a 1 s duration (`perf record --
  sleep 1`, `otelprof record -d 1`) or a 1 s report interval (collectors, file exporter).
- Samples delivered: samples of the workload process in the output / (its CPU seconds ×
  frequency); below 100% means samples lost or attributed to no process.
- Share error: largest |measured − true| share of hot_a/hot_b/hot_c among the workload
  process's samples, in percentage points (a function counts when it is anywhere in the stack).
- Complete stacks: samples in a hot function whose stack holds every frame of the program's
  own chain in order: hot_* → run_ratio → main (or → ratio_thread for threads); deep_leaf →
  {DEEP}× recurse → deep_start → main; child_work → main. perf copies 8 KiB of user stack
  per sample by default (`--call-graph dwarf` as users run it), less than the {DEEP}-deep
  stack (~10 KiB), so its deep stacks are truncated.
- Mixed run (one profiler session at 999 Hz, {T_EXTRA} s each, one after another):
  bench_ratio-nofp ({NCPU} threads, built with -fomit-frame-pointer), bench_ratio with {THREADS}
  threads, bench_deep, bench_spawn (fork+exec of children that burn 20 ms of CPU).
  Short-lived CPU captured = samples in child_work / (children's CPU seconds × frequency).
  Then bench/go built with `-ldflags="-s -w"` (no symbols, DWARF or .debug_frame): complete =
  samples in main.goLeaf (a frameless leaf) whose stack names main.goMid → main.main →
  runtime.main; perf has nothing to name a stripped Go binary with, so it scores 0 there.
- Native frames the upstream profiler sends unsymbolized (it leaves that to a backend) are
  symbolized by the harness from the workload binaries' symbol tables ({nsym} frames on
  this run).
- The upstream collector runs under bench/upstream/memlock-shim (its RLIMIT_MEMLOCK raise is
  turned into a no-op: this sandbox has an 8 MiB hard limit and no CAP_SYS_RESOURCE; BPF
  memory is memcg-charged since Linux 5.11) and needs tracefs, which bench/run.sh mounts.
""")
    lost = [r for r in rep["runs"] if r.get("profiler") == "perf"
            and (r.get("decode", {}).get("lost_samples") or r.get("decode", {}).get("lost_sideband"))]
    if lost:
        L.append("## perf's own losses on this run\n")
        L.append("perf's ring buffers overflow on this loaded host: it drops samples and the "
                 "mmap/comm records that symbolization needs (a process whose records were lost "
                 "shows up unsymbolized, hence an empty cell or a share error near 50 points):\n")
        for r in lost:
            d = r["decode"]
            L.append(f"- {r['tag']} {r['hz']} Hz, repetition {r['rep'] + 1}: "
                     f"{d.get('lost_samples', 0)} samples and {d.get('lost_sideband', 0)} "
                     f"mmap/comm records lost (of {d.get('samples', 0)} samples written)")
        L.append("")
    errs = [(n, e) for n in names for e in rows.get(n, {}).get("errors", [])]
    if errs:
        L.append("## Errors on this run\n")
        for n, e in errs:
            L.append(f"- {n}: {e}")
        L.append("")
    return "\n".join(L) + "\n"


def selftest():
    """Checks of the analysis on made-up samples (no root needed): bench/harness.py --selftest"""
    names = lambda *n: list(n)
    s = [{"pid": 7, "count": 50, "names": names("hot_a", "run_ratio", "main")},
         {"pid": 7, "count": 30, "names": names("k", "hot_b", "run_ratio", "main")},
         {"pid": 7, "count": 20, "names": names("hot_c", "main")},
         {"pid": 8, "count": 99, "names": names("hot_a", "run_ratio", "main")}]
    truth = {"hot_a": 0.5, "hot_b": 0.3, "hot_c": 0.2}
    a = ratio_accuracy(s, 7, truth, ["run_ratio", "main"], 100)
    assert abs(a["share_error_pts"]) < 1e-9, a
    assert abs(a["complete_pct"] - 80.0) < 1e-9, a  # hot_c skipped run_ratio
    assert abs(a["captured_pct"] - 100.0) < 1e-9, a
    truth = {"hot_a": 0.4, "hot_b": 0.3, "hot_c": 0.3}
    assert abs(ratio_accuracy(s, 7, truth, [], 100)["share_error_pts"] - 10.0) < 1e-9
    assert ratio_accuracy(s, 9, truth, [], 100)["samples"] == 0
    assert ordered_contains(["a", "x", "b", "c"], ["a", "b", "c"])
    assert not ordered_contains(["b", "a", "c"], ["a", "b", "c"])
    deep = [{"pid": 1, "count": 3, "names": ["deep_leaf"] + ["recurse"] * DEEP +
             ["deep_start", "main"]},
            {"pid": 1, "count": 1, "names": ["deep_leaf"] + ["recurse"] * 10}]
    assert deep_accuracy(deep, 1)["complete_pct"] == 75.0
    sp = [{"pid": 2, "count": 4, "names": ["child_work", "main"]},
          {"pid": 3, "count": 4, "names": ["child_work"]},
          {"pid": 1, "count": 9, "names": ["child_work", "main"]}]
    r = spawn_accuracy(sp, 1, 0.01, 1000)
    assert r["captured_pct"] == 80.0 and r["complete_pct"] == 50.0, r
    print("harness selftest: ok")


if __name__ == "__main__":
    if sys.argv[1:] == ["--selftest"]:
        selftest()
        sys.exit(0)
    if sys.argv[1:] == ["--render"]:
        # rewrite latest.md from latest.json (after a change to the page layout)
        with open(os.path.join(RESULTS, "latest.json")) as f:
            saved = json.load(f)
        with open(os.path.join(RESULTS, "latest.md"), "w") as f:
            f.write(render(saved))
        sys.exit(0)
    if os.geteuid() != 0:
        print("bench: needs root (BPF, perf_event, bpf_stats); run as root", file=sys.stderr)
        sys.exit(1)
    main()
