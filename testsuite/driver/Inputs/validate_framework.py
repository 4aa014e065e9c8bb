#!/usr/bin/env python3
"""validate_framework.py: reads tools/validate.py's output for validate-framework.json (one
batch_latency row priced twice, without and with a serving framework of 4 ms per engine step) and
prints the difference of the two predictions in ms: 128 engine steps x 4 ms = 512 ms; then the same
row through a framework that overlaps part of that time (0.2 ms at batch 1 to 3.4 ms at batch 32,
linear: 0.923 ms at batch 8), 128 x 3.077 = 393.9 ms."""
import re, sys
pred = {}
for line in sys.stdin:
    m = re.match(r'^hopper\s+end-to-end\s+(\S+) tiny latency B=8 32/128\s+(\S+)', line)
    if m:
        pred[m.group(1)] = float(m.group(2))
print("framework adds %.1f ms" % (pred["fw"] - pred["gpu-only"]))
print("framework with overlap adds %.1f ms" % (pred["fwov"] - pred["gpu-only"]))
