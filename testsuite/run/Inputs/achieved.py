"""Checks that a `aicc run` compute line's achieved FLOP/s is its FLOP over the latency it names
(and not over the busy time printed beside it).  Prints one line per compute line."""
import re, sys
SI = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
SEC = {"s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12}
pat = re.compile(r"compute +([0-9.e+]+) (\w?)FLOP in ([0-9.e+]+) (\w+) busy on (\S+): "
                 r"([0-9.e+]+) (\w?)FLOP/s achieved over the ([0-9.e+]+) (\w+) latency")
for line in open(sys.argv[1]):
    m = pat.search(line)
    if not m:
        continue
    flop = float(m[1]) * SI[m[2]]
    busy = float(m[3]) * SEC[m[4]]
    ach = float(m[6]) * SI[m[7]]
    lat = float(m[8]) * SEC[m[9]]
    # 4 significant digits printed: each figure within 5e-4 relative
    ok = abs(ach - flop / lat) <= 2e-3 * ach
    print("%s: achieved %s flop/latency%s" % (m[5], "=" if ok else "!=", ", busy differs" if abs(busy - lat) > 1e-3 * lat else ""))
