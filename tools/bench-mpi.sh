#!/bin/sh
# tools/bench-mpi.sh BUILD: aicc run --mpi at full width (run by tools/bench.py, `make bench`).
# Compiles a Llama-3.1-8B layer stack at full width (hidden 4096, 32/8 heads of 128, FFN 14336;
# BENCH_MPI_LAYERS layers, default 2; vocabulary 512, so the layers dominate) as one decode step
# (batch 1, 128 past tokens) with --tp 2 for hopper on dgx-h100, weights seeded at load, and runs
# it --repeat BENCH_MPI_REPEAT times (default 5) in one process and on 2 MPI ranks, in
# alternating pairs (BENCH_REPS pairs, default 3), every process with OPENBLAS_NUM_THREADS=1.
# Reports per configuration the median over the pairs of: the whole command's wall clock, the
# load (weights bound), the steady-state step, and for the ranks the time per step spent waiting
# for messages and the bytes sent per step, and each rank's peak RSS; then the ratio one process /
# 2 ranks of the steady-state step.  Without Open MPI in the build it says so and reports nothing.
set -eu
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
AICC=$BUILD/aicc
echo "== mpi: llama3.1-8b layer stack at full width, --tp 2 decode step, 1 process vs 2 ranks"
if [ "$(cat "$BUILD/mpi.flag" 2>/dev/null)" != yes ] || ! command -v mpirun >/dev/null; then
	echo "skipped: $BUILD was built without Open MPI (sh tools/install-deps.sh, then make)"
	exit 0
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
python3 - "$AICC" "$ROOT" "$TMP" "${BENCH_REPS:-3}" "${BENCH_MPI_LAYERS:-2}" "${BENCH_MPI_REPEAT:-5}" <<'PY'
import json, os, re, statistics, subprocess, sys, time
aicc, root, tmp, pairs, layers, repeat = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]
plan = os.path.join(tmp, "tp2.aip")
subprocess.run([aicc, "compile", os.path.join(root, "examples", "llama3.1-8b.aig"), "--bind",
                "B=1,S=1,L=%s,V=512,CTX=256" % layers, "--init-unbound", "normal:0.02:1", "--phase", "decode",
                "--context", "128", "--target", "hopper", "--machine", "dgx-h100", "--passes=canonicalize,place-precision,fuse,partition,plan-memory", "--tp", "2", "--emit", "plan",
                "-o", plan], check=True, stdout=subprocess.DEVNULL)
env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
mpirun = [os.path.join(root, "testsuite", "mpi", "Inputs", "mpirun.sh"), "-np", "2"]
UNIT = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1.0}
def secs(text, what):
    m = re.search(r"host %s\s+.*?([0-9.]+) (ns|us|\u00b5s|ms|s)\b" % what, text)
    return float(m.group(1)) * UNIT[m.group(2)] if m else float("nan")
def steady(text):
    m = re.search(r"steady state ([0-9.]+) (ns|us|\u00b5s|ms|s)\b", text)
    return float(m.group(1)) * UNIT[m.group(2)] if m else float("nan")
def one():
    t0 = time.perf_counter()
    out = subprocess.run([aicc, "run", plan, "--repeat", repeat], check=True, env=env, capture_output=True, text=True).stdout
    return {"wall": time.perf_counter() - t0, "load": secs(out, "load"), "step": steady(out)}
def ranks():
    rep = os.path.join(tmp, "r.json")
    t0 = time.perf_counter()
    out = subprocess.run(mpirun + [aicc, "run", plan, "--mpi", "--repeat", repeat, "--report", rep], check=True,
                         env=env, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t0
    rk = json.load(open(rep))["ranks"]
    return {"wall": wall, "load": max(r["load_s"] for r in rk), "step": steady(out),
            "comm": max(r["comm_s"] for r in rk), "sent": max(r["sent_bytes"] for r in rk),
            "rss": [r["peak_rss_bytes"] for r in rk]}
a, b = [], []
for _ in range(pairs):
    a.append(one())
    b.append(ranks())
med = lambda xs, k: statistics.median(x[k] for x in xs)
print("%-22s %10s %10s %12s %16s %14s %s" % ("configuration", "wall s", "load s", "step ms", "waiting ms/step",
      "sent MB/step", "peak RSS MB"))
print("%-22s %10.3f %10.3f %12.2f %16s %14s %s" % ("1 process", med(a, "wall"), med(a, "load"), med(a, "step") * 1e3,
      "-", "-", "-"))
rss = [statistics.median(x["rss"][k] for x in b) / 1e6 for k in range(2)]
print("%-22s %10.3f %10.3f %12.2f %16.2f %14.2f %s" % ("2 ranks (--tp 2)", med(b, "wall"), med(b, "load"),
      med(b, "step") * 1e3, med(b, "comm") * 1e3, med(b, "sent") / 1e6, " ".join("%.0f" % r for r in rss)))
print("steady-state step: 1 process / 2 ranks = %.2f (median of %d alternating pairs, --repeat %s, %s layers)" %
      (med(a, "step") / med(b, "step"), pairs, repeat, layers))
PY
