#!/usr/bin/env python3
"""tools/check-summary.py: check the JSON of `aicc compile MODEL --emit summary` (on stdin)
against a model's published size.

    aicc compile examples/llama3.1-8b.aig --bind B=1,S=16 --emit summary \\
        | python3 tools/check-summary.py --expect 8.03e9 --rtol 0.005 --dtype bf16

Checks, each with its own message:
  * "parameters" is within --rtol (relative) of --expect;
  * "parameter_bytes" is within --bytes-rtol of parameters x the size of --dtype (the dtype the
    model's weights are declared in; a few tensors in another dtype stay inside the tolerance);
  * "flops" is positive (all dimensions were bound and every node has a FLOP rule).
Prints one line per check and exits 0 when all pass, 1 when one fails, 2 on unusable input.
"""
import argparse
import json
import sys

# Bytes per element of the plain dtypes (runtime/dtype.def); sub-byte types count fractionally.
DTYPE_BYTES = {
    "f64": 8, "f32": 4, "tf32": 4, "bf16": 2, "f16": 2, "f8e4m3": 1, "f8e5m2": 1,
    "f6e3m2": 0.75, "f6e2m3": 0.75, "f4e2m1": 0.5, "e8m0": 1, "i64": 8, "i32": 4, "i16": 2,
    "i8": 1, "i4": 0.5, "u8": 1, "bool": 1,
}


def human(n):
    """8030261248 -> '8.030 B'."""
    for div, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= div:
            return "%.3f %s" % (n / div, unit)
    return "%g" % n


def number(doc, key):
    v = doc.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError('summary has no numeric "%s" (got %r)' % (key, v))
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--expect", type=float, required=True,
                    help="published parameter count, e.g. 8.03e9")
    ap.add_argument("--rtol", type=float, default=0.005,
                    help="relative tolerance on parameters (default 0.005)")
    ap.add_argument("--dtype", default="bf16", choices=sorted(DTYPE_BYTES),
                    help="dtype of the weights (default bf16)")
    ap.add_argument("--bytes-rtol", type=float, default=0.01,
                    help="relative tolerance on parameter_bytes (default 0.01)")
    args = ap.parse_args()

    try:
        doc = json.load(sys.stdin)
        if not isinstance(doc, dict):
            raise ValueError("summary is not a JSON object")
        params = number(doc, "parameters")
        pbytes = number(doc, "parameter_bytes")
        # null when dimensions were left unbound (the summary lists them in "unbound_dims")
        flops = 0 if doc.get("flops", 0) is None else number(doc, "flops")
    except ValueError as e:   # json.JSONDecodeError is a ValueError
        print("check-summary: error: unusable summary on stdin: %s" % e, file=sys.stderr)
        return 2

    name = doc.get("graph", "?")
    failed = 0
    rel = params / args.expect - 1
    if abs(rel) <= args.rtol:
        print("ok: %s: parameters %d (%s) vs published %s: %+.3f%% (tolerance %.2f%%)"
              % (name, params, human(params), human(args.expect), 100 * rel, 100 * args.rtol))
    else:
        print("check-summary: error: %s: parameters %d (%s) is %+.3f%% from the published %s, "
              "outside the tolerance of %.2f%%"
              % (name, params, human(params), 100 * rel, human(args.expect), 100 * args.rtol),
              file=sys.stderr)
        failed += 1

    want = params * DTYPE_BYTES[args.dtype]
    brel = pbytes / want - 1 if want else float("inf")
    if abs(brel) <= args.bytes_rtol:
        print("ok: %s: parameter_bytes %d = parameters x %g (%s) %+.3f%%"
              % (name, pbytes, DTYPE_BYTES[args.dtype], args.dtype, 100 * brel))
    else:
        print("check-summary: error: %s: parameter_bytes %d is not parameters x %g (%s) = %d "
              "(%+.3f%%, tolerance %.2f%%)"
              % (name, pbytes, DTYPE_BYTES[args.dtype], args.dtype, want, 100 * brel,
                 100 * args.bytes_rtol), file=sys.stderr)
        failed += 1

    if flops > 0:
        print("ok: %s: flops %.4g" % (name, flops))
    else:
        unbound = doc.get("unbound_dims")
        print("check-summary: error: %s: flops is %s, expected > 0 (%s)"
              % (name, "null" if unbound else repr(flops),
                 "unbound: " + ", ".join(unbound) if unbound else "are all dimensions bound?"),
              file=sys.stderr)
        failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
