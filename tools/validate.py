#!/usr/bin/env python3
"""tools/validate.py BUILD: compare the GPU and TPU targets' predicted kernel times with published
measurements (`make validate`).  Each case compiles a one-kernel graph for a target and machine,
times it with `aicc run --timing-only` (the target's registered cost hook) and prints predicted
and measured TFLOP/s and the error.  Sources, one per group of cases:

[deepgemm] DeepSeek DeepGEMM README, "Normal GEMMs for dense models", H800 SXM5, NVCC 12.8
           (Feb 2025): https://github.com/deepseek-ai/DeepGEMM ; H800 has H100 SXM's SMs,
           clock, tensor rates and HBM3 (hardware.md §1b: only NVLink differs), so h100-sxm.
[fa3]      FlashAttention-3 (Shah et al., arXiv 2407.08608) Fig. 5, forward, head dim 128,
           BF16, H100 80GB SXM5, batch x seqlen = 16k, hidden 2048 (16 heads); values as read
           off the figure: https://subtext.edge.nugit.net/image/e27582d2db385c9bac87ebc92343d2452b7c01d5d934e596c90172b346d00d42
           (non-causal) and .../4ec6690918d4df7a49f27715412cc425602eb075dfe3f7821cddc4a74f058ca1 (causal).
[fa4]      FlashAttention-4 (Zadouri et al., arXiv 2603.05451) abstract: up to 1613 TFLOP/s
           forward, BF16, B200 (https://deeplearn.org/arxiv/711026/); the configuration of the peak
           is assumed to be head dim 128, non-causal, the longest sequence (16k).
[jax-mm]   JAX documentation, "Pallas TPU: Your First Matmul", outputs of the XLA `jnp.matmul`
           cell, TPU v5e, bf16 (https://jax.readthedocs.io/en/latest/pallas/tpu/matmul.html):
           4096^3 in 0.827 ms, 8192^3 in 6.047 ms.  The 1024^3 row (119 us) is left out: the page's
           timeit loop includes Python dispatch, which the page itself says bounds small kernels.
"""
import json, os, subprocess, sys, tempfile

GEMM = "graph main(a: {dt}[M, K], b: {dt}[K, N]) -> (y: bf16[M, N]) {{\n  y = MatMul(a, b)\n}}\n"
ATTN = ("graph main(q: bf16[B, H, S, D], k: bf16[B, H, S, D], v: bf16[B, H, S, D]) -> (y: bf16[B, H, S, D]) {{\n"
        "  y = Attention(q, k, v) {{is_causal={c}}}\n}}\n")

CASES = []
for m, n, k, tf in [(64, 2112, 7168, 206), (128, 2112, 7168, 352), (128, 7168, 16384, 645),
                    (128, 4096, 7168, 533), (4096, 2112, 7168, 1058), (4096, 7168, 16384, 1358),
                    (4096, 4096, 7168, 1304), (4096, 7168, 2048, 1025)]:
    CASES.append(("deepgemm fp8 %dx%dx%d" % (m, n, k), "hopper", "h100-sxm", "fp8", GEMM.format(dt="bf16"),
                  "M=%d,N=%d,K=%d" % (m, n, k), 2.0 * m * n * k, tf))
for causal, vals in [(0, [467, 565, 625, 638, 646, 648]), (1, [292, 423, 521, 579, 602, 616])]:
    for s, tf in zip([512, 1024, 2048, 4096, 8192, 16384], vals):
        fl = 4.0 * (16384 // s) * 16 * s * s * 128 * (0.5 if causal else 1)
        CASES.append(("fa3 hd128 %s S=%d" % ("causal" if causal else "dense", s), "hopper", "h100-sxm", "bf16",
                      ATTN.format(c=causal), "B=%d,H=16,S=%d,D=128" % (16384 // s, s), fl, tf))
for n, tf in [(4096, 166.1), (8192, 181.8)]:
    CASES.append(("jax-mm xla bf16 %d^3 v5e" % n, "tpu", "tpu-v5e", "bf16", GEMM.format(dt="bf16"),
                  "M=%d,N=%d,K=%d" % (n, n, n), 2.0 * n ** 3, tf))
CASES.append(("fa4 hd128 dense S=16384", "blackwell", "b200", "bf16", ATTN.format(c=0), "B=1,H=16,S=16384,D=128",
              4.0 * 16 * 16384 * 16384 * 128, 1613))


def main():
    aicc = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "build", "aicc")
    tmp = tempfile.mkdtemp()
    print("%-34s %10s %10s %8s" % ("case", "predicted", "measured", "error"))
    errs = []
    for name, target, machine, prec, src, bind, flops, measured in CASES:
        g, plan, rep = (os.path.join(tmp, f) for f in ("g.aig", "g.aip", "r.json"))
        open(g, "w").write(src)
        subprocess.run([aicc, "compile", g, "--target", target, "--machine", machine, "--precision", prec,
                        "--bind", bind, "--emit", "plan", "-o", plan], check=True)
        subprocess.run([aicc, "run", plan, "--timing-only", "--report", rep], check=True, stdout=subprocess.DEVNULL)
        pred = flops / json.load(open(rep))["latency_s"] / 1e12
        err = (pred - measured) / measured
        errs.append(abs(err))
        print("%-34s %7.0f TF %7.0f TF %+7.1f%%" % (name, pred, measured, 100 * err))
    within = sum(e <= 0.15 for e in errs)
    print("%d cases: mean |error| %.1f%%, max %.1f%%, %d within 15%%" %
          (len(errs), 100 * sum(errs) / len(errs), 100 * max(errs), within))


if __name__ == "__main__":
    main()
