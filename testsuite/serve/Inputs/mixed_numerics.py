"""testsuite/serve/Inputs/mixed_numerics.py AICC ROOT OUT: the mixed phase computes what the
prefill and decode phases compute.  A small Llama (examples/llama3.1-70b.aig with small dims,
seeded weights, reference target, f32) is run
  1. as a prefill of 10 tokens (logits, and the KV cache of all 10);
  2. as a prefill of the first 6 tokens (their KV cache);
  3. as the mixed iteration "1x4+6": the last 4 tokens as a chunk over the 6 cached ones, and
  4. as the mixed iteration "2x1+6,1x4+6": two decodes and that chunk in one batch,
and the chunk's logits must equal rows 6..9 of the full prefill.  The computations sum in
different orders (BLAS kernels by row count), so equality is within f32 rounding over the
longest reduction: tol = 8 * K * 2^-24 * (layers + 1) of the largest |logit|, K = the FFN width."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(sys.argv[2], 'tools'))
import npyio  # noqa: E402

aicc, root, out = sys.argv[1], sys.argv[2], sys.argv[3]
model = os.path.join(root, 'examples', 'llama3.1-70b.aig')
binds = 'L=2,H=4,KV=2,HD=16,F=96,V=512,CTX=64'
layers, ffn = 2, 96
os.makedirs(out, exist_ok=True)


def run(args):
    r = subprocess.run([aicc] + args, capture_output=True, text=True)
    if r.returncode:
        sys.exit('FAIL: %s\n%s%s' % (' '.join(args), r.stdout, r.stderr))


def compile_(name, phase):
    plan = os.path.join(out, name + '.aip')
    run(['compile', model, '--bind', binds, '--init-unbound', 'normal:0.02:1'] + phase + ['--emit', 'plan', '-o', plan])
    return plan


def tokens(path, vals, shape):
    npyio.write_npy(path, shape, vals, '<i8')
    return path


ids = [17, 3, 250, 99, 4, 61, 7, 300, 12, 5]
full = compile_('full', ['--phase', 'prefill', '--context', '10'])
first = compile_('first', ['--phase', 'prefill', '--context', '6'])
chunk = compile_('chunk', ['--phase', 'mixed', '--mix', '1x4+6'])
mixed = compile_('mixed', ['--phase', 'mixed', '--mix', '2x1+6,1x4+6'])

d = lambda n: os.path.join(out, n)
run(['run', full, '--input', 'ids=' + tokens(d('ids10.npy'), ids, [1, 10]),
     '--input', 'pos=' + tokens(d('pos10.npy'), list(range(10)), [1, 10]), '--output-dir', d('full')])
run(['run', first, '--input', 'ids=' + tokens(d('ids6.npy'), ids[:6], [1, 6]),
     '--input', 'pos=' + tokens(d('pos6.npy'), list(range(6)), [1, 6]), '--output-dir', d('first')])
past = []
for i in range(layers):
    for kv in ('key', 'value'):
        past += ['--input', 'past_%s.%d=%s' % (kv, i, d('first/present_%s.%d.npy' % (kv, i)))]
run(['run', chunk, '--input', 'ids=' + tokens(d('ids4.npy'), ids[6:], [1, 4]),
     '--input', 'pos=' + tokens(d('pos4.npy'), list(range(6, 10)), [1, 4]), '--output-dir', d('chunk')] + past)

shape, ref = npyio.read_npy(d('full/logits.npy'))
_, got = npyio.read_npy(d('chunk/logits.npy'))
vocab = shape[-1]
ref = ref[6 * vocab:]
scale = max(abs(x) for x in ref)
tol = 8 * ffn * 2.0 ** -24 * (layers + 1) * scale
err = max(abs(a - b) for a, b in zip(got, ref))
print('chunk 1x4+6 vs prefill rows 6..9: max |diff| %.3g, tolerance %.3g' % (err, tol))
if not err <= tol:
    sys.exit('FAIL: the chunked prefill differs from the full prefill')

# the same chunk inside a mixed batch with two decodes (sequence 0 and 1 of 6 cached tokens each,
# their KV taken from the 6-token prefill): the chunk's rows are the last 4 of the batch's 6
mix_past = []
for i in range(layers):
    for kv in ('key', 'value'):
        shp, v = npyio.read_npy(d('first/present_%s.%d.npy' % (kv, i)))
        two = os.path.join(out, 'two_%s.%d.npy' % (kv, i))
        npyio.write_npy(two, [2] + list(shp[1:]), v + v)
        mix_past += ['--input', 'past_%s.%d=%s' % (kv, 2 * i, two),
                     '--input', 'past_%s.%d=%s' % (kv, 2 * i + 1, d('first/present_%s.%d.npy' % (kv, i)))]
run(['run', mixed, '--input', 'ids=' + tokens(d('idsm.npy'), [ids[6], ids[6]] + ids[6:], [1, 6]),
     '--input', 'pos=' + tokens(d('posm.npy'), [6, 6, 6, 7, 8, 9], [1, 6]), '--output-dir', d('mixed')] + mix_past)
_, got = npyio.read_npy(d('mixed/logits.npy'))
err = max(abs(a - b) for a, b in zip(got[2 * vocab:], ref))
dec = max(abs(a - b) for a, b in zip(got[:vocab], ref[:vocab]))
print('mixed 2x1+6,1x4+6: chunk rows max |diff| %.3g; decode row vs prefill row 6 max |diff| %.3g; tolerance %.3g'
      % (err, dec, tol))
if not (err <= tol and dec <= tol):
    sys.exit('FAIL: the mixed batch differs from the prefill')
print('ok')
