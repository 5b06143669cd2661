#!/usr/bin/env python3
"""Checks that includes in lib/ and bpf/ point one way: down the pipeline (lib/README.md).

Each file belongs to a stage (its folder); a file may include headers of its own stage or of
an earlier one, never of a later stage, and a language runtime (lib/runtime/NAME/,
bpf/runtime/NAME.bpf.h) never includes another runtime's files. An include is resolved the way
the compiler does (the including file's folder, then -Ilib -I. -Ibpf -Iinclude), so relative
and stage-qualified spellings are judged alike; system headers (<...>) and generated files
(build/gen) are not part of the layering, except that a generated header counts as the stage
that owns its source.

  scripts/check-layers.py [--root DIR]     exit 0: clean; 1: every offending include listed
"""
import argparse
import os
import re
import sys

# Ranks, lowest first. A file may include ranks <= its own.
LIB_STAGES = ["util", "binary", "sample", "unwind", "symbol", "runtime", "profile", "report"]
LIB_TOP = len(LIB_STAGES)  # lib/otelprof.c: the ABI entry points, above every stage
LIB_CLI = LIB_TOP + 1  # lib/cli/: the command-line tool over the library
BPF_STAGES = ["types", "sample", "unwind", "runtime"]  # bpf/types.h is the ground floor
BPF_TOP = len(BPF_STAGES)  # bpf/*.bpf.c: the programs

# Generated headers and the stage that owns what they are generated from.
GENERATED = {
    re.compile(r".*\.skel\.h$"): ("lib", LIB_STAGES.index("sample")),  # bpf/*.bpf.c, loaded there
    re.compile(r".*\.pb-c\.h$"): ("lib", LIB_STAGES.index("profile")),  # proto/, the encoders
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def stage_of(root, path):
    """(tree, rank, runtime name or None, label) of a file under root, or None if outside."""
    rel = os.path.relpath(path, root)
    parts = rel.split(os.sep)
    if parts[0] == "lib":
        if len(parts) == 2:
            return ("lib", LIB_TOP, None, "lib (ABI entry points)")
        if parts[1] == "cli":
            return ("lib", LIB_CLI, None, "lib/cli")
        if parts[1] in LIB_STAGES:
            rt = parts[2] if parts[1] == "runtime" and len(parts) > 3 else None
            label = "lib/runtime/%s" % rt if rt else "lib/%s" % parts[1]
            return ("lib", LIB_STAGES.index(parts[1]), rt, label)
        return ("lib", None, None, "lib/%s (not a known stage)" % parts[1])
    if parts[0] == "bpf":
        if len(parts) == 2:
            if parts[1].endswith(".bpf.c"):
                return ("bpf", BPF_TOP, None, "bpf programs")
            return ("bpf", 0, None, "bpf/%s" % parts[1])
        if parts[1] in BPF_STAGES:
            rt = None
            if parts[1] == "runtime":
                rt = parts[2].split(".")[0]
            label = "bpf/runtime/%s" % rt if rt else "bpf/%s" % parts[1]
            return ("bpf", BPF_STAGES.index(parts[1]), rt, label)
        return ("bpf", None, None, "bpf/%s (not a known stage)" % parts[1])
    if parts[0] == "include":
        return ("include", -1, None, "include (public ABI)")
    return None


def resolve(root, src, name):
    """The file an include names, as the compiler finds it, or None (generated/system)."""
    for d in [os.path.dirname(src)] + [os.path.join(root, x) for x in ("lib", ".", "bpf", "include")]:
        p = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(p):
            return p
    return None


def check(root):
    problems = []
    files = []
    for top in ("lib", "bpf"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            files += [os.path.join(dirpath, n) for n in names if n.endswith((".c", ".h"))]
    for src in sorted(files):
        me = stage_of(root, src)
        if me[1] is None:
            problems.append("%s: %s" % (os.path.relpath(src, root), me[3]))
            continue
        text = open(src, encoding="utf-8", errors="replace").read()
        for m in INCLUDE.finditer(text):
            name = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            where = "%s:%d" % (os.path.relpath(src, root), line)
            target = resolve(root, src, name)
            if target is None:
                gen = [v for k, v in GENERATED.items() if k.match(name)]
                if gen and me[0] == gen[0][0] and me[1] < gen[0][1]:
                    problems.append('%s: includes "%s", generated for %s, a later stage than %s'
                                    % (where, name, LIB_STAGES[gen[0][1]], me[3]))
                continue
            it = stage_of(root, target)
            if it is None or it[0] == "include":
                continue
            if me[0] == "lib" and it[0] == "bpf":
                continue  # the fixed-width records shared with the BPF programs
            if it[0] != me[0]:
                problems.append('%s: includes "%s" across trees (%s -> %s)' % (where, name, me[3], it[3]))
                continue
            if it[1] is None:
                problems.append('%s: includes "%s" from %s' % (where, name, it[3]))
            elif it[1] > me[1]:
                problems.append('%s: includes "%s" of %s, a later stage than %s (includes point down the pipeline: lib/README.md)'
                                % (where, name, it[3], me[3]))
            elif it[2] and me[2] and it[2] != me[2]:
                problems.append('%s: includes "%s": runtime %s includes runtime %s (runtimes share only lib/runtime/*.h)'
                                % (where, name, me[2], it[2]))
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    args = ap.parse_args()
    problems = check(os.path.abspath(args.root))
    for p in problems:
        print("layers: " + p, file=sys.stderr)
    if problems:
        print("layers: %d include(s) point the wrong way" % len(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
