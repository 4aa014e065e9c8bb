# Checks a moves.json of aicc reshard: every move's bytes are its runs x run_bytes and its
# region's volume x element size, the per-link totals add up, and no port (a device's send or
# receive side of one link class, a device's HBM for local copies, a server's storage channel)
# carries two moves at once; prints the totals.
import json, sys

m = json.load(open(sys.argv[1]))
domain = m["links"]["nvlink"]["domain"]
tot = {k: 0 for k in m["bytes"]}
busy = {}


def canon(d):
    """A one-device plan's `gpu` is a partitioned plan's `gpu0`."""
    return d if d[-1:].isdigit() else d + "0"


def idx(d):
    return int(canon(d).lstrip("abcdefghijklmnopqrstuvwxyz"))


for v in m["moves"]:
    n = 1
    for r in v["runs"]:
        n *= r
    assert v["bytes"] == n * v["run_bytes"], v
    vol = 1
    for e in v["extents"]:
        vol *= e
    assert v["bytes"] % vol == 0, v
    tot[v["link"]] += v["bytes"]
    d = canon(v["dst"]["device"])
    if v["link"] == "storage":
        ports = [("storage", idx(d) // domain)]
    elif v["link"] == "local":
        assert canon(v["src"]["device"]) == d, v
        ports = [("hbm", d)]
    else:
        s = canon(v["src"]["device"])
        assert (idx(s) // domain == idx(d) // domain) == (v["link"] == "nvlink"), v
        ports = [(v["link"] + "-tx", s), (v["link"] + "-rx", d)]
    for p in ports:
        busy.setdefault(p, []).append((v["start_s"], v["end_s"]))
assert tot == m["bytes"], (tot, m["bytes"])
for p, spans in busy.items():
    spans.sort()
    for a, b in zip(spans, spans[1:]):
        assert b[0] >= a[1] - 1e-12 * max(1.0, a[1]), (p, a, b)
last = max(v["end_s"] for v in m["moves"])
assert abs(last - m["predicted_s"]) <= 1e-12 * last, (last, m["predicted_s"])
print("moves", len(m["moves"]), "ports", len(busy), "ok")
