#!/bin/sh
# tools/bench-lpu.sh BUILD: the lpu target at scale (run by tools/bench.py, `make bench`).
# Compiles one llama3.1-70b decode step (batch 1, 4096 past tokens) for groq-pod-v1 (768 Groq
# TSP v1 chips, f16 weights) and groq-lpx (256 Groq 3 LPUs, fp8, preliminary) and times it, then times `aicc run --timing-only` on the plan (load, full
# verification: every unit, link direction and arrival; and the timing simulation).  Reports
# wall-clock seconds (best of BENCH_REPS runs, default 1; goals: compile < 30 s, load + verify
# < 10 s on one core) and what the plan says: chips, plan size, step time and tokens/s per user.
set -eu
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
AICC=$BUILD/aicc
REPS=${BENCH_REPS:-1}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
echo "== lpu: llama3.1-70b decode step (examples/llama3.1-70b.aig, --phase decode --batch 1 --context 4096)"
python3 - "$AICC" "$ROOT/examples/llama3.1-70b.aig" "$TMP" "$REPS" <<'PY'
import os, re, subprocess, sys, time
aicc, model, tmp, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
plan = os.path.join(tmp, "d.aip")
def best(cmd):
    b = None
    for _ in range(reps):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        t = time.perf_counter() - t0
        b = t if b is None else min(b, t)
    return b
print("%-12s %10s %12s %8s %12s %10s %12s %14s" % ("machine", "compile s", "load+run s", "chips", "instructions",
      "plan MB", "step ms", "tokens/s/user"))
for machine in ("groq-pod-v1", "groq-lpx"):
    tc = best([aicc, "compile", model, "--target", "lpu", "--machine", machine, "--phase", "decode",
               "--batch", "1", "--context", "4096", "--emit", "plan", "-o", plan])
    tr = best([aicc, "run", plan, "--timing-only"])
    text = open(plan).read()
    get = lambda k: re.search(r't\.%s="([^"]*)"' % re.escape(k), text).group(1)
    nins = sum(1 for l in text.splitlines() if l.startswith("  "))
    print("%-12s %10.3f %12.3f %8s %12d %10.2f %12.3f %14.1f" % (machine, tc, tr, get("chips"), nins,
          len(text) / 1e6, float(get("schedule_s")) * 1e3, float(get("steps_per_s"))))
PY
