"""Each file: a compile's remarks then its run --timing-only: the disaggregate remark's lpu-only
prediction against the plan's latency line (pools-default.test)."""
import os
import re
import sys

UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
for path in sys.argv[1:]:
    text = open(path).read()
    est = re.search(r"pools: lpu-only, .*?lpu-only ([0-9.]+) ms", text)
    lat = re.search(r"^latency +([0-9.]+) (ns|us|ms|s)$", text, re.M)
    if not est or not lat:
        sys.exit(f"{path}: no lpu-only prediction or no latency line")
    e, p = float(est.group(1)) * 1e-3, float(lat.group(1)) * UNITS[lat.group(2)]
    if abs(e - p) > 0.01 * p:
        sys.exit(f"{path}: lpu-only estimate {e * 1e3:.4g} ms, plan {p * 1e3:.4g} ms: more than 1% apart")
    print(f"{os.path.basename(path)}: lpu-only estimate within 1% of the plan's latency")
