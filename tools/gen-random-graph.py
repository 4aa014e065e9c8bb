#!/usr/bin/env python3
"""tools/gen-random-graph.py: seeded random valid .aig graphs for testing the passes.

  gen-random-graph.py --seed N [--nodes K]            write one graph to stdout
  gen-random-graph.py ... --mlp                       also emit Megatron MatMul pairs (partition tests)
  gen-random-graph.py --seeds A:B --run "CMD {}"      write each graph A..B-1 to a temporary
                                                      file, run CMD with {} replaced by its
                                                      path, print "N passed, N failed"

A graph is a pool of f32[4, 8] values (inputs and results) combined by randomly chosen
statements: elementwise unary and binary ops (with bias vectors, scalar constants and the
identities x+0 and x*1), MatMul by [8, 8] weights, row reductions broadcast back, Transpose
pairs and Reshape/Squeeze/Unsqueeze round trips, duplicated expressions (CSE bait), dead
statements, and the decomposed patterns the passes recognise (LayerNorm, RMSNorm, GELU erf and
tanh, SiLU, Silu*up) sometimes with an intermediate shared.  Annotations (@nofuse,
@device(gpu1)) appear now and then.  Every value has the type f32[4, 8] unless said otherwise,
so every graph is valid by construction; weights are seeded normal initialisers, so the graphs
also run.  The same seed always gives the same graph."""
import argparse
import os
import random
import subprocess
import sys
import tempfile

UNARY = ["Relu", "Tanh", "Sigmoid", "Exp", "Neg", "Abs", "Gelu", "Silu", "Erf", "Identity"]
BINARY = ["Add", "Sub", "Mul", "Max", "Min"]


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.pool = ["x0", "x1"]
        self.lines = []
        self.params = []
        self.n = 0

    def fresh(self, p="v"):
        self.n += 1
        return "%s%d" % (p, self.n)

    def pick(self):
        # favour recent values so chains form, but reuse older ones (multiple users)
        k = len(self.pool)
        return self.pool[max(0, k - 1 - int(self.r.expovariate(0.5)))] if k else "x0"

    def param(self, shape):
        name = self.fresh("w")
        self.params.append("  param %s: f32[%s] = normal(std=0.3, seed=%d)" % (name, shape, self.n))
        return name

    def emit(self, rhs, annot="", pool=True):
        name = self.fresh()
        self.lines.append("  %s%s = %s" % (annot, name, rhs))
        if pool:
            self.pool.append(name)
        return name

    def annot(self):
        x = self.r.random()
        return "@nofuse " if x < 0.04 else "@device(gpu1) " if x < 0.07 else ""

    # ---- statement kinds ----
    def unary(self):
        op = self.r.choice(UNARY)
        arg = self.pick()
        if op in ("Exp",):
            arg = self.emit("Tanh(%s)" % arg)
        self.emit("%s(%s)" % (op, arg), self.annot())

    def binary(self):
        a, b = self.pick(), self.pick()
        k = self.r.random()
        if k < 0.2:
            b = self.param("8")
        elif k < 0.3:
            b = "[0.0]" if self.r.random() < 0.5 else "[1.0]"
            op = "Add" if b == "[0.0]" else "Mul"
            self.emit("%s(%s, %s)" % (op, a, b))
            return
        self.emit("%s(%s, %s)" % (self.r.choice(BINARY), a, b), self.annot())

    def matmul(self):
        h = self.emit("MatMul(%s, %s)" % (self.pick(), self.param("8, 8")))
        if self.r.random() < 0.6:
            h = self.emit("Add(%s, %s)" % (h, self.param("8")))
        if self.r.random() < 0.5:
            self.emit("%s(%s)" % (self.r.choice(["Relu", "Gelu", "Silu"]), h), self.annot())

    def reduce(self):
        x = self.pick()
        m = self.emit("%s(%s) {axes=[-1]}" % (self.r.choice(["ReduceMean", "ReduceMax", "ReduceSum"]), x), pool=False)
        self.emit("Sub(%s, %s)" % (x, m))

    def shapes(self):
        x = self.pick()
        if self.r.random() < 0.5:
            t = self.emit("Transpose(%s) {perm=[1, 0]}" % x, pool=False)
            self.emit("Transpose(%s) {perm=[1, 0]}" % t)
        else:
            u = self.emit("Unsqueeze(%s, [0])" % x, pool=False)
            f = self.emit("Reshape(%s, [2, 16])" % u, pool=False)
            self.emit("Reshape(%s, [4, 8])" % f)

    def dup(self):
        a, b = self.pick(), self.pick()
        op = self.r.choice(["Add", "Mul"])
        self.emit("%s(%s, %s)" % (op, a, b))
        self.emit("%s(%s, %s)" % (op, b, a))

    def dead(self):
        self.emit("Exp(%s)" % self.pick(), pool=False)

    def share(self, v):
        """Sometimes give an intermediate a second reader, so the pattern must be refused."""
        if self.r.random() < 0.2:
            self.emit("Add(%s, %s)" % (v, self.pick()))

    def layernorm(self):
        x = self.pick()
        m = self.emit("ReduceMean(%s) {axes=[-1]}" % x, pool=False)
        d = self.emit("Sub(%s, %s)" % (x, m), pool=False)
        p = self.emit("Pow(%s, [2.0])" % d, pool=False)
        v = self.emit("ReduceMean(%s) {axes=[-1]}" % p, pool=False)
        e = self.emit("Add(%s, [1e-5])" % v, pool=False)
        s = self.emit("Sqrt(%s)" % e, pool=False)
        n = self.emit("Div(%s, %s)" % (d, s))
        self.share(d)
        g = self.emit("Mul(%s, %s)" % (n, self.param("8")))
        self.emit("Add(%s, %s)" % (g, self.param("8")))

    def rmsnorm(self):
        x = self.pick()
        q = self.emit("Mul(%s, %s)" % (x, x), pool=False)
        m = self.emit("ReduceMean(%s) {axes=[-1]}" % q, pool=False)
        e = self.emit("Add(%s, [1e-6])" % m, pool=False)
        s = self.emit("Sqrt(%s)" % e, pool=False)
        r = self.emit("Reciprocal(%s)" % s, pool=False)
        self.share(s)
        n = self.emit("Mul(%s, %s)" % (x, r))
        self.emit("Mul(%s, %s)" % (self.param("8"), n))

    def gelu(self):
        x = self.pick()
        if self.r.random() < 0.5:
            a = self.emit("Div(%s, [1.4142135381698608])" % x, pool=False)
            f = self.emit("Erf(%s)" % a, pool=False)
        else:
            c = self.emit("Pow(%s, [3.0])" % x, pool=False)
            k = self.emit("Mul([0.044715], %s)" % c, pool=False)
            s = self.emit("Add(%s, %s)" % (x, k), pool=False)
            t = self.emit("Mul(%s, [0.7978845608028654])" % s, pool=False)
            f = self.emit("Tanh(%s)" % t, pool=False)
        self.share(f)
        o = self.emit("Add(%s, [1.0])" % f, pool=False)
        h = self.emit("Mul(%s, %s)" % (x, o), pool=False)
        self.emit("Mul(%s, [0.5])" % h)

    def gate(self):
        x = self.pick()
        s = self.emit("Sigmoid(%s)" % x, pool=False)
        self.share(s)
        y = self.emit("Mul(%s, %s)" % (x, s))
        if self.r.random() < 0.5:
            self.emit("Mul(%s, %s)" % (self.emit("Silu(%s)" % y, pool=False), self.pick()))

    def mlp(self):
        """A Megatron pair for the partition pass: [8, 16] up (and gate), activation, [16, 8] down."""
        x = self.pick()
        h = self.emit("MatMul(%s, %s)" % (x, self.param("8, 16")), pool=False)
        k = self.r.random()
        if k < 0.3:
            u = self.emit("MatMul(%s, %s)" % (x, self.param("8, 16")), pool=False)
            h = self.emit("SwiGLU(%s, %s)" % (h, u), pool=False)
        elif k < 0.6:
            h = self.emit("Add(%s, %s)" % (h, self.param("16")), pool=False)
            h = self.emit("%s(%s)" % (self.r.choice(["Relu", "Gelu", "Silu", "Tanh"]), h), pool=False)
        else:
            h = self.emit("Gelu(%s)" % h, pool=False)
        self.emit("MatMul(%s, %s)" % (h, self.param("16, 8")))

    def build(self, nodes, mlp=False):
        kinds = [self.unary] * 4 + [self.binary] * 4 + [self.matmul] * 2 + [self.reduce, self.shapes, self.dup,
                 self.dead, self.layernorm, self.rmsnorm, self.gelu, self.gate] + [self.mlp] * (3 if mlp else 0)
        while self.n < nodes:
            self.r.choice(kinds)()
        outs = sorted(set([self.pool[-1]] + self.r.sample(self.pool[2:], min(2, len(self.pool) - 2))))
        head = "graph main(x0: f32[4, 8], x1: f32[4, 8]) -> (%s) {" % ", ".join("%s: f32[4, 8]" % o for o in outs)
        return "\n".join([head] + self.params + self.lines + ["}", ""])


def run_many(args):
    a, b = (int(s) for s in args.seeds.split(":"))
    passed = failed = 0
    with tempfile.TemporaryDirectory() as d:
        for seed in range(a, b):
            path = os.path.join(d, "random-%d.aig" % seed)
            with open(path, "w") as f:
                f.write("# tools/gen-random-graph.py --seed %d --nodes %d\n" % (seed, args.nodes))
                f.write(Gen(seed).build(args.nodes, args.mlp))
            p = subprocess.run(args.run.replace("{}", path), shell=True, capture_output=True, text=True)
            if p.returncode == 0:
                passed += 1
            else:
                failed += 1
                print("FAIL seed %d: %s" % (seed, (p.stderr or p.stdout).strip()[:2000]))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--nodes", type=int, default=40)
    ap.add_argument("--seeds", help="A:B, with --run")
    ap.add_argument("--mlp", action="store_true", help="also MatMul pairs ([8,16] then [16,8]) for tensor parallelism")
    ap.add_argument("--run", help="command; {} is the graph's path")
    args = ap.parse_args()
    if args.seeds and args.run:
        sys.exit(run_many(args))
    sys.stdout.write(Gen(args.seed).build(args.nodes, args.mlp))


if __name__ == "__main__":
    main()
