"""auto-estimate.py REMARKS EXPLAIN [TP PP] [TOL]: the -O1 partition remark's estimate of the
layout (the chosen one, or tp TP x pp PP) against the plan's predicted latency (explain's first
line), within relative tolerance TOL; and explain's summary 'devices' lines against its 'by device'
rows (busy + on links).  Prints 'estimate ok' / 'devices ok' or what differs, exit 1."""
import re
import sys

UNIT = {'ns': 1e-9, 'us': 1e-6, 'ms': 1e-3, 's': 1.0}


def secs(num, unit):
    return float(num) * UNIT[unit]


rem = open(sys.argv[1]).read()
exp = open(sys.argv[2]).read()
m = re.search(r'chose --tp (\d+) --pp (\d+)', rem)
tp, pp = (sys.argv[3], sys.argv[4]) if len(sys.argv) > 4 else m.groups()
tol = float(sys.argv[5]) if len(sys.argv) > 5 else 0.03
est = re.search(r'tp %s x pp %s: ([0-9.e+]+) (ns|us|ms|s)\b' % (tp, pp), rem)
lat = re.search(r'predicted latency ([0-9.e+]+) (ns|us|ms|s)\b', exp)
e, l = secs(*est.groups()), secs(*lat.groups())
bad = 0
if abs(e / l - 1) > tol:
    print('estimate tp %s x pp %s: %.4g s, plan %.4g s: %+.1f%%' % (tp, pp, e, l, 100 * (e / l - 1)))
    bad = 1
else:
    print('estimate ok')
# summary: "gpu0: 34.3 ms busy + 7.89 ms on links, ..." ; by device: "gpu0  N  42.2 ms  x%  = 34.3 ms busy + 7.89 ms on links"
summ = {d: (b, k) for d, b, k in re.findall(r'^ +(?:devices +busiest )?(\w+): ([0-9.]+ \w+) busy(?: \+ ([0-9.]+ \w+) on links)?',
                                               exp, re.M)}
rows = re.findall(r'^  (\w+) +\d+ +([0-9.]+ \w+) +[0-9.]+% += ([0-9.]+ \w+) busy \+ ([0-9.]+ \w+) on links', exp, re.M)
if not rows:
    print('no by-device rows')
    bad = 1
for d, tot, busy, link in rows:
    t, b, k = secs(*tot.split()), secs(*busy.split()), secs(*link.split())
    if abs(b + k - t) > 0.01 * t:
        print('%s: by device %s != %s busy + %s on links' % (d, tot, busy, link))
        bad = 1
    if d in summ:
        sb, sk = summ[d]
        if sb != busy or (sk or '0 ns') != link:
            print('%s: summary %s busy + %s on links, by device %s + %s' % (d, sb, sk, busy, link))
            bad = 1
if not bad:
    print('devices ok')
sys.exit(bad)
