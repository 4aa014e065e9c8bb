#!/bin/sh
# tools/bench-extra.sh BUILD: the interpreter on a real layer (run by tools/bench.py, `make bench`).
# Compiles examples/bench/llama3.1-8b-layer.aig (one Llama-3.1-8B decoder layer at full width,
# S = 1024, seeded weights) to a reference plan and times `aicc run` on it: wall-clock seconds
# (best of BENCH_REPS runs, default 1; weight materialisation included) and the achieved
# GFLOP/s, the plan's FLOP (from the run's report) over that time.  BENCH_BIND=S=128 (etc.)
# makes a quicker run of the same layer.
set -eu
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
AICC=$BUILD/aicc
MODEL=$ROOT/examples/bench/llama3.1-8b-layer.aig
REPS=${BENCH_REPS:-1}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
echo "== interpreter: one Llama-3.1-8B layer (examples/bench/llama3.1-8b-layer.aig${BENCH_BIND:+, --bind $BENCH_BIND})"
"$AICC" compile "$MODEL" ${BENCH_BIND:+--bind "$BENCH_BIND"} --emit plan -o "$TMP/layer.aip"
python3 - "$AICC" "$TMP" "$REPS" <<'PY'
import json, subprocess, sys, time
aicc, tmp, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
best = None
for _ in range(reps):
    t0 = time.perf_counter()
    subprocess.run([aicc, "run", tmp + "/layer.aip", "--report", tmp + "/r.json"], check=True,
                   stdout=subprocess.DEVNULL)
    t = time.perf_counter() - t0
    best = t if best is None else min(best, t)
r = json.load(open(tmp + "/r.json"))
flops = r["flops"]
print("%12s %10s %12s %16s" % ("GFLOP", "seconds", "GFLOP/s", "simulated (ref)"))
print("%12.1f %10.3f %12.2f %14.3f s" % (flops / 1e9, best, flops / 1e9 / best, r["latency_s"]))
PY
