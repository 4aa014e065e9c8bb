#!/usr/bin/env python3
"""decode_curve.py AICC EXAMPLES TMP NAME TARGET MACHINE PEAK_TF EFF HBM_TBS [compile options...]

The shape of decode TPOT against the batch (issue 15 done means): compiles one decode step of a
model at batches 1, 4, 16, 64 and 256 (context 512), runs `aicc run --timing-only --report`, and
checks that TPOT never falls and tokens/s always rises with the batch, that batch 1 sits near
the weight-streaming roofline (within 2x of the bytes a step must stream, weights as stored and
the KV cache, at HBM bandwidth), and that at batch 256 TPOT has moved toward the compute
roofline: between 1x and 2x max(FLOP / (PEAK x EFF), bytes / HBM), the compute term at least 30 %
of TPOT and ten times its share at batch 1.  Prints one line per batch and one verdict line; the
numbers themselves are not golden, the shape is."""
import json, os, subprocess, sys

aicc, examples, tmp, name, target, machine = sys.argv[1:7]
peak, eff, hbm = float(sys.argv[7]) * 1e12, float(sys.argv[8]), float(sys.argv[9]) * 1e12
extra = sys.argv[10:]
rows = []
for b in (1, 4, 16, 64, 256):
    plan, rep = os.path.join(tmp, "%s.%d.aip" % (name, b)), os.path.join(tmp, "%s.%d.json" % (name, b))
    subprocess.run([aicc, "compile", os.path.join(examples, name + ".aig"), "--target", target, "--machine", machine,
                    "--phase", "decode", "--batch", str(b), "--context", "512", "--emit", "plan", "-o", plan] + extra,
                   check=True)
    subprocess.run([aicc, "run", plan, "--timing-only", "--report", rep], check=True, stdout=subprocess.DEVNULL)
    r = json.load(open(rep))
    flops = max([d.get("flops", 0) for d in r["devices"]] or [r["flops"]]) or r["flops"]
    # the bytes a step must stream per device: its constants (weights, as stored) and its
    # inputs (the KV cache), from the plan
    size, space, kept = {}, {}, set()
    for line in open(plan):
        f = line.split()
        if f and f[0] == "buffer":
            kv = dict(x.split("=", 1) for x in f[2:] if "=" in x)
            size[f[1]], space[f[1]] = int(kv["size"]), kv["space"]
        elif f and f[0] == "const":
            kept.add(f[1])
        elif f and f[0] == "input":
            kv = dict(x.split("=", 1) for x in f[2:] if "=" in x)
            kept.add(kv.get("buffer", f[1]))
    per = {}
    for n in kept:
        if n in size:
            per[space[n]] = per.get(space[n], 0) + size[n]
    rows.append((b, r["latency_s"], flops / (peak * eff), max(per.values()) / hbm))
ok = True
for i, (b, t, comp, mem) in enumerate(rows):
    print("batch %3d: TPOT %.3f ms, compute roofline %.3f ms, memory roofline %.3f ms, %.0f tokens/s" %
          (b, t * 1e3, comp * 1e3, mem * 1e3, b / t))
    if i and (t < rows[i - 1][1] or b / t <= rows[i - 1][0] / rows[i - 1][1]):
        ok = False
        print("not monotone at batch %d" % b)
b1, t1, c1, m1 = rows[0]
if t1 > 2 * max(c1, m1):
    ok = False
    print("batch 1 is %.2fx its roofline" % (t1 / max(c1, m1)))
b, t, comp, mem = rows[-1]
if t > 2 * max(comp, mem) or t < max(comp, mem) or comp < 0.3 * t or comp / t < 10 * c1 / t1:
    ok = False
    print("batch 256: TPOT %.2fx the roofline, compute %.0f%% of it" % (t / max(comp, mem), 100 * comp / t))
print("%s %s on %s: %s" % (name, target, machine, "monotone, toward the compute roofline" if ok else "FAIL"))
