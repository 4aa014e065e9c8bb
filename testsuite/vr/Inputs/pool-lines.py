"""Reads `aicc run --timing-only` output on stdin: every memory line's time must be its bytes over
its bandwidth (x the pool's chips when the line says "N x"), and no more than the latency."""
import re
import sys

UNIT = {'': 1, 'k': 1e3, 'M': 1e6, 'G': 1e9, 'T': 1e12, 'P': 1e15, 'E': 1e18}
SEC = {'s': 1, 'ms': 1e-3, 'us': 1e-6, 'ns': 1e-9, 'ps': 1e-12}
lat = None
n = 0
for line in sys.stdin:
    m = re.match(r'^latency\s+([0-9.e+-]+) (\w+)', line)
    if m:
        lat = float(m.group(1)) * SEC[m.group(2)]
    m = re.match(r'^memory\s+(\S+): ([0-9.e+-]+) (\w?)B moved \(([0-9.e+-]+) (\w+) at (?:(\d+) x )?([0-9.e+-]+) (\w?)B/s\)', line)
    if not m:
        continue
    name, b, bu, t, tu, chips, bw, wu = m.groups()
    moved = float(b) * UNIT[bu]
    secs = float(t) * SEC[tu]
    rate = float(bw) * UNIT[wu] * (int(chips) if chips else 1)
    want = moved / rate
    if abs(secs - want) > 2e-3 * want:
        sys.exit('%s: %g s printed, %g B / %g B/s = %g s' % (name, secs, moved, rate, want))
    if lat is None or secs > lat * (1 + 1e-3):
        sys.exit('%s: %g s of memory time exceeds the latency %s' % (name, secs, lat))
    print('%s: consistent (%s chips)' % (name, chips or 1))
    n += 1
if not n:
    sys.exit('no memory line with a time')
