# Prints tensor NAME of checkpoint DIR as "NAME DTYPE VALUES" (f32 slices only), from its
# manifest and safetensors bytes: a reader independent of aicc's.
import json, struct, sys

d, name = sys.argv[1], sys.argv[2]
m = json.load(open(d + "/manifest.json"))
for t in m["tensors"]:
    if t["name"] != name:
        continue
    vals = []
    for s in t["slices"]:
        b = open(d + "/" + s["file"], "rb").read()[s["byte_offset"]:s["byte_offset"] + s["bytes"]]
        vals += struct.unpack("<%df" % (len(b) // 4), b)
    print(name, t["dtype"], " ".join(repr(v) for v in vals))
