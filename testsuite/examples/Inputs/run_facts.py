# Prints the stable facts of a small example run: each output's name, shape and dtype from the
# report, whether every value of its .npy is finite (no numpy), and the --check verdict.
import json, math, struct, sys, ast, os
r = json.load(open(sys.argv[1]))
for o in r["outputs"]:
    with open(os.path.join(sys.argv[2], o["name"] + ".npy"), "rb") as f:
        assert f.read(6) == b"\x93NUMPY"
        major = f.read(2)[0]
        n = struct.unpack("<H" if major == 1 else "<I", f.read(2 if major == 1 else 4))[0]
        h = ast.literal_eval(f.read(n).decode())
        fmt = {"<f4": "f", "<f8": "d"}[h["descr"]]
        data = f.read()
        vals = struct.unpack("<%d%s" % (len(data) // struct.calcsize(fmt), fmt), data)
    finite = all(math.isfinite(v) for v in vals)
    nonzero = any(v != 0 for v in vals)
    print("output", o["name"], o["shape"], o["dtype"], "finite" if finite else "NOT FINITE",
          "nonzero" if nonzero else "ALL ZERO")
print("check ok", r["check"]["ok"])
