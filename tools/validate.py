#!/usr/bin/env python3
"""tools/validate.py BUILD [--write-bands FILE] [--only SUBSTR] [--cases FILE]: the public validation set (`make validate`).

Compares aicc's predictions with published measurements.  The cases are data, tools/validate/cases.json:
every row gives the exact setup (model and its --bind, precision, KV-cache format, batch, prompt/output
lengths or context, tensor parallelism, machine), the published figure with its unit, and the source
(URL and what was measured); each group says how the prediction is converted to the published unit.

Two sections, kept apart on purpose (docs/machines.md, "Rule against fitting"):
  kernel      one-kernel measurements (GEMM, attention).  Machine constants may be derived from these
              rows, and docs/machines.md names the rows each constant comes from.
  end-to-end  serving measurements (TTFT, static-batch throughput, per-user decode rates).  Validation
              only: no machine constant is ever chosen to match one.

Kinds of case and how each is predicted:
  gemm         a one-node MatMul graph, `aicc run --timing-only`: 2*M*N*K / latency (GPU kernel rows
               are kernel durations: compiled with the launch latencies set to 0).  A group timed
               by wall clock around a Python call (timeit) names a `timeit_floor` case of the same
               page whose kernel is negligible: the host dispatch time, its measured seconds minus
               the floor case's predicted kernel time, is added to every row's prediction
  attn         a one-node Attention graph: 4*B*H*S*S*D (x0.5 causal) / latency
  ttft         `--phase prefill --batch B --context ISL` of the model: TTFT = the step's latency
  throughput   static batching: B*OSL / (TTFT(B, ISL) + (OSL-1)*TPOT(B, ISL+OSL/2)) / TP, TPOT from
               `--phase decode --context ISL+OSL/2` (TPOT is linear in the context)
  decode_rate  per-user tokens/s = 1 / TPOT(B, context); an LPU row also prints the chips its plan fills
               beside the measured deployment's (a row's `deployment`: `chips` and `what`, its source; else "not
               published"), so a plan on fewer chips than the deployment that is faster still shows
  batch_latency  one static batch's end-to-end time (vLLM benchmark_latency): TTFT(B, ISL) + (OSL-1) *
               TPOT(B, ISL+OSL/2) in ms; a group's `decode_precision` (e.g. bf16+graph: vLLM captures the
               decode step in CUDA graphs, its prefill runs eagerly) prices the decode steps

A group measured through a serving framework names it (`framework`, a key of cases.json's
`frameworks`): its CPU time per engine step (`step_cpu_ms`, with the source of that component
measurement) is added once per step the measurement ran: OSL steps for batch_latency and
throughput (the prefill step and OSL-1 decode steps), one for ttft.  A later version of the framework
that runs part of that CPU work beside the GPU's step names the part (`overlapped`: its measured ms
at a few batch sizes, with its source), which is taken off at the row's batch.  It is the framework's term,
not a machine's: the GPUs' time is what aicc predicts, the framework's host time is added beside it.

A group's `set` list (machine overrides, `--set` of aicc) describes the part that was measured when
it is not a whole machine file: Ironwood's per-JAX-device GEMMs run on one of the chip's two
TensorCores, so that group halves tpu-v7.

Prints one row per case (predicted, published, signed error), then per target: median and worst |error|
over all cases, over the kernel rows and over the end-to-end rows, and the residuals per target and
kernel class (gemm, attention, memory, collective, end-to-end).  --write-bands FILE regenerates the
error-band table the compiler prints beside every predicted time (targets/bands.def): per target and
class, the median and the worst |error| of that class's rows and their count.  A case that does not
compile is listed with aicc's reason and counted as a failure.
"""
import concurrent.futures, json, os, re, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = os.path.join(ROOT, "tools", "validate", "cases.json")
# operand dtypes of the one-kernel graphs: FP8 GEMMs take bf16 operands that --precision fp8 quantizes
# (the kernel's own scaling), FP8 attention takes e4m3 tensors (FA3's FP8 path), int8 GEMMs int8 operands
GEMM_DT = {"bf16": "bf16", "fp8": "bf16", "int8": "i8"}
ATTN_DT = {"bf16": "bf16", "fp8": "f8e4m3"}
GEMM = "graph main(a: {dt}[M, K], b: {dt}[K, N]) -> (y: {out}[M, N]) {{\n  y = MatMul(a, b)\n}}\n"
ATTN = ("graph main(q: {dt}[B, H, S, D], k: {dt}[B, H, S, D], v: {dt}[B, H, S, D]) -> (y: {dt}[B, H, S, D]) {{\n"
        "  y = Attention(q, k, v) {{is_causal={c}}}\n}}\n")
CLASSES = ("gemm", "attention", "memory", "collective", "end-to-end")
FRAMEWORKS = {}   # cases.json's `frameworks`: a serving framework's per-step CPU time and its source
TARGETS = ("ampere", "hopper", "blackwell", "tpu", "lpu", "wafer", "hardwired")


class Fail(Exception):
    pass


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        msg = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[0]
        raise Fail(msg[:160])
    return p.stdout


class Aicc:
    def __init__(self, build):
        self.exe = os.path.join(build, "aicc")
        self.tmp = tempfile.mkdtemp(prefix="aicc-validate-")
        self.n = 0
        self.kv_fp8 = "--kv-format" in subprocess.run([self.exe, "compile", "--help"], capture_output=True,
                                                        text=True).stdout

    def latency(self, args, src=None, facts=None):
        """Compiles (a source text, or a model given in args) and returns the predicted step latency in s.
        With FACTS (a dict), also records the plan's chip count there (`chips`, an LPU plan's t.chips)."""
        self.n += 1
        base = os.path.join(self.tmp, "c%d" % self.n)
        if src is not None:
            open(base + ".aig", "w").write(src)
            args = [base + ".aig"] + args
        run([self.exe, "compile"] + args + ["--emit", "plan", "-o", base + ".aip"])
        if facts is not None:
            with open(base + ".aip") as f:
                m = re.search(r't\.chips="(\d+)"', f.read())
            facts["chips"] = int(m.group(1)) if m else 1
        run([self.exe, "run", base + ".aip", "--timing-only", "--report", base + ".json"])
        lat = json.load(open(base + ".json"))["latency_s"]
        for f in (".aig", ".aip", ".json"):
            if os.path.exists(base + f):
                os.unlink(base + f)
        if not lat > 0:
            raise Fail("predicted latency %r" % lat)
        return lat


def model_args(a, grp, row, phase, context, machine, precision=None):
    args = [os.path.join(ROOT, "examples", row["model"] + ".aig"), "--target", grp["target"], "--machine", machine,
            "--phase", phase, "--batch", str(row["B"]), "--context", str(context)]
    precision = precision or grp.get("precision")
    if precision:
        args += ["--precision", precision]
    if row.get("bind"):
        args += ["--bind", row["bind"]]
    if grp.get("kv") == "fp8" and a.kv_fp8:
        args += ["--kv-format", "fp8"]
    args += set_args(grp)
    tp = row.get("tp", 1)
    if grp["target"] != "lpu":
        passes = "canonicalize,place-precision,fuse,%sschedule,plan-memory" % ("partition," if tp > 1 else "")
        args += ["--passes=" + passes]
        if tp > 1:
            args += ["--tp", str(tp)]
    return args


def machine_of(grp, row):
    if "machine" in grp:
        return grp["machine"]
    return grp["machine1"] if row.get("tp", 1) == 1 else grp["machinen"]


# Kernel rows are kernel durations (CUDA events or kineto over back-to-back runs): no launch cost.
NO_LAUNCH = {"hopper": ["--set", "gpu.launch.latency=0", "--set", "gpu.graph.latency=0"],
             "ampere": ["--set", "gpu.launch.latency=0", "--set", "gpu.graph.latency=0"],
             "blackwell": ["--set", "gpu.launch.latency=0", "--set", "gpu.graph.latency=0"]}
# A kernel row is its one node as measured: -O0 (no passes), so that -O1's placement policy (the
# last MatMul of a graph kept at bf16, for one) does not change the kernel's format.
KERNEL_OPTS = ["-O0"]


def set_args(grp):
    """A group's `set` list: machine overrides of the measured part (e.g. one TensorCore of a two-core chip)."""
    return [x for kv in grp.get("set", []) for x in ("--set", kv)]


def step_cpu(grp, batch):
    """Seconds of the group's serving framework's CPU time per engine step at this batch (0: none
    named).  A framework's `overlapped` part (a later version's CPU work that runs beside the GPU's
    step, measured at a few batch sizes: `batch`, `ms`, linear between them, held at the ends) is
    taken off its `step_cpu_ms`."""
    fw = grp.get("framework")
    if not fw:
        return 0.0
    f = FRAMEWORKS[fw]
    ms = f["step_cpu_ms"]
    ov = f.get("overlapped")
    if ov:
        bs, vs = ov["batch"], ov["ms"]
        b = min(max(batch, bs[0]), bs[-1])
        i = next(j for j in range(len(bs) - 1) if b <= bs[j + 1])
        ms -= vs[i] + (vs[i + 1] - vs[i]) * (b - bs[i]) / (bs[i + 1] - bs[i])
    return ms * 1e-3


def predict(a, grp, row):
    kind, m = grp["kind"], machine_of(grp, row)
    nl = NO_LAUNCH.get(grp["target"], []) + (KERNEL_OPTS if kind in ("gemm", "attn") else []) + set_args(grp)
    if kind == "gemm":
        dt = GEMM_DT[grp["dtype"]]
        src = GEMM.format(dt=dt, out=dt)

        def gemm_lat(M, N, K):
            return a.latency(["--target", grp["target"], "--machine", m, "--precision", grp["precision"],
                              "--bind", "M=%d,N=%d,K=%d" % (M, N, K)] + nl, src)
        lat = gemm_lat(row["M"], row["N"], row["K"])
        floor = grp.get("timeit_floor")
        if floor:   # wall-clock timing (timeit): add the host's dispatch time, measured by the floor case
            lat += floor["seconds"] - gemm_lat(floor["M"], floor["N"], floor["K"])
        return 2.0 * row["M"] * row["N"] * row["K"] / lat / 1e12
    if kind == "attn":
        src = ATTN.format(dt=ATTN_DT[grp["dtype"]], c=row["causal"])
        lat = a.latency(["--target", grp["target"], "--machine", m, "--precision", grp["precision"],
                         "--bind", "B=%d,H=%d,S=%d,D=%d" % (row["B"], row["H"], row["S"], row["D"])] + nl, src)
        return 4.0 * row["B"] * row["H"] * row["S"] ** 2 * row["D"] * (0.5 if row["causal"] else 1) / lat / 1e12
    if kind == "ttft":
        return (a.latency(model_args(a, grp, row, "prefill", row["isl"], m)) + step_cpu(grp, row["B"])) * 1e3
    if kind == "throughput":
        ttft = a.latency(model_args(a, grp, row, "prefill", row["isl"], m))
        tpot = a.latency(model_args(a, grp, row, "decode", row["isl"] + row["osl"] // 2, m))
        return row["B"] * row["osl"] / (ttft + (row["osl"] - 1) * tpot + row["osl"] * step_cpu(grp, row["B"])) / row.get("tp", 1)
    if kind == "batch_latency":
        ttft = a.latency(model_args(a, grp, row, "prefill", row["isl"], m))
        tpot = a.latency(model_args(a, grp, row, "decode", row["isl"] + row["osl"] // 2, m, grp.get("decode_precision")))
        return (ttft + (row["osl"] - 1) * tpot + row["osl"] * step_cpu(grp, row["B"])) * 1e3
    if kind == "decode_rate":
        if grp["target"] != "lpu":
            return 1.0 / a.latency(model_args(a, grp, row, "decode", row["context"], m))
        facts = {}   # an LPU plan's chips, printed beside the chips the measured deployment used
        rate = 1.0 / a.latency(model_args(a, grp, row, "decode", row["context"], m), facts=facts)
        dep = row.get("deployment")
        return rate, "plan: %d chips; deployment: %s" % (facts["chips"], "%d chips (reported)" % dep["chips"] if dep
                                                           else "chip count not published")
    raise Fail("unknown case kind %s" % kind)


def describe(grp, row):
    k = grp["kind"]
    if k == "gemm":
        return "%s %dx%dx%d %s" % (grp["source"], row["M"], row["N"], row["K"], grp["dtype"])
    if k == "attn":
        return "%s d%d %s S=%d %s" % (grp["source"], row["D"], "causal" if row["causal"] else "dense", row["S"], grp["dtype"])
    tp = " tp%d" % row["tp"] if row.get("tp", 1) > 1 else ""
    if k == "ttft":
        return "%s %s TTFT isl=%d%s" % (grp["gpu"], row["name"], row["isl"], tp)
    if k == "throughput":
        return "%s %s B=%d %d/%d%s" % (grp["gpu"], row["name"], row["B"], row["isl"], row["osl"], tp)
    if k == "batch_latency":
        return "%s %s latency B=%d %d/%d%s" % (grp["gpu"], row["name"], row["B"], row["isl"], row["osl"], tp)
    return "%s B=%d ctx=%d" % (row["name"], row["B"], row["context"])


def stats(errs):
    e = [abs(x) for x in errs]
    return (statistics.median(e), max(e)) if e else (float("nan"), float("nan"))


def main():
    argv = sys.argv[1:]
    build = argv[0] if argv and not argv[0].startswith("--") else "build"
    bands = argv[argv.index("--write-bands") + 1] if "--write-bands" in argv else None
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    cases = argv[argv.index("--cases") + 1] if "--cases" in argv else CASES   # another set (the tests')
    data = json.load(open(cases))
    FRAMEWORKS.update(data.get("frameworks", {}))
    for grp in data["groups"]:
        if grp.get("framework") and grp["framework"] not in FRAMEWORKS:
            sys.exit("%s: group %s names framework %r, which `frameworks` does not define" % (cases, grp["source"], grp["framework"]))
    a = Aicc(build)
    t0 = time.time()
    jobs = []
    for grp in data["groups"]:
        for row in grp["rows"]:
            if only and only not in describe(grp, row) and only != grp["target"]:
                continue
            jobs.append((grp, row))

    def one(job):
        grp, row = job
        try:
            p = predict(a, grp, row)
            return (p if isinstance(p, tuple) else (p, None)), None
        except Fail as e:
            return (None, None), str(e)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
        results = list(ex.map(one, jobs))
    print("%-10s %-10s %-44s %11s %11s %8s  %s" % ("target", "section", "case", "predicted", "published", "error", "unit"))
    per = {}
    fails = []
    for (grp, row), ((pred, note), why) in zip(jobs, results):
        name = describe(grp, row)
        if pred is None:
            print("%-10s %-10s %-44s %11s %11.5g %8s  %s  (%s)" % (grp["target"], grp["section"], name, "n/a", row["value"],
                                                                   "fail", grp["unit"], why))
            fails.append((grp["target"], name, why))
            continue
        err = (pred - row["value"]) / row["value"]
        per.setdefault(grp["target"], []).append((grp["section"], grp["cls"], err))
        # a row whose published setup the model cannot match says why (`unmatched`), or what is
        # unknown of it (`caveat`); it stays in the statistics
        notes = [note] if note else []
        for key, say in (("unmatched", "setup not matched: "), ("caveat", "caveat: ")):
            why = row.get(key, grp.get(key))
            if why:
                notes.append(say + why)
        print("%-10s %-10s %-44s %11.5g %11.5g %+7.1f%%  %s%s" % (grp["target"], grp["section"], name, pred, row["value"],
                                                               100 * err, grp["unit"], "".join("  (%s)" % n for n in notes)))
    print()
    print("%-10s %6s %6s %9s %9s   %-20s %-20s" % ("target", "cases", "failed", "median", "worst", "kernel med/worst",
                                                   "end-to-end med/worst"))
    for t in TARGETS:
        rows = per.get(t, [])
        nf = sum(1 for f in fails if f[0] == t)
        m, w = stats([e for _, _, e in rows])
        km, kw = stats([e for s, _, e in rows if s == "kernel"])
        em, ew = stats([e for s, _, e in rows if s == "end-to-end"])
        print("%-10s %6d %6d %8.1f%% %8.1f%%   %6.1f%% / %6.1f%%     %6.1f%% / %6.1f%%" % (
            t, len(rows) + nf, nf, 100 * m, 100 * w, 100 * km, 100 * kw, 100 * em, 100 * ew))
    print()
    print("residuals per target and class (median / worst |error|, cases): the error bands")
    table = []
    for t in TARGETS:
        for c in CLASSES:
            e = [x for _, cl, x in per.get(t, []) if cl == c]
            if e:
                m, w = stats(e)
                table.append((t, c, m, w, len(e)))
                print("  %-10s %-11s %6.1f%% / %6.1f%%  (%d)" % (t, c, 100 * m, 100 * w, len(e)))
    print("%d cases, %d failed, %.1f s" % (len(jobs), len(fails), time.time() - t0))
    if bands:
        with open(bands, "w") as f:
            f.write("/* targets/bands.def: the error bands of the cost models, generated by `make validate-bands`\n"
                    " * (tools/validate.py --write-bands) from the residuals of the public validation set\n"
                    " * (tools/validate/cases.json); do not edit.  BAND(target, class, median, worst, cases): the\n"
                    " * median and the worst |relative error| of that target's cases of that class. */\n")
            for t, c, m, w, n in table:
                f.write("BAND(\"%s\", \"%s\", %.4f, %.4f, %d)\n" % (t, c, m, w, n))


if __name__ == "__main__":
    main()
