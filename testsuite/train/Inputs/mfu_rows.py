#!/usr/bin/env python3
"""Every row of a published training-throughput table against aicc's training step.

  mfu_rows.py AICC ROOT TMPDIR ROWS.json

ROWS.json (testsuite/train/Inputs/megatron-sc21.json, maxtext-readme.json) is data: the table's
source, the publication's FLOP count (`convention`), the bound (`tol`) and one entry per row of
the table with the run's configuration (each field's source in the file) and the published
figures.  Each row is compiled (`--phase train --emit summary`) and its predicted step turned into
the publication's own figure: the FLOP its formula counts for the step, divided by the predicted
step time and the devices, is the predicted TFLOP/s per device; the published one is the row's.
The signed error (predicted / published - 1) is that of the step time's inverse, and the same as
the MFU's under the publication's count, so no conversion between FLOP counts is involved.

Conventions (each the publication's own formula, not aicc's model FLOP):
  megatron   Narayanan et al. SC'21, eq. 3: 96 B s l h^2 (1 + s / (6 h) + V / (16 l h)) per
             iteration (full recomputation: four passes; the attention square counted whole).
  maxtext    MaxText's calculate_tflops_training_per_device (maxtext_utils.py, before PR 1988):
             3 x per device (FFN 2 B S F E (activations + 1), QKV 2 B S E (H + 2 KV) HD, output
             projection 2 B S E H HD) per layer, the embedding 2 B S E V, and attention 4 B S^2 H HD
             per layer (the whole square).

A row's `expect` is what the test holds it to: "pass" (within tol), "fail" (outside tol: XFAIL; a
row inside tol is an XPASS and fails the test, so the table is updated when the model moves) or
"unpriced" (a configuration aicc's step does not price, with the reason in `why`: printed, not
compiled).  Prints every row and the median and worst |error| of the priced rows; exits 1 when a
row's outcome is not its `expect`."""
import json
import os
import statistics
import subprocess
import sys


def megatron_flops(m, batch):
    h, l, s, v = m['hidden'], m['layers'], m['seq'], m['vocab']
    return 96.0 * batch * s * l * h * h * (1 + s / (6.0 * h) + v / (16.0 * l * h))


def maxtext_flops(m, batch):
    e, s, f, v = m['emb'], m['seq'], m['mlp'], m['vocab']
    hq, hkv, hd, l = m['heads'], m['kv_heads'], m['head_dim'], m['layers']
    ffn = 2.0 * batch * s * f * e * (m['activations'] + 1)
    qkv = 2.0 * batch * s * e * (hq + 2 * hkv) * hd
    proj = 2.0 * batch * s * e * hq * hd
    emb = 2.0 * batch * s * e * v
    attn = 4.0 * batch * s * s * hq * hd
    return 3 * ((ffn + qkv + proj) * l + emb + attn * l)


def megatron_cmd(r, t, root, tmp):
    m = r['model']
    dp = r['gpus'] // (r['tp'] * r['pp'])
    micro = r['gbs'] // (r['mbs'] * dp)
    assert micro * r['mbs'] * dp == r['gbs'], r['name']
    g = os.path.join(tmp, 'gpt-bf16.aig')
    if not os.path.exists(g):
        with open(os.path.join(root, 'examples', 'gpt2-small.aig')) as f:
            src = f.read()
        with open(g, 'w') as f:
            f.write(src.replace('f32[', 'bf16['))
    binds = 'H=%d,HD=%d,L=%d,F=%d,V=%d,P=%d' % (m['heads'], m['hidden'] // m['heads'], m['layers'],
                                                4 * m['hidden'], m['vocab'], m['seq'])
    return [g, '--bind', binds, '--phase', 'train', '--batch', str(r['mbs']), '--context', str(m['seq']),
            '--grad-accum', str(micro), '--tp', str(r['tp']), '--pp', str(r['pp']), '--dp', str(dp),
            '--pp-virtual', str(r.get('pp_virtual', 1))] + (['--grad-after-backward'] if r['ddp'] == 'local' else []) + \
        t['options'], r['gbs']


def maxtext_cmd(r, t, root, tmp):
    """per_device_batch_size sequences per chip: a replica of --tp chips takes tp times as many"""
    m = r['model']
    tp = r.get('tp', 1)
    binds = 'L=%d,D=%d,H=%d,KV=%d,HD=%d,F=%d,V=%d,CTX=%d' % (
        m['layers'], m['emb'], m['heads'], m['kv_heads'], m['head_dim'], m['mlp'], m['vocab'], m['seq'])
    return [os.path.join(root, 'examples', 'llama3.1-8b.aig'), '--bind', binds, '--phase', 'train',
            '--batch', str(r['per_device_batch'] * tp), '--context', str(m['seq']), '--tp', str(tp),
            '--dp', str(r['chips'] // tp), '--zero', '3', '--recompute', r['recompute'],
            '--machine', r['machine']] + t['options'], r['per_device_batch'] * r['chips']


CONV = {'megatron': (megatron_flops, megatron_cmd, 'gpus'), 'maxtext': (maxtext_flops, maxtext_cmd, 'chips')}


def main(aicc, root, tmp, path):
    with open(path) as f:
        t = json.load(f)
    flops, cmd, ndev = CONV[t['convention']]
    tol, bad, errs = t['tol'], [], []
    print('%s (%s), bound %.0f %%' % (t['table'], t['source'], 100 * tol))
    print('%-22s %8s %10s %10s %8s  %s' % ('row', 'devices', 'predicted', 'published', 'error', 'expect'))
    for r in t['rows']:
        if r['expect'] == 'unpriced':
            print('%-22s %8d %10s %10.1f %8s  unpriced: %s' % (r['name'], r[ndev], '-', r['published_tflops'], '-', r['why']))
            continue
        args, batch = cmd(r, t, root, tmp)
        out = os.path.join(tmp, 'row.json')
        p = subprocess.run([aicc, 'compile'] + args + ['--emit', 'summary', '-o', out],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode:
            sys.exit('%s: aicc compile failed: %s' % (r['name'], p.stderr.strip()))
        with open(out) as f:
            s = json.load(f)['train_step']
        assert s['parallel']['devices'] == r[ndev], (r['name'], s['parallel'])
        pred = flops(r['model'], batch) / s['step_s'] / r[ndev] / 1e12
        err = pred / r['published_tflops'] - 1
        errs.append(abs(err))
        inside = abs(err) <= tol
        got = 'pass' if inside else 'fail'
        mark = got if got == r['expect'] else ('XPASS' if inside else 'UNEXPECTED FAIL')
        if got != r['expect']:
            bad.append(r['name'])
        print('%-22s %8d %10.1f %10.1f %+7.1f%%  %s%s' % (r['name'], r[ndev], pred, r['published_tflops'], 100 * err,
                                                        mark, '' if s['memory_rank0']['fits'] else ' (rank 0 does not fit)'))
    if errs:
        print('priced %d of %d rows: median |error| %.1f %%, worst %.1f %%, within %.0f %%: %d' % (
            len(errs), len(t['rows']), 100 * statistics.median(errs), 100 * max(errs), 100 * tol,
            sum(e <= tol for e in errs)))
    if bad:
        sys.exit('rows whose outcome is not the expected one: ' + ', '.join(bad))
    print('ok: every row as expected')


if __name__ == '__main__':
    main(*sys.argv[1:5])
