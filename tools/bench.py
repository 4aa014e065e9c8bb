#!/usr/bin/env python3
"""tools/bench.py BUILD: aicc's benchmarks (run by `make bench`), every figure a ratio.

The machine may be shared, so nothing is a best-of: each comparison runs its two sides in
alternating pairs (A B, B A, A B, ...: neither side always runs first or on a warm cache), takes
the ratio pair by pair and prints the median of BENCH_PAIRS pairs (default 5, at least 5) with
the load average before and after.  Times are the children's CPU seconds (user + system, from
getrusage) where the two sides are processes, and wall seconds where a side is timed in process.

1. Frontend throughput (parse + verify + shape inference of generated 10^3..10^6-node graphs) in
   nodes/s, and its growth per decade (10.0x is linear).  Goal (issue 2): >= 200,000 nodes/s.
2. Compile-time scaling: llama3.1-405b (126, 252, 504 layers) for hopper (dgx-h200, --tp 8, 8
   devices, HBM scaled with the layers so that the longer models fit) and lpu (groq-pod-v1, one chip per slice of the model: 4,011 .. 16,000 devices),
   with the growth exponent log(t504/t126)/log(4) (goal <= 1.1) and each compile against
   the 0.3 s goal.
2b. Every full-size example for every target and its multi-device machines (examples()): wall and
    user cpu seconds of each compile (median of BENCH_PAIRS) against the 0.3 s goal.
3. Every benchmark program in BUILD/bench/ (MatMul kernel vs cblas_sgemm in pairs, quantize).
4. End to end against OpenBLAS: a 1x4096x14336 MatMul plan (`aicc run --repeat`, steady state)
   against cblas_sgemm of the same shape, and one full-width Llama-3.1-8B layer
   (examples/bench/llama3.1-8b-layer.aig; BENCH_BIND=S=128 for a quicker one) against
   cblas_sgemm of every GEMM of its plan; ratio = cblas seconds / aicc seconds (goal >= 0.8).
5. Against onnxruntime: the OCR models (tools/fetch-models.sh) in `aicc run --repeat N` and in
   onnxruntime-node (one thread, tools/ort-time.js), steady state; onnxruntime-node is installed
   from npm into BENCH_ORT_DIR (default $TMPDIR/aicc-bench-ort) with ONNXRUNTIME_NODE_INSTALL=skip
   (the CPU library only); ratio = aicc / onnxruntime (goal <= 1.5); then the first run apart
   (plan load / session creation, and the first run, wall seconds).  Skipped, saying why,
   without npm or the models.
6. Every tools/bench-*.sh script (the interpreter on a real layer, the lpu target, MPI).
BENCH_BASELINE=PATH/aicc (e.g. the previous commit's build) adds "vs baseline" ratios to 1 and 2.
"""
import ctypes
import json
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAIRS = max(5, int(os.environ.get("BENCH_PAIRS", "5")))
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1")
ENV.setdefault("AICC_MACHINES", os.path.join(ROOT, "targets", "machines"))   # a BENCH_BASELINE copied elsewhere


def load():
    a = os.getloadavg()
    return "load average %.2f %.2f %.2f" % a


def run(cmd, out=None, quiet=False):
    """Runs cmd; returns (its children's cpu seconds, wall seconds, stdout text); quiet: no stderr."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL if quiet else None, env=ENV,
                       text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), wall, p.stdout


def paired(a, b, n=PAIRS):
    """a() and b() each return seconds; runs them in alternating pairs and returns
    (median a, median b, median of a/b pair by pair, min ratio, max ratio)."""
    ta, tb, r = [], [], []
    for i in range(n):
        if i % 2 == 0:
            x = a()
            y = b()
        else:
            y = b()
            x = a()
        ta.append(x), tb.append(y), r.append(x / y)
    return statistics.median(ta), statistics.median(tb), statistics.median(r), min(r), max(r)


def median_of(f, n=PAIRS):
    return statistics.median(f() for _ in range(n))


def baseline():
    b = os.environ.get("BENCH_BASELINE")
    return b if b and os.access(b, os.X_OK) else None


def cpu_vs_baseline(aicc, base, args):
    """Median cpu seconds of `aicc ARGS`, and with a baseline build the ratio to it in pairs ("" without)."""
    if not base:
        return median_of(lambda: run([aicc] + args)[0]), ""
    t, _, ratio, _, _ = paired(lambda: run([aicc] + args)[0], lambda: run([base] + args)[0])
    return t, "   %.3f" % ratio


def frontend(build):
    aicc = os.path.join(build, "aicc")
    gen = os.path.join(build, "bench", "graphs")
    os.makedirs(gen, exist_ok=True)
    base = baseline()
    print("== frontend: parse + verify + shape inference (aicc compile --emit summary), cpu s, median of %d" % PAIRS)
    print("%10s %10s %14s %12s%s" % ("nodes", "seconds", "nodes/s", "growth", "   vs baseline" if base else ""))
    prev = None
    for n in (1000, 10000, 100000, 1000000):
        path = os.path.join(gen, "g%d.aig" % n)
        if not os.path.exists(path):
            subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen-graph.py"), str(n), path],
                           check=True)
        args = ["compile", path, "--bind", "B=8", "--emit", "summary"]
        t, vs = cpu_vs_baseline(aicc, base, args)
        growth = "" if prev is None else "%.2fx" % (t / prev)
        print("%10d %10.4f %14.0f %12s%s" % (n, t, n / t, growth, vs))
        prev = t


def plan_devices(path):
    with open(path) as f:
        return sum(1 for line in f if line.startswith("device "))


def scaling(build):
    aicc = os.path.join(build, "aicc")
    base = baseline()
    model = os.path.join(ROOT, "examples", "llama3.1-405b.aig")
    tmp = tempfile.mkdtemp()
    cases = [
        ("hopper TP8", lambda L: ["--target", "hopper", "--machine", "dgx-h200",
                                  "--passes=canonicalize,place-precision,fuse,partition,schedule,plan-memory",
                                  "--tp", "8", "--precision", "fp8", "--set", "gpu.hbm.capacity=%dGB" % (141 * L // 126 + 1)]),
        ("lpu pod", lambda L: ["--target", "lpu", "--machine", "groq-pod-v1", "--set", "lpu.count=%d" % (40 * L)]),
    ]
    print("== compile-time scaling: llama3.1-405b decode (batch 1, context 1024), cpu s, median of %d; goal < 0.3 s, exponent <= 1.1"
          % PAIRS)
    print("%-12s %7s %8s %10s %8s%s" % ("target", "layers", "devices", "compile s", "goal", "   vs baseline" if base else ""))
    for name, extra in cases:
        ts = {}
        for L in (126, 252, 504):
            plan = os.path.join(tmp, "p.aip")
            args = ["compile", model, "--bind", "L=%d" % L, "--phase", "decode", "--batch", "1", "--context", "1024",
                    "--emit", "plan", "-o", plan] + extra(L)
            try:
                t, vs = cpu_vs_baseline(aicc, base, args)
            except subprocess.CalledProcessError as x:
                # a compile that fails (this build's or the baseline's) is a row saying so, not the
                # end of the bench: the section used to stop there and print nothing for the target
                who = "baseline" if x.cmd[0] != aicc else "aicc"
                err = subprocess.run(x.cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV, text=True).stderr
                why = ([l for l in err.splitlines() if "error:" in l] or [err.strip()[-100:]])[0]
                print("%-12s %7d %8s %10s %8s   %s exit %d: %s" % (name, L, "-", "-", "n/a", who, x.returncode,
                                                                  why.split("error: ", 1)[-1][:80]))
                continue
            ts[L] = t
            goal = ("met" if t < 0.3 else "MISSED") if L == 126 else ""
            print("%-12s %7d %8d %10.3f %8s%s" % (name, L, plan_devices(plan), t, goal, vs))
            sys.stdout.flush()
        if 126 in ts and 504 in ts:
            print("%-12s growth exponent 126 -> 504 layers: %.2f (%s)" % (
                name, math.log(ts[504] / ts[126]) / math.log(4), "met" if ts[504] / ts[126] <= 4 ** 1.1 else "MISSED"))
        else:
            print("%-12s growth exponent: not measured (a compile failed)" % name)
    shutil.rmtree(tmp, ignore_errors=True)


# Machines of each target: its own one-device machine (None: the target's default), then the
# multi-device ones a model too large for it is spread over (the partition pass's --tp/--pp).
EXAMPLE_MACHINES = {
    "reference": [None], "ampere": [None, "dgx-a100"], "hopper": [None, "dgx-h200"],
    "blackwell": [None, "dgx-b200", "gb200-nvl72"], "tpu": [None, "tpu-v5p-64"], "lpu": [None, "groq-pod-v1"],
    "vera-rubin": [None], "wafer": [None, "cs3-cluster"], "hardwired": [None],
}


def examples(build):
    """Every full-size example (examples/*.aig, prefill of 128 tokens, batch 1) for every target, on
    the target's default machine and on each multi-device machine of EXAMPLE_MACHINES (-O1, the
    default pipeline): per pair the median of BENCH_PAIRS compiles' wall seconds and user cpu
    seconds (the machine may be loaded: wall time waits for the cpu, user time does not), goal
    < 0.3 s; a pair whose compile fails is named with the compiler's reason (a model too large
    for the machine)."""
    aicc = os.path.join(build, "aicc")
    tmp = tempfile.mkdtemp()
    binds = {"vit-b16": "B=1", "openvla-7b": "B=1,S=32", "whisper-base": "B=1,S=64"}
    print("== compile time of every full-size example for every target and machine (-O1; prefill S=128, batch 1; vit B=1,"
          " openvla S=32, whisper S=64), median of %d; goal < 0.3 s; %s" % (PAIRS, load()))
    print("%-14s %-11s %-12s %8s %8s %8s %8s" % ("model", "target", "machine", "plan MB", "wall s", "user s", "goal"))
    slow, pairs = [], 0
    for path in sorted(f for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".aig")):
        name = path[:-4]
        for target, machines in EXAMPLE_MACHINES.items():
            for m in machines:
                plan = os.path.join(tmp, "p.aip")
                args = [aicc, "compile", os.path.join(ROOT, "examples", path), "--bind", binds.get(name, "B=1,S=128"),
                        "--target", target, "--emit", "plan", "-o", plan] + (["--machine", m] if m else [])
                walls, users = [], []
                for _ in range(PAIRS):
                    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    t0 = time.perf_counter()
                    p = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV, text=True)
                    wall = time.perf_counter() - t0
                    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    if p.returncode != 0:
                        break
                    walls.append(wall), users.append(r1.ru_utime - r0.ru_utime)
                if p.returncode != 0:
                    err = [l for l in p.stderr.splitlines() if "error:" in l]
                    why = (err[0] if err else p.stderr.strip()[-100:]).split("error: ", 1)[-1][:60]
                    print("%-14s %-11s %-12s %8s %8s %8s %8s   %s" % (name, target, m or "(default)", "-", "-", "-", "n/a", why))
                    continue
                w, u = statistics.median(walls), statistics.median(users)
                pairs += 1
                if u >= 0.3:
                    slow.append("%s %s %s" % (name, target, m or "(default)"))
                print("%-14s %-11s %-12s %8.1f %8.3f %8.3f %8s" % (name, target, m or "(default)", os.path.getsize(plan) / 1e6,
                                                                 w, u, "met" if u < 0.3 else "MISSED"))
        sys.stdout.flush()
    print("   %d of %d pairs at or over 0.3 s of user cpu%s; %s" % (len(slow), pairs, (": " + "; ".join(slow)) if slow else "",
                                                                  load()))
    shutil.rmtree(tmp, ignore_errors=True)


def programs(build):
    d = os.path.join(build, "bench")
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        p = os.path.join(d, name)
        if name.startswith("bench_") and os.access(p, os.X_OK) and os.path.isfile(p):
            print("== %s" % name)
            sys.stdout.flush()
            subprocess.run([p], check=True, env=ENV)


# ---- OpenBLAS in process (the library aicc links, one thread) ----
def openblas(build):
    out = subprocess.run(["ldd", os.path.join(build, "aicc")], stdout=subprocess.PIPE, text=True).stdout
    m = re.search(r"(\S*libopenblas\S*) => (\S+)", out)
    lib = ctypes.CDLL(m.group(2) if m else "libopenblas.so.0")
    lib.openblas_set_num_threads(1)
    lib.cblas_sgemm.argtypes = [ctypes.c_int] * 6 + [ctypes.c_float, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                                                      ctypes.c_int, ctypes.c_float, ctypes.c_void_p, ctypes.c_int]
    return lib


class Gemms:
    """cblas_sgemm over a list of (batch, M, K, N), operands allocated once."""
    def __init__(self, lib, shapes):
        self.lib, self.shapes = lib, shapes
        self.a = ctypes.create_string_buffer(4 * max(m * k for _, m, k, _ in shapes))
        self.b = ctypes.create_string_buffer(4 * max(k * n for _, _, k, n in shapes))
        self.c = ctypes.create_string_buffer(4 * max(m * n for _, m, _, n in shapes))

    def __call__(self):
        t0, c0 = time.perf_counter(), time.thread_time()
        for batch, m, k, n in self.shapes:
            for _ in range(batch):
                self.lib.cblas_sgemm(101, 111, 111, m, n, k, 1.0, self.a, k, self.b, n, 0.0, self.c, n)
        self.cpu = time.thread_time() - c0    # one OpenBLAS thread: this thread's cpu seconds
        return time.perf_counter() - t0

    def flops(self):
        return sum(2.0 * b * m * k * n for b, m, k, n in self.shapes)


def plan_gemms(path):
    """(batch, M, K, N) of every MatMul of a reference plan, from its buffers' shapes."""
    dims, out = {}, []
    with open(path) as f:
        for line in f:
            m = re.match(r"buffer (\S+) .* shape=\[([0-9,]*)\]", line)
            if m:
                dims[m.group(1)] = [int(x) for x in m.group(2).split(",") if x]
                continue
            m = re.match(r"\s+kernel MatMul in=\[([^,\]]+),([^\]]+)\] out=\[([^\]]+)\]", line)
            if m:
                a, b, y = dims[m.group(1)], dims[m.group(2)], dims[m.group(3)]
                k, n = a[-1], y[-1]
                mrows = y[-2] if len(y) >= 2 else 1
                batch = 1
                for d in y[:-2]:
                    batch *= d
                if len(b) <= 2:
                    mrows, batch = mrows * batch, 1
                out.append((batch, mrows, k, n))
    return out


UNIT = {"us": 1e-6, "ms": 1e-3, "s": 1}


def steady(text, what="run", which="steady state"):
    """The steady-state (which="first": the first run's) seconds `aicc run --repeat` prints on its
    "host run" (wall) or "host cpu" line."""
    m = re.search(r"host %s .*%s ([0-9.]+) (us|ms|s)" % (what, which), text)
    return float(m.group(1)) * UNIT[m.group(2)]


def aicc_steady(cmd, cpus, first=None):
    """Runs `aicc run ... --repeat N`; returns its steady-state wall seconds, appends its cpu seconds to
    cpus and, given a dict first, its load and first-run wall seconds to first["load"], first["first"]."""
    out = run(cmd, quiet=True)[2]
    cpus.append(steady(out, "cpu"))
    if first is not None:
        m = re.search(r"host load +([0-9.]+) (us|ms|s)", out)
        first["load"].append(float(m.group(1)) * UNIT[m.group(2)])
        first["first"].append(steady(out, "run", "first"))
    return steady(out)


def cpu_ratio(num, den):
    """(median num, median den, median of num/den pair by pair) of two lists of cpu seconds."""
    return statistics.median(num), statistics.median(den), statistics.median(x / y for x, y in zip(num, den))


def vs_openblas(build):
    aicc = os.path.join(build, "aicc")
    lib = openblas(build)
    tmp = tempfile.mkdtemp()
    print("== end to end vs OpenBLAS (aicc run --repeat: steady state; cblas_sgemm of the plan's GEMMs, one thread),"
          " median of %d pairs; goal >= 0.8" % PAIRS)
    print("   " + load())
    dec = os.path.join(tmp, "decode.aig")
    with open(dec, "w") as f:
        f.write("graph main(x: f32[1, 4096]) -> (y: f32[1, 14336]) {\n"
                "  param w: f32[4096, 14336] = normal(std=0.02, seed=1)\n  y = MatMul(x, w)\n}\n")
    bind = os.environ.get("BENCH_BIND")
    cases = [("decode MatMul 1x4096x14336", dec, [], 20),
             ("Llama-3.1-8B layer" + (" --bind " + bind if bind else ""),
              os.path.join(ROOT, "examples", "bench", "llama3.1-8b-layer.aig"), ["--bind", bind] if bind else [], 2)]
    print("%-34s %10s %10s %10s %10s %8s   %s" % ("plan", "GEMM GFLOP", "aicc s", "cblas s", "ratio", "goal",
                                                 "cpu: aicc s, cblas s, ratio (cpu seconds per run)"))
    for name, model, extra, reps in cases:
        plan = os.path.join(tmp, "p.aip")
        subprocess.run([aicc, "compile", model, "--emit", "plan", "-o", plan] + extra, check=True, env=ENV,
                       stderr=subprocess.DEVNULL)
        g = Gemms(lib, plan_gemms(plan))
        cpu = {"aicc": [], "cblas": []}

        def blas():   # cblas repeated as often as aicc's steady-state runs, its median taken the same way
            walls, cpus = [], []
            for _ in range(reps):
                walls.append(g()), cpus.append(g.cpu)
            cpu["cblas"].append(statistics.median(cpus))
            return statistics.median(walls)

        tb, ta, ratio, lo, hi = paired(blas, lambda: aicc_steady([aicc, "run", plan, "--repeat", str(reps + 1)],
                                                                 cpu["aicc"]))
        cb, ca, cr = cpu_ratio(cpu["cblas"], cpu["aicc"])
        print("%-34s %10.1f %10.4f %10.4f %10.3f %8s   (pairs %.3f-%.3f)   cpu %.4f %.4f %.3f" % (
            name, g.flops() / 1e9, ta, tb, ratio, "met" if ratio >= 0.8 else "MISSED", lo, hi, ca, cb, cr))
    print("   " + load())
    shutil.rmtree(tmp, ignore_errors=True)


def ort_install():
    d = os.environ.get("BENCH_ORT_DIR", os.path.join(tempfile.gettempdir(), "aicc-bench-ort"))
    mod = os.path.join(d, "node_modules", "onnxruntime-node")
    if os.path.isdir(mod):
        return os.path.join(d, "node_modules"), None
    if not shutil.which("npm") or not shutil.which("node"):
        return None, "npm or node is not installed"
    os.makedirs(d, exist_ok=True)
    env = dict(os.environ, ONNXRUNTIME_NODE_INSTALL="skip")
    r = subprocess.run("npm init -y >/dev/null && npm install --silent onnxruntime-node@1.30.0", shell=True, cwd=d,
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        return None, "npm install onnxruntime-node failed: " + r.stdout.strip()[-200:]
    return os.path.join(d, "node_modules"), None


def vs_onnxruntime(build):
    aicc = os.path.join(build, "aicc")
    print("== vs onnxruntime-node 1.30 (one thread, steady state; aicc run --repeat), median of %d pairs; goal <= 1.5"
          % PAIRS)
    r = subprocess.run(["sh", os.path.join(ROOT, "tools", "fetch-models.sh"), os.path.join(ROOT, ".cache", "models")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        print("   skipped: " + r.stdout.strip())
        return
    assets = os.path.dirname(r.stdout.strip().splitlines()[-1])
    nm, why = ort_install()
    if why:
        print("   skipped: " + why)
        return
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import npyio
    import random
    tmp = tempfile.mkdtemp()
    print("   " + load())
    print("%-34s %10s %10s %10s %8s   %s" % ("model", "aicc s", "ort s", "ratio", "goal",
                                           "cpu: aicc s, ort s, ratio (each side's process cpu per run)"))
    env = dict(ENV, NODE_PATH=nm)
    firsts = []
    for name, file, shape, reps in (("PP-OCRv4 rec 1x3x48x320", "ch_PP-OCRv4_rec_infer.onnx", (1, 3, 48, 320), 10),
                                    ("PP-OCR cls 1x3x48x192", "ch_ppocr_mobile_v2.0_cls_infer.onnx", (1, 3, 48, 192), 50),
                                    ("PP-OCRv4 det 1x3x640x640", "ch_PP-OCRv4_det_infer.onnx", (1, 3, 640, 640), 4)):
        model = os.path.join(assets, file)
        n = 1
        for d in shape:
            n *= d
        rnd = random.Random(1)
        vals = [rnd.uniform(0, 1) for _ in range(n)]
        npy, pb, plan = (os.path.join(tmp, name.split()[1] + e) for e in (".npy", ".pb", ".aip"))
        npyio.write_npy(npy, shape, vals)
        npyio.write_pb(pb, "x", shape, vals)
        subprocess.run([aicc, "compile", model, "--shape", "x=" + ",".join(map(str, shape)), "--emit", "plan", "-o", plan],
                       check=True, env=ENV, stdout=subprocess.DEVNULL)

        cpu = {"aicc": [], "ort": []}
        first = {"aicc": {"load": [], "first": []}, "ort": {"load": [], "first": []}}

        def ort():
            out = subprocess.run(["node", os.path.join(ROOT, "tools", "ort-time.js"), model, npy, str(reps + 1)],
                                 check=True, stdout=subprocess.PIPE, env=env, text=True).stdout
            cpu["ort"].append(float(re.search(r"cpu_steady ([0-9.e-]+)", out).group(1)))
            for k in ("load", "first"):
                first["ort"][k].append(float(re.search(r"%s ([0-9.e-]+)" % k, out).group(1)))
            return float(re.search(r" steady ([0-9.e-]+)", out).group(1))

        ta, tb, ratio, lo, hi = paired(lambda: aicc_steady([aicc, "run", plan, "--input", "x=" + pb, "--repeat",
                                                            str(reps + 1)], cpu["aicc"], first["aicc"]), ort)
        ca, cb, cr = cpu_ratio(cpu["aicc"], cpu["ort"])
        print("%-34s %10.4f %10.4f %10.2f %8s   (pairs %.2f-%.2f)   cpu %.4f %.4f %.2f" % (
            name, ta, tb, ratio, "met" if ratio <= 1.5 else "MISSED", lo, hi, ca, cb, cr))
        firsts.append((name, first))
    # the first run apart, as onnxruntime users read it: session creation (onnxruntime: parsing and
    # optimising the model; aicc: reading the compiled plan and binding its constants, the compile
    # itself apart) and the first run, each side's median over the same pairs, wall seconds
    print("%-34s %10s %10s %10s %10s %10s %10s" % ("first run (wall s, median)", "aicc load", "aicc 1st", "ort load",
                                                 "ort 1st", "load ratio", "1st ratio"))
    for name, f in firsts:
        m = {side: {k: statistics.median(v) for k, v in f[side].items()} for side in f}
        print("%-34s %10.4f %10.4f %10.4f %10.4f %10.2f %10.2f" % (
            name, m["aicc"]["load"], m["aicc"]["first"], m["ort"]["load"], m["ort"]["first"],
            statistics.median(x / y for x, y in zip(f["aicc"]["load"], f["ort"]["load"])),
            statistics.median(x / y for x, y in zip(f["aicc"]["first"], f["ort"]["first"]))))
    print("   " + load())
    shutil.rmtree(tmp, ignore_errors=True)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    only = sys.argv[2].split(",") if len(sys.argv) > 2 else None
    sections = [("frontend", frontend), ("scaling", scaling), ("examples", examples), ("programs", programs),
                ("openblas", vs_openblas),
                ("onnxruntime", vs_onnxruntime)]
    print("bench: " + load() + ", %d pairs" % PAIRS)
    for name, f in sections:
        if only is None or name in only:
            f(build)
            sys.stdout.flush()
    if only is None or "scripts" in only:
        for extra in sorted(os.listdir(os.path.join(ROOT, "tools"))):   # bench-extra.sh, bench-lpu.sh, ...
            if extra.startswith("bench-") and extra.endswith(".sh"):
                subprocess.run(["sh", os.path.join(ROOT, "tools", extra), build], check=True)
    print("bench: " + load())


if __name__ == "__main__":
    main()
