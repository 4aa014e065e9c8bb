#!/usr/bin/env python3
"""Checks the parallel training step of `aicc compile --emit summary` (passes/train_step.c).

  train_step.py check FILE.json            the schedule's identities, exactly (rel 1e-12)
  train_step.py zero Z0.json Z1.json Z2.json Z3.json   ZeRO's sharding of the memory by kind
  train_step.py recompute NONE.json SELECTIVE.json FULL.json   memory down, time and HFU up
  train_step.py ffn SELECTIVE.json SELECTIVE-FFN.json FULL.json   the FFN inputs recomputed: in between
  train_step.py layers NONE.json LAYERS.json   --recompute layers: whole layers, until it fits
  train_step.py tp A.json B.json   the same tensor-parallel collectives per layer
  train_step.py search GIVEN.json SEARCH.json   --train-search: as many devices and sequences, fits, no slower
  train_step.py anchor FILE.json PUBLISHED_MFU TOL     |predicted / published - 1| <= TOL
  train_step.py slower A.json B.json      B's layers slower forward and backward, same TP collectives
  train_step.py same A.json B.json        the same step (rel 1e-12)
  train_step.py zeromem Z0.json Z1.json Z2.json Z3.json   run --report of a ZeRO step plan
                                           (zero-step.test): the memory sharded by stage
  train_step.py zero2mem Z0.json Z1.json Z2.json   run --report of ZeRO step plans with several
                                           micro-batches per replica: ZeRO 1 holds each replica's
                                           whole gradient, ZeRO 2 its 1/D shard
  train_step.py packed UNPACKED.json ONE.json PACKED.json   --pack: one sequence per row is the
                                           unpacked step; several price less attention
  train_step.py offload OFF.json ON.json MFU_OFF MFU_ON FACTOR   collective offload: faster, the
                                           gain within FACTOR of the published one (either way)
Prints what it checked; exits 1 on the first failure."""
import json
import sys



def train_memory(paths):
    """The report's train.memory object of each report.json in paths, in order."""
    mem = []
    for path in paths:
        with open(path) as f:
            mem.append(json.load(f)['train']['memory'])
    return mem

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
    near(t['step_s'], t['pipeline_s'] + t['dp_exposed_s'] + t['dp_units_s'] + t['optimizer_s'], 'step')
    near(t['dp_exposed_s'] + t['dp_hidden_s'], t['dp_reduce_scatter_s'] + t['dp_all_gather_s'], 'DP hidden + exposed')
    near(t['mfu'], t['model_flops'] / (t['step_s'] * p['devices'] * t['peak_flops']), 'MFU')
    print('ok: %d devices, step %.6g s, bubble %.4f, MFU %.4f' % (p['devices'], t['step_s'], t['bubble_fraction'], t['mfu']))


def offload(off, on, m0, m1, factor):
    a, b = step(off), step(on)
    assert a['collective_offload'] == 0 and b['collective_offload'] > 0, 'one without, one with the offload'
    assert a['dp_units_s'] > 0 and b['dp_units_s'] < a['dp_units_s'], 'the offload takes the units\' collective work'
    gain, pub = a['step_s'] / b['step_s'], m1 / m0
    if not gain > 1:
        sys.exit('the offload does not speed the step up: %r' % gain)
    r = (gain - 1) / (pub - 1)
    if not 1 / factor <= r <= factor:
        sys.exit('gain %.4fx against the published %.4fx: %.3g of it, outside a factor %g' % (gain, pub, r, factor))
    near(b['mfu'] / a['mfu'], gain, 'MFU in proportion to the step')
    print('ok: offload MFU %.4f -> %.4f, step %.4fx as fast (published %.4fx)' % (a['mfu'], b['mfu'], gain, pub))


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
    near(z[2]['dp_reduce_scatter_s'], m * z[1]['dp_reduce_scatter_s'], 'ZeRO 2 reduce-scatters after every micro-batch')
    near(z[2]['dp_all_gather_s'], z[1]['dp_all_gather_s'], 'ZeRO 2 gathers the weights once')
    print('ok: ZeRO over %d devices' % g)


def recompute(paths, names=('none', 'selective', 'full')):
    ts = [step(q) for q in paths]
    for t in ts:
        check(t)
        near(ts[0]['model_flops'], t['model_flops'], 'recomputation does not change the model FLOP')
    order = ' < '.join(names)
    a = [t['memory_rank0']['activations'] for t in ts]
    if any(x <= y for x, y in zip(a, a[1:])):
        sys.exit('activations fall along %s: %r' % (order, a))
    s = [t['step_s'] for t in ts]
    if any(x >= y for x, y in zip(s, s[1:])):
        sys.exit('step grows along %s: %r' % (order, s))
    h = [t['hfu'] / t['mfu'] for t in ts]
    if any(x >= y for x, y in zip(h, h[1:])):
        sys.exit('HFU / MFU grows along %s: %r' % (order, h))
    print('ok: recomputation ' + ', '.join(names))


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


def layers(none, lay):
    n, l = step(none), step(lay)
    check(l)
    f = l['parallel']['recomputed_layers']
    per = -(-l['layers'] // l['parallel']['pp'])
    near(f * per, round(f * per), 'a whole number of layers per rank')
    if n['memory_rank0']['fits']:
        near(f, 0, 'nothing recomputed when the step fits')
    else:
        assert 0 < f <= 1 and l['memory_rank0']['fits'], 'recomputes layers until it fits'
        assert l['step_s'] > n['step_s'], 'and pays for them'
    print('ok: %d of %d layers per rank recomputed' % (round(f * per), per))


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
    elif a[0] == 'tp':
        x, y = step(a[1]), step(a[2])
        near(x['layer_tp_comm_s'], y['layer_tp_comm_s'], 'TP collectives per layer')
        print('ok: the same TP collectives per layer')
    elif a[0] == 'ffn':
        recompute(a[1:4], ('selective', 'selective-ffn', 'full'))
    elif a[0] == 'dots':
        recompute(a[1:4], ('selective', 'dots', 'selective-ffn'))
    elif a[0] == 'layers':
        layers(a[1], a[2])
    elif a[0] == 'slower':
        x, y = step(a[1]), step(a[2])
        assert y['layer_forward_s'] > x['layer_forward_s'] and y['layer_backward_s'] > x['layer_backward_s'], (x, y)
        assert y['step_s'] > x['step_s'], 'the step slower'
        near(x['layer_tp_comm_s'], y['layer_tp_comm_s'], 'TP collectives per layer')
        print('ok: layer forward %.4g -> %.4g, backward %.4g -> %.4g, the same TP collectives' % (
            x['layer_forward_s'], y['layer_forward_s'], x['layer_backward_s'], y['layer_backward_s']))
    elif a[0] == 'same':
        x, y = step(a[1]), step(a[2])
        for k in ('step_s', 'layer_forward_s', 'layer_backward_s', 'mfu'):
            near(x[k], y[k], k)
        print('ok: the same step')
    elif a[0] == 'zeromem':
        mem = train_memory(a[1:5])
        d = len(mem[0])
        step = 4   # adamw.step, f32, on every replica that runs AdamW
        full_opt = mem[0]['gpu0']['optimizer_state_bytes'] - step
        full_w = mem[0]['gpu0']['weights_bytes']
        assert all(m['optimizer_state_bytes'] == 0 for k, m in mem[0].items() if k != 'gpu0'), mem[0]
        for z in (1, 2, 3):
            for k, m in mem[z].items():
                near(m['optimizer_state_bytes'], full_opt / d + step, 'ZeRO %d %s optimizer state' % (z, k))
        for k, m in mem[3].items():   # the weight shards (f32: also AdamW's) and the gradient shards;
            # parameters not trained (the rotary tables) stay whole: at most 1 % of the weights here
            assert full_w / d <= m['weights_bytes'] <= full_w / d + 0.01 * full_w, ('ZeRO 3 weights', k, m, full_w)
            near(m['gradients_bytes'], mem[0]['gpu0']['gradients_bytes'] / d, 'ZeRO 3 %s gradients' % k)
        print('ok: ZeRO sharding over %d replicas: optimizer state %d -> %d B per replica, weights %d -> %d B' % (
            d, full_opt + step, full_opt / d + step, full_w, mem[3]['gpu0']['weights_bytes']))
    elif a[0] == 'zero2mem':
        mem = train_memory(a[1:4])
        d = len(mem[0])
        whole = mem[0]['gpu0']['gradients_bytes']   # ZeRO 0: the all-reduced gradient AdamW reads
        for k in mem[1]:
            near(mem[1][k]['gradients_bytes'], whole + whole / d, 'ZeRO 1 %s gradients (whole, and the shard AdamW reads)' % k)
            near(mem[2][k]['gradients_bytes'], whole / d, 'ZeRO 2 %s gradients (the shard)' % k)
        print('ok: gradients per replica over %d replicas: ZeRO 1 %d B (whole + shard), ZeRO 2 %d B (shard)' % (
            d, mem[1]['gpu0']['gradients_bytes'], mem[2]['gpu0']['gradients_bytes']))
    elif a[0] == 'packed':
        with open(a[3]) as f:
            k = json.load(f)['packing']
        x, one, y = step(a[1]), step(a[2]), step(a[3])
        for key in ('step_s', 'layer_forward_s', 'layer_backward_s', 'mfu', 'model_flops'):
            near(x[key], one[key], key)
        check(y)
        for key in ('layer_forward_s', 'layer_backward_s', 'step_s', 'model_flops'):
            assert y[key] < one[key], (key, one[key], y[key])
        assert k['attention_pairs'] < k['padded_attention_pairs'] or k['tokens'] == k['padded_tokens'], k
        print('ok: packed %d sequences: layer forward %.4g -> %.4g, backward %.4g -> %.4g, model FLOP %.4g -> %.4g' % (
            k['sequences'], one['layer_forward_s'], y['layer_forward_s'], one['layer_backward_s'], y['layer_backward_s'],
            one['model_flops'], y['model_flops']))
    elif a[0] == 'offload':
        offload(a[1], a[2], float(a[3]), float(a[4]), float(a[5]))
    else:
        anchor(a[1], float(a[2]), float(a[3]))
