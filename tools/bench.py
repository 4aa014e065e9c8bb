#!/usr/bin/env python3
"""tools/bench.py BUILD: aicc's benchmarks (run by `make bench`), reported as rates and ratios.

1. Frontend throughput: parse + verify + shape inference of generated graphs of 10^3..10^6
   nodes (tools/gen-graph.py), in nodes/s, and how time grows with size (a ratio of 10.0 per
   decade is linear).  Goal (issue 2): >= 200,000 nodes/s on one core.
2. Every benchmark program in BUILD/bench/ (quantize throughput, MatMul vs OpenBLAS, ...).
3. Every tools/bench-*.sh script (the interpreter on a real layer, the lpu target at scale).
Timings are wall-clock medians of several runs on an otherwise idle machine."""
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(cmd, reps):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def frontend(build):
    aicc = os.path.join(build, "aicc")
    gen = os.path.join(build, "bench", "graphs")
    os.makedirs(gen, exist_ok=True)
    print("== frontend: parse + verify + shape inference (aicc compile --emit summary)")
    print("%10s %10s %14s %12s" % ("nodes", "seconds", "nodes/s", "growth"))
    prev = None
    for n in (1000, 10000, 100000, 1000000):
        path = os.path.join(gen, "g%d.aig" % n)
        if not os.path.exists(path):
            subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen-graph.py"), str(n), path],
                           check=True)
        reps = 5 if n <= 100000 else 3
        t = timed([aicc, "compile", path, "--bind", "B=8", "--emit", "summary"], reps)
        growth = "" if prev is None else "%.2fx" % (t / prev)
        print("%10d %10.4f %14.0f %12s" % (n, t, n / t, growth))
        prev = t


def programs(build):
    d = os.path.join(build, "bench")
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        p = os.path.join(d, name)
        if name.startswith("bench_") and os.access(p, os.X_OK) and os.path.isfile(p):
            print("== %s" % name)
            sys.stdout.flush()
            subprocess.run([p], check=True, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    frontend(build)
    programs(build)
    for extra in sorted(os.listdir(os.path.join(ROOT, "tools"))):   # bench-extra.sh, bench-lpu.sh, ...
        if extra.startswith("bench-") and extra.endswith(".sh"):
            subprocess.run(["sh", os.path.join(ROOT, "tools", extra), build], check=True)


if __name__ == "__main__":
    main()
