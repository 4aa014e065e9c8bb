# Prints the facts the run tests check from a report, a trace and an output .npy (no numpy).
import json, struct, sys, ast
r = json.load(open(sys.argv[1]))
print("target", r["target"], "machine", r["machine"])
print("flops", int(r["flops"]))
for o in r["outputs"]:
    print("output", o["name"], o["shape"], o["dtype"])
if "check" in r:
    print("check ok", r["check"]["ok"], "first_bad_node", r["check"]["first_bad_node"])
t = json.load(open(sys.argv[2]))
ev = [e for e in t["traceEvents"] if e["ph"] == "X"]
names = [e["args"]["name"] for e in t["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"]
assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in ev)
print("trace events", len(ev), "tracks", " ".join(names))
with open(sys.argv[3], "rb") as f:
    assert f.read(6) == b"\x93NUMPY"
    major = f.read(2)[0]
    n = struct.unpack("<H" if major == 1 else "<I", f.read(2 if major == 1 else 4))[0]
    h = ast.literal_eval(f.read(n).decode())
print("npy", tuple(h["shape"]), {"<f4": "float32", "<f8": "float64"}.get(h["descr"], h["descr"]))
