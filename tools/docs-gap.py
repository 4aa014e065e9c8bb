#!/usr/bin/env python3
"""tools/docs-gap.py EXPLAIN.txt REPORT.json RATE: what a published per-user rate leaves beyond a
plan's predicted step, for docs/targets-wafer.md (tools/docs-numbers.py runs it).

Prints the predicted step (the report's latency_s), the published step 1 / RATE, the plan's
instruction count (the first line of `aicc explain`), the time per instruction the difference
would need, (1 / RATE - step) / instructions, and the ratio (1 / RATE) / step.  The per-instruction
figure says how large a missing latency term would have to be; it is never put into a machine
file (docs/machines.md, the rule against fitting).  Standard library only.
"""
import json
import re
import sys


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    with open(sys.argv[1], encoding='utf-8') as f:
        n = int(re.search(r'(\d+) instructions', f.read()).group(1))
    with open(sys.argv[2], encoding='utf-8') as f:
        step = json.load(f)['latency_s']
    rate = float(sys.argv[3])
    print('step %.4g us, published %.4g us, %d instructions: %.3g us each, ratio %.3g'
          % (step * 1e6, 1e6 / rate, n, (1 / rate - step) * 1e6 / n, (1 / rate) / step))


if __name__ == '__main__':
    main()
