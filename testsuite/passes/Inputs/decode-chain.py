"""Checks a decode step with its KV cache against the model without a cache: the prefill of
tokens 0..S-1 writes its caches (present_*), one decode step reads them as past_* for token S,
and its logits must equal the last row of the plain model's logits over tokens 0..S (-O0: every
node rounds to its own dtype in both, so the bound is one rounding of the output's format).
usage: decode-chain.py AICC MODEL.aig BINDS S WORKDIR [compile options...]"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..', 'tools'))
from npyio import read_npy, write_npy  # noqa: E402

aicc, model, binds, s, work = sys.argv[1:6]
extra = sys.argv[6:]
s = int(s)
os.makedirs(work, exist_ok=True)
ids = [(7 * i + 3) % 500 for i in range(s + 1)]   # token ids below the smallest test vocab


def run(*args):
    subprocess.run([aicc] + list(args), check=True, stdout=subprocess.DEVNULL)


def inputs(name, vals, pos0):
    write_npy(os.path.join(work, name + '.ids.npy'), (1, len(vals)), vals, '<i8')
    write_npy(os.path.join(work, name + '.pos.npy'), (1, len(vals)), list(range(pos0, pos0 + len(vals))), '<i8')
    return ['--input', 'ids=' + os.path.join(work, name + '.ids.npy'),
            '--input', 'pos=' + os.path.join(work, name + '.pos.npy')]


def plan(name, *opts):
    p = os.path.join(work, name + '.aip')
    run('compile', model, '--bind', binds, '--init-unbound', 'normal:0.02:1', *extra, *opts, '--emit', 'plan', '-o', p)
    return p


full = plan('full', '--bind', 'B=1,S=%d' % (s + 1))
run('run', full, *inputs('full', ids, 0), '--output-dir', os.path.join(work, 'full'))
pre = plan('prefill', '--phase', 'prefill', '--context', str(s))
run('run', pre, *inputs('prefill', ids[:s], 0), '--output-dir', os.path.join(work, 'prefill'))
caches = sorted(f[len('present_'):-4] for f in os.listdir(os.path.join(work, 'prefill')) if f.startswith('present_'))
dec = plan('decode', '--phase', 'decode', '--context', str(s))
past = []
for c in caches:
    past += ['--input', 'past_%s=%s' % (c, os.path.join(work, 'prefill', 'present_%s.npy' % c))]
run('run', dec, *inputs('decode', ids[s:], s), *past, '--output-dir', os.path.join(work, 'decode'))

shape, want = read_npy(os.path.join(work, 'full', 'logits.npy'))
v = shape[-1]
want = want[s * v:(s + 1) * v]
got = read_npy(os.path.join(work, 'decode', 'logits.npy'))[1]
err = max(abs(a - b) for a, b in zip(got, want)) / max(abs(b) for b in want)
bound = 2.0 ** -8   # bf16 unit roundoff: the logits are bf16 (numerics.md section 1)
print('%d cache tensors (%s); decode logits vs the uncached model at token %d: max_rel_err %.3g (bound %.3g): %s'
      % (len(caches), ', '.join(caches), s, err, bound, 'ok' if err <= bound else 'FAIL'))
sys.exit(0 if err <= bound else 1)
