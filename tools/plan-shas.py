#!/usr/bin/env python3
"""tools/plan-shas.py AICC [OUT]: the sha256 of the plan of every full-size example for every target
and machine that tools/bench.py times (its examples() and scaling() compiles), one line each:
"sha256  model target machine".  Run it with two builds on the same source tree and diff the
outputs: a compile-speed change must leave every plan byte-identical."""
import hashlib
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (EXAMPLE_MACHINES, ROOT, ENV)


def sha(aicc, args, plan):
    if os.path.exists(plan):
        os.unlink(plan)
    p = subprocess.run([aicc] + args + ["--emit", "plan", "-o", plan], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=bench.ENV)
    if p.returncode != 0:
        return "exit%d" % p.returncode
    with open(plan, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    aicc = sys.argv[1]
    out = open(sys.argv[2], "w") if len(sys.argv) > 2 else sys.stdout
    plan = os.path.join(tempfile.mkdtemp(), "p.aip")
    binds = {"vit-b16": "B=1", "openvla-7b": "B=1,S=32", "whisper-base": "B=1,S=64"}
    ex = os.path.join(bench.ROOT, "examples")
    for path in sorted(f for f in os.listdir(ex) if f.endswith(".aig")):
        name = path[:-4]
        for target, machines in bench.EXAMPLE_MACHINES.items():
            for m in machines:
                args = ["compile", os.path.join(ex, path), "--bind", binds.get(name, "B=1,S=128"), "--target", target]
                args += ["--machine", m] if m else []
                out.write("%s  %s %s %s\n" % (sha(aicc, args, plan), name, target, m or "(default)"))
                out.flush()
    model = os.path.join(ex, "llama3.1-405b.aig")
    for L in (126, 252, 504):
        base = ["compile", model, "--bind", "L=%d" % L, "--phase", "decode", "--batch", "1", "--context", "1024"]
        hop = ["--target", "hopper", "--machine", "dgx-h200",
               "--passes=canonicalize,place-precision,fuse,partition,schedule,plan-memory",
               "--tp", "8", "--precision", "fp8", "--set", "gpu.hbm.capacity=%dGB" % (141 * L // 126 + 1)]
        lpu = ["--target", "lpu", "--machine", "groq-pod-v1", "--set", "lpu.count=%d" % (40 * L)]
        out.write("%s  llama3.1-405b-L%d hopper-tp8\n" % (sha(aicc, base + hop, plan), L))
        out.write("%s  llama3.1-405b-L%d lpu-pod\n" % (sha(aicc, base + lpu, plan), L))
        out.flush()
    os.unlink(plan) if os.path.exists(plan) else None


if __name__ == "__main__":
    main()
