"""plan_space.py PLAN SPACE [PATTERN]: the high-water mark of SPACE in a plan (the largest buffer end,
in GB) and, with PATTERN (a regular expression on buffer names), how many buffers match and at how
many distinct offsets they sit (memory reused across layer instances puts them at few offsets)."""
import re
import sys

plan, space = sys.argv[1], sys.argv[2]
pat = re.compile(sys.argv[3]) if len(sys.argv) > 3 else None
top, n, offs = 0, 0, set()
for line in open(plan):
    m = re.match(r'buffer (\S+) space=(\S+) offset=(\d+) size=(\d+)', line)
    if not m or m.group(2) != space:
        continue
    top = max(top, int(m.group(3)) + int(m.group(4)))
    if pat and pat.search(m.group(1)):
        n += 1
        offs.add(int(m.group(3)))
print('%s top %.1f GB' % (space, top / 1e9))
if pat:
    print('%d buffers at %d offsets' % (n, len(offs)))
