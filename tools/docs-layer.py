#!/usr/bin/env python3
"""tools/docs-layer.py TARGET NAME=LAYERS ... < VALIDATE-OUTPUT: would one fixed time per layer close a
target's per-user decode rows?  For docs/targets-lpu.md and docs/targets-wafer.md (tools/docs-numbers.py
runs it on `tools/validate.py --only TARGET`).

For each row NAME of TARGET (a `decode_rate` row of tools/validate.py's table, tokens/s per user,
the model having LAYERS layers) it prints the predicted and the published time per layer
(1 / rate / LAYERS), then the constant c per layer that would close that row alone,
(1 / published - 1 / predicted) / LAYERS, and the signed error every other row would have with
that c added to each of its layers: 1 / (1 / predicted + c x layers) against its published rate.
A constant that closes one row and leaves another beyond the validation goal (25 %) is not a
machine fact the rows are missing but a sign that the published rates are not one machine's
timing; no such constant is ever put into a machine file (docs/machines.md, the rule against
fitting).  Standard library only.
"""
import re
import sys


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    target = sys.argv[1]
    layers = dict(a.split('=', 1) for a in sys.argv[2:])
    rows = {}
    for line in sys.stdin:
        m = re.match(r'^(\S+)\s+end-to-end\s+(.+?) B=1 ctx=\d+\s+(\S+)\s+(\S+)\s+\S+\s+tokens/s per user', line)
        if m and m.group(1) == target and m.group(2) in layers:
            rows[m.group(2)] = (float(m.group(3)), float(m.group(4)), int(layers[m.group(2)]))
    missing = sorted(set(layers) - set(rows))
    if missing:
        raise SystemExit('docs-layer: no %s row named %s in the input' % (target, ', '.join(missing)))
    for name in layers:
        pred, pub, n = rows[name]
        print('layer %s %s: predicted %.3g us, published %.3g us per layer' % (target, name, 1e6 / pred / n, 1e6 / pub / n))
    for name in layers:
        pred, pub, n = rows[name]
        c = (1 / pub - 1 / pred) / n
        others = []
        for o in layers:
            if o == name:
                continue
            p2, b2, n2 = rows[o]
            others.append('%s %+.0f%%' % (o, 100 * ((1 / (1 / p2 + c * n2)) - b2) / b2))
        print('closing %s %s: %.3g us per layer; then %s' % (target, name, c * 1e6, ', '.join(others)))


if __name__ == '__main__':
    main()
