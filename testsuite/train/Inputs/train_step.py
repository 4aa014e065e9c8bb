#!/usr/bin/env python3
"""Checks the parallel training step of `aicc compile --emit summary` (passes/train_step.c).

  train_step.py check FILE.json            the schedule's identities, exactly (rel 1e-12)
  train_step.py zero Z0.json Z1.json Z2.json Z3.json   ZeRO's sharding of the memory by kind
  train_step.py recompute NONE.json SELECTIVE.json FULL.json   memory down, time and HFU up
  train_step.py search GIVEN.json SEARCH.json   --train-search: as many devices and sequences, fits, no slower
  train_step.py anchor FILE.json PUBLISHED_MFU TOL     |predicted / published - 1| <= TOL
Prints what it checked; exits 1 on the first failure."""
import json
import sys


def step(path):
    with open(path) as f:
        return json.load(f)['train_step']


def near(a, b, what, rel=1e-12):
    if abs(a - b) > rel * max(abs(a), abs(b), 1e-300):
        sys.exit('%s: %r != %r' % (what, a, b))


def check(t):
    p = t['parallel']
    near(p['devices'], p['dp'] * p['tp'] * p['pp'] * p['cp'], 'devices')
    ranks = t['pipeline_ranks']
    assert len(ranks) == p['pp'], 'one entry per pipeline rank'
    near(sum(r['layers'] for r in ranks), t['layers'], 'layers over the ranks')
    ts = [r['micro_batch_s'] for r in ranks]
    m, v = p['micro_batches'], p['pp_virtual']
    pipe = m * max(ts) + (sum(ts) - max(ts)) / v + 2 * (p['pp'] - 1) * t['pp_send_s']
    near(t['pipeline_s'], pipe, 'pipeline = M t_max + (sum t - t_max) / V + 2 (P-1) send')
    near(t['bubble_s'], t['pipeline_s'] - m * max(ts), 'bubble = pipeline - M t_max')
    near(t['step_s'], t['pipeline_s'] + t['dp_exposed_s'] + t['optimizer_s'], 'step')
    near(t['dp_exposed_s'] + t['dp_hidden_s'], t['dp_reduce_scatter_s'] + t['dp_all_gather_s'], 'DP hidden + exposed')
    near(t['mfu'], t['model_flops'] / (t['step_s'] * p['devices'] * t['peak_flops']), 'MFU')
    print('ok: %d devices, step %.6g s, bubble %.4f, MFU %.4f' % (p['devices'], t['step_s'], t['bubble_fraction'], t['mfu']))


def zero(paths):
    z = [step(q) for q in paths]
    g = z[0]['parallel']['dp'] * z[0]['parallel']['cp']
    mem = [s['memory_rank0'] for s in z]
    near(mem[1]['optimizer_state'], mem[0]['optimizer_state'] / g, 'ZeRO 1 shards the optimizer state')
    near(mem[1]['gradients'], mem[0]['gradients'], 'ZeRO 1 keeps the gradients')
    near(mem[2]['gradients'], mem[1]['gradients'] / g, 'ZeRO 2 shards the gradients')
    near(mem[2]['weights'], mem[1]['weights'], 'ZeRO 2 keeps the weights')
    near(mem[3]['weights'], mem[2]['weights'] / g, 'ZeRO 3 shards the weights')
    near(z[0]['dp_all_gather_s'], 0, 'ZeRO 0 all-reduces (no all-gather of its own)')
    m = z[3]['parallel']['micro_batches']
    near(z[3]['dp_all_gather_s'], 2 * m * z[1]['dp_all_gather_s'], 'ZeRO 3 gathers twice per micro-batch')
    print('ok: ZeRO over %d devices' % g)


def recompute(paths):
    n, sel, full = [step(q) for q in paths]
    for t in (n, sel, full):
        check(t)
    near(n['model_flops'], full['model_flops'], 'recomputation does not change the model FLOP')
    near(n['model_flops'], sel['model_flops'], 'recomputation does not change the model FLOP')
    a = [t['memory_rank0']['activations'] for t in (n, sel, full)]
    if not a[2] < a[1] < a[0]:
        sys.exit('activations none > selective > full: %r' % a)
    s = [t['step_s'] for t in (n, sel, full)]
    if not s[0] < s[1] < s[2]:
        sys.exit('step none < selective < full: %r' % s)
    h = [t['hfu'] / t['mfu'] for t in (n, sel, full)]
    if not h[0] < h[1] < h[2]:
        sys.exit('HFU / MFU grows with recomputation: %r' % h)
    print('ok: recomputation none, selective, full')


def search(given, found):
    a, b = step(given), step(found)
    check(b)
    pa, pb = a['parallel'], b['parallel']
    near(pa['devices'], pb['devices'], 'the same devices')
    near(pa['dp'] * pa['micro_batches'], pb['dp'] * pb['micro_batches'], 'the same sequences per step')
    assert b['search']['candidates'] >= b['search']['fitting'] >= 1, 'a fitting candidate'
    assert b['memory_rank0']['fits'], 'the choice fits'
    if a['memory_rank0']['fits'] and not b['step_s'] <= a['step_s']:
        sys.exit('the search is slower than the given configuration: %r > %r' % (b['step_s'], a['step_s']))
    print('ok: searched %d configurations, %d fit; tp %d cp %d pp %d dp %d, step %.6g s <= %.6g s' % (
        b['search']['candidates'], b['search']['fitting'], pb['tp'], pb['cp'], pb['pp'], pb['dp'], b['step_s'], a['step_s']))


def anchor(path, published, tol):
    t = step(path)
    check(t)
    gap = t['mfu'] / published - 1
    print('MFU predicted %.4f, published %.4f: %+.1f%%' % (t['mfu'], published, 100 * gap))
    if abs(gap) > tol:
        sys.exit('outside %.0f%%' % (100 * tol))


if __name__ == '__main__':
    a = sys.argv[1:]
    if a[0] == 'check':
        check(step(a[1]))
    elif a[0] == 'zero':
        zero(a[1:5])
    elif a[0] == 'search':
        search(a[1], a[2])
    elif a[0] == 'recompute':
        recompute(a[1:4])
    else:
        anchor(a[1], float(a[2]), float(a[3]))
