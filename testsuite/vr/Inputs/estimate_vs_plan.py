"""Each file: a compile's remarks then its run --timing-only: the disaggregate remark's prediction
for the layout it chose (lpu-only or gpu-only) against the plan's latency line (pools-default.test):
within 1% for lpu-only, 2% for gpu-only (whose plan also prices the embedding and output head, and
whose fusion groups the estimate prices node by node as the lowering does)."""
import os
import re
import sys

UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
for path in sys.argv[1:]:
    text = open(path).read()
    est = re.search(r"pools: (lpu-only|gpu-only)[ ,].*?\1 ([0-9.]+) ms", text)
    lat = re.search(r"^latency +([0-9.]+) (ns|us|ms|s)$", text, re.M)
    if not est or not lat:
        sys.exit(f"{path}: no lpu-only or gpu-only prediction or no latency line")
    kind, e, p = est.group(1), float(est.group(2)) * 1e-3, float(lat.group(1)) * UNITS[lat.group(2)]
    tol = 0.01 if kind == "lpu-only" else 0.02
    if abs(e - p) > tol * p:
        sys.exit(f"{path}: {kind} estimate {e * 1e3:.4g} ms, plan {p * 1e3:.4g} ms: more than {tol:.0%} apart")
    print(f"{os.path.basename(path)}: {kind} estimate within {tol:.0%} of the plan's latency")
