"""testsuite/mpi/Inputs/rss.py BASE.json ONE.json MANY.json: the sharded-loading check.  Each file
is the --report of an `aicc run --mpi` job: BASE a one-rank run of a plan with almost no weights
(the process's own memory), ONE a one-rank run of the big plan (every weight), MANY the big plan
on N ranks.  Each of the N ranks must hold about 1/N of the weights: its peak RSS less the base
at most 1/N + 0.1 of ONE's less the base (the 0.1: what the big plan's run holds besides weights and
the small one's does not: activations, OpenBLAS's buffers; about 0.05 here).  A rank that read
another's weights would be at 2/N or more.  Prints one line per rank and exits 1 on a rank over."""
import json
import sys

rss = lambda path: [r["peak_rss_bytes"] for r in json.load(open(path))["ranks"]]
base, one, many = rss(sys.argv[1])[0], rss(sys.argv[2])[0], rss(sys.argv[3])
whole = one - base
if whole < 150e6:
    sys.exit("rss.py: the one-rank run holds only %.0f MB above the base: too little to test" % (whole / 1e6))
n, ok = len(many), True
for k, r in enumerate(many):
    frac = (r - base) / whole
    good = frac <= 1.0 / n + 0.1
    ok &= good
    print("rank %d of %d: %.2f of the weights (at most %.2f): %s" % (k, n, frac, 1.0 / n + 0.1, "ok" if good else "OVER"))
sys.exit(0 if ok else 1)
