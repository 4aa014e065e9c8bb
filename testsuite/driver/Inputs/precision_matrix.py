#!/usr/bin/env python3
"""precision_matrix.py AICC MODEL: every --precision word (and the options) on every target, at
-O0 and -O1.  Each pair must either both compile, record the same spec and use the same narrow
matrix formats (formats wider than 8 bits may appear at -O1 only: place-precision keeps the
first and last layers and sensitive nodes wide; LPU-pool kernels of vera-rubin run at the LPU's
own FP8), or both be refused with the same message.  Prints one line per target and word,
"TARGET WORD ok|refused", and FAIL lines for every mismatch; exit status 1 on any."""
import re, subprocess, sys, tempfile, os

aicc, model = sys.argv[1], sys.argv[2]
targets = ["reference", "ampere", "hopper", "blackwell", "tpu", "lpu", "vera-rubin", "wafer"]
machines = {"tpu": ["tpu-v5e", "tpu-8i", "tpu-v4"]}
words = ["f32", "f64", "bf16", "f16", "fp8", "mxfp8", "mxfp6", "mxfp4", "nvfp4", "int8", "w4a16", "fp4", "auto",
         "fp8+graph", "fp8+nopromote", "fp8+tensor", "fp8+1x128", "fp8+128x128", "fp8+nosplitk", "bf16+graph", "fp5", "bf16+turbo"]
bind = "--bind=L=4,H=4,KV=2,HD=16,F=96,V=512,CTX=16,B=1,S=8"
wide = {"bf16", "f16", "f32", "f64", "tf32"}
tmp = tempfile.mkdtemp()
bad = 0

def compile(t, mach, w, level):
    out = os.path.join(tmp, "p.aip")
    cmd = [aicc, "compile", model, bind, "--init-unbound", "normal:0.02:1", "--target", t, "--precision", w,
           level, "--emit", "plan", "-o", out]
    if mach:
        cmd += ["--machine", mach]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        return None, r.stderr
    text = open(out).read()
    spec = re.search(r'^source .*precision=(\S+)', text, re.M)
    narrow = set()
    gpu_mm = False       # a matrix product off the LPUs (whose operand format is their own)
    for line in text.splitlines():
        m = re.search(r' mma_in=(\S+)', line)
        if m and 't.kind="lpu"' not in line:
            gpu_mm = True
            if m.group(1) not in wide:
                narrow.add(m.group(1))
    return (spec.group(1) if spec else None, narrow if gpu_mm else None), r.stderr

for t in targets:
    for mach in machines.get(t, [None]):
        name = t + ("@" + mach if mach else "")
        for w in words:
            a, ea = compile(t, mach, w, "-O0")
            b, eb = compile(t, mach, w, "-O1")
            if a is None and b is None:
                if ea != eb:
                    print("FAIL %s %s: refused with different messages:\n  -O0: %s  -O1: %s" % (name, w, ea, eb))
                    bad += 1
                else:
                    print("%s %s refused" % (name, w))
                continue
            if a is None or b is None:
                print("FAIL %s %s: %s compiles, %s is refused: %s" % (name, w, "-O1" if a is None else "-O0",
                      "-O0" if a is None else "-O1", (ea or eb).strip()))
                bad += 1
                continue
            # auto decides per node in place-precision: at -O0 (no pass) it is bf16 throughout
            # a layout with every matrix product on the LPUs (vera-rubin's -O1 may choose lpu-only)
            # has no GPU format to compare
            if a[0] != b[0] or (w != "auto" and a[1] is not None and b[1] is not None and a[1] != b[1]):
                print("FAIL %s %s: -O0 %s vs -O1 %s" % (name, w, a, b))
                bad += 1
                continue
            print("%s %s ok" % (name, w))
sys.exit(1 if bad else 0)
