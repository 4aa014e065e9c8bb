"""l2-sum.py PLAN RUN DEV: `aicc run`'s "DEV.l2: X GB moved" against the sum of DEV's kernels'
t.l2_us at the plan's DEV.l2 bandwidth; prints 'l2 bytes ok' or both numbers."""
import re
import sys

plan, run, dev = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3]
bw = float(re.search(r'^space %s\.l2 .*bandwidth=([0-9.e+]+)' % dev, plan, re.M).group(1))
us, on = 0.0, False
for line in plan.splitlines():
    m = re.match(r'stream \S+ device=(\S+)', line)
    if m:
        on = m.group(1) == dev
    elif on and line.lstrip().startswith('kernel '):
        x = re.search(r't\.l2_us="([0-9.e+-]+)"', line)
        us += float(x.group(1)) if x else 0
m = re.search(r'%s\.l2: ([0-9.]+) (k|M|G|T)?B moved' % dev, run)
got = float(m.group(1)) * {None: 1, 'k': 1e3, 'M': 1e6, 'G': 1e9, 'T': 1e12}[m.group(2)]
want = us * 1e-6 * bw
print('l2 bytes ok' if want > 0 and abs(got / want - 1) < 0.001 else 'l2 %g B, t.l2_us gives %g B' % (got, want))
