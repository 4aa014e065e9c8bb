#!/usr/bin/env python3
"""tools/docs-numbers.py BUILD|AICC [--write] [--files F.md...] | --gap: the numbers README.md and docs/*.md
quote, regenerated or checked against their records.

A quoted number is marked in the Markdown where it stands, invisible once rendered:

    | TPOT | <!--n:vr70.hybrid.tpot-->4.88 ms<!--/n--> | ...

and NUMBERS below says how it is made: the command (COMMANDS, run once each from the
repository root with BUILD/aicc, in a temporary directory {tmp}), a regular expression over its
output whose group `group` is the number, and the format it is quoted in.  Without --write the
script runs every command and exits 1, listing each quoted figure that differs from what the
command prints now (testsuite/driver/docs-numbers.test runs it so in make check); with --write
(make docs-numbers)
it rewrites the marked figures in place.  A marker whose id NUMBERS lacks, and an id no file
quotes, are errors too.

A quoted output (a fenced code block, where a marker would show) is marked on the line before
the fence,

    <!--out:d8.run-->
    ```
    latency        5.959 ms
    ```

and BLOCKS says which lines of its command's output it is: the literal lines of `head` (the
commands a quote shows above their output, optional), then from the first line matching `start`
through the first line matching `end` after it, then the literal lines of `tail` ("..." where
the quote stops); the block is checked and rewritten whole.

Every other number-plus-unit figure (FIGURE, UNITS below) needs a marker too, or the check fails:
a published figure <!--s:KIND/REF-->...<!--/s--> names the record it comes from (a machine XML
field, a tools/validate/cases.json row, tools/docs-sources.json) and is checked against it (SMARK);
<!--x:REASON--> before a figure says why it is none (arithmetic in prose over marked figures, an
input a reader types).  --gap lists every unmarked figure without running anything (tools/docs-numbers.todo,
if present, lists figures accepted unmarked for now), and --files checks only the files named.
Commands run in parallel, each in a directory of its own ({tmp}).  A command whose input is not there
(REQUIRES: the fetched PP-OCR models) leaves its figures unchecked and says so.  ELSEWHERE commands are
the paper tests' own runs: the check of all docs leaves their figures to those tests, which pass their
output with --output ID=FILE (only that command's figures are then checked).  Standard library only.
"""
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time

TIMES = {}   # command id -> wall seconds

L70 = ('{aicc} compile examples/llama3.1-70b.aig --phase decode --batch 32 --context 4096 '
       '--passes=disaggregate --target vera-rubin --precision bf16+graph --emit plan -o {tmp}/l70.aip')

# id -> shell command lines (run in order; stdout of the last one is matched)
COMMANDS = {
    'vr70': [L70, '{aicc} explain {tmp}/l70.aip --compare'],
    'reshard70': ['{aicc} compile examples/llama3.1-70b.aig --bind B=1,S=128 --target hopper --machine dgx-h100 '
                  '--set gpu.count=32 --tp 8 --pp 4 -o {tmp}/o32.aip',
                  '{aicc} compile examples/llama3.1-70b.aig --bind B=1,S=128 --target hopper --machine dgx-h100 '
                  '--set gpu.count=28 --tp 4 --pp 7 -o {tmp}/n28.aip',
                  '{aicc} reshard {tmp}/o32.aip {tmp}/n28.aip'],
    'vr70-readme': ['{aicc} compile examples/llama3.1-70b.aig --phase decode --batch 32 --context 4096 '
                    '--target vera-rubin --emit plan -o {tmp}/vr.aip',
                    '{aicc} explain {tmp}/vr.aip --compare'],
}

# docs/resilience.md: re-planning on survivors, goodput, compressed all-reduces
L70P = ('{aicc} compile examples/llama3.1-70b.aig --phase prefill --context 2048 --target hopper --machine dgx-h100 '
        '-o {tmp}/r8.aip')
GB32 = ('{aicc} compile examples/llama3.1-70b.aig --phase prefill --context 2048 --target blackwell '
        '--machine gb200-nvl72 --devices 32')
TP8 = ('{aicc} compile examples/llama3.1-70b.aig --bind B=1 --phase prefill --context 2048 --target hopper '
       '--machine dgx-h100 --tp 8 --passes=canonicalize,place-precision,fuse,partition,plan-memory')
COMMANDS.update({
    'excl7': [L70P, L70P.replace('r8.aip', 'r7.aip') + ' --exclude-devices gpu3',
              '{aicc} explain {tmp}/r7.aip --compare {tmp}/r8.aip'],
    'excl28': [GB32 + ' --tp 8 --pp 4 -o {tmp}/g32.aip',
               GB32 + ' --exclude-devices gpu3,gpu17,gpu20,gpu30 --tp 4 --pp 7 -o {tmp}/g28.aip',
               '{aicc} explain {tmp}/g28.aip --compare {tmp}/g32.aip'],
    'goodput': ['{aicc} compile examples/llama3.1-70b.aig --bind B=1,S=1 --phase decode --context 4096 --target hopper '
                '--machine dgx-h100 --tp 8 --passes=canonicalize,place-precision,fuse,partition,plan-memory '
                '-o {tmp}/gp.aip',
                '{aicc} goodput {tmp}/gp.aip --devices 16384 --restart 600 --interval 7200'],
    'comp': [TP8 + ' --compress-collectives -o {tmp}/c4.aip', '{aicc} explain {tmp}/c4.aip'],
    'comp-ttft': [TP8 + ' --compress-collectives -o {tmp}/c4.aip', '{aicc} run {tmp}/c4.aip --timing-only'],
    'raw-ttft': [TP8 + ' -o {tmp}/c0.aip', '{aicc} run {tmp}/c0.aip --timing-only'],
})

# docs/targets-wafer.md: why the wafer and hardwired validation rows miss
W8 = ('{aicc} compile examples/llama3.1-8b.aig --target wafer --machine cs3-cluster --phase decode --batch 1 '
      '--context 1000 --precision f16 -o {tmp}/w8.aip')
HC1 = ('{aicc} compile examples/llama3.1-8b.aig --target hardwired --machine taalas-hc1 --phase decode --batch 1 '
       '--context 1500 -o {tmp}/hc1.aip')


def gap(name, rate):
    """The lines that time plan {tmp}/NAME.aip and print tools/docs-gap.py's figures for RATE."""
    return ['{aicc} explain {tmp}/%s.aip > {tmp}/%s.txt' % (name, name),
            '{aicc} run {tmp}/%s.aip --timing-only --report {tmp}/%s.json' % (name, name),
            'python3 tools/docs-gap.py {tmp}/%s.txt {tmp}/%s.json %s' % (name, name, rate)]


COMMANDS.update({
    'validate-llama': ['python3 tools/validate.py "$(dirname {aicc})" --only llama3.1'],
    'w8gap': [W8] + gap('w8', 1800),
    'w2waferllm': ['{aicc} compile examples/llama3.1-8b.aig --target wafer --machine cerebras-wse2 --phase decode --batch 1 '
                   '--context 1000 --precision f16 -o {tmp}/w2.aip'] + gap('w2', 2700),
    'hc1gap': [HC1] + gap('hc1', 17000),
    'hc1bound': [HC1, '{aicc} explain {tmp}/hc1.aip'],
    # docs/targets-lpu.md and docs/targets-wafer.md: whether one time per layer closes the rows
    'layer-lpu': ['python3 tools/validate.py "$(dirname {aicc})" --only lpu > {tmp}/vl.txt',
                  'python3 tools/docs-layer.py lpu llama2-7b=32 llama2-70b=80 mixtral-8x7b=32 < {tmp}/vl.txt'],
    'layer-wafer': ['python3 tools/validate.py "$(dirname {aicc})" --only wafer > {tmp}/vw.txt',
                    'python3 tools/docs-layer.py wafer llama3.1-8b=32 llama3.1-70b=80 llama3.1-405b=126 < {tmp}/vw.txt'],
    # docs/targets-lpu.md: the 7B spread over more chips than its weights need (a smaller SRAM per chip)
    'l7spread': ['{aicc} compile examples/llama3.1-8b.aig --bind KV=32,F=11008,V=32000,CTX=4096 --target lpu '
                 '--machine groq-pod-v1 --phase decode --batch 1 --context 625 --set lpu.sram.capacity=60MiB '
                 '-o {tmp}/l7s.aip', '{aicc} run {tmp}/l7s.aip --timing-only'],
})
# docs/machines.md: the rows of make demo's hardware-timeline table (tools/demo.sh extra_row and its
# per-target loop on the default machines)
DEMO = {'a100-8b': ('llama3.1-8b', 'ampere', 'a100-sxm', ''), 'tpu8t-8b': ('llama3.1-8b', 'tpu', 'tpu-8t', ''),
        'wse3-8b': ('llama3.1-8b', 'wafer', 'cerebras-wse3', ''), 'hc1-8b': ('llama3.1-8b', 'hardwired', 'taalas-hc1', ''),
        'a100-70b': ('llama3.1-70b', 'ampere', 'dgx-a100', ' --tp 8'),
        'tpu8t-70b': ('llama3.1-70b', 'tpu', 'tpu-8t-9600', ' --tp 4'),
        'cs3-70b': ('llama3.1-70b', 'wafer', 'cs3-cluster', '')}
for label, (model, tgt, mach, opt) in DEMO.items():
    for phase, ctx in (('decode', 4096), ('prefill', 2048)):
        COMMANDS['demo-%s-%s' % (label, phase)] = [
            '{aicc} compile examples/%s.aig --target %s --machine %s --phase %s --batch 1 --context %d%s '
            '-o {tmp}/d.aip' % (model, tgt, mach, phase, ctx, opt), '{aicc} run {tmp}/d.aip --timing-only']

# README.md and docs/*.md (issue 17): the first-session commands and the docs' quoted outputs
D8 = ('{aicc} compile examples/llama3.1-8b.aig --phase decode --batch 1 --context 4096 -O1 --target hopper '
      '--emit plan -o {tmp}/d8.aip')
P8 = ('{aicc} compile examples/llama3.1-8b.aig --phase prefill --batch 1 --context 4096 -O1 --target hopper '
      '--emit plan -o {tmp}/p8.aip')
TP8D = ('{aicc} compile examples/llama3.1-70b.aig --bind B=1,S=1 --phase decode --context 4096 --target hopper '
       '--machine dgx-h100 --tp 8 --emit plan -o {tmp}/tp8.aip')
PP4 = ('{aicc} compile examples/llama3.1-70b.aig --phase decode --batch 1 --context 4096 --target hopper '
       '--machine dgx-h100 --pp 4 --passes=canonicalize,place-precision,fuse,partition,schedule,plan-memory '
       '--emit plan -o {tmp}/pp4.aip')
SVGSIZE = ("grep -o '<svg width=\"[0-9.]*pt\" height=\"[0-9.]*pt\"' {{tmp}}/{f} && "
           "printf 'nodes %s\\n' $(grep -c 'class=\"node\"' {{tmp}}/{f})")
COMMANDS.update({
    'd8.run': [D8, '{aicc} run {tmp}/d8.aip --timing-only'],
    'p8.run': [P8, '{aicc} run {tmp}/p8.aip --timing-only'],
    'tp8.explain': [TP8D, '{aicc} explain {tmp}/tp8.aip'],
    'tp8.run': [TP8D, '{aicc} run {tmp}/tp8.aip --timing-only'],
    'pp4.run': [PP4, '{aicc} run {tmp}/pp4.aip --timing-only --per-device'],
    # docs/passes.md "KV-head replication": a Qwen2-1.5B-like decoder (12 query / 2 KV heads) at --tp 4
    'kvrep.run': ['{aicc} compile examples/llama3.1-8b.aig --bind L=28,H=12,KV=2,HD=128,F=8960,V=151936 '
                  '--phase decode --batch 32 --context 8192 --target hopper --machine dgx-h100 --tp 4 '
                  '--emit plan -o {tmp}/kvrep.aip', '{aicc} run {tmp}/kvrep.aip --timing-only'],
    # pictures (docs/explain.md): the SVG's size at scale 1 and its node count
    'pic.d8': [D8.replace('--emit plan -o {tmp}/d8.aip', '--emit svg -o {tmp}/d8.svg'), SVGSIZE.format(f='d8.svg')],
    'pic.tp8': [TP8D, '{aicc} explain {tmp}/tp8.aip --emit svg -o {tmp}/tp8.svg', SVGSIZE.format(f='tp8.svg')],
    'pic.vr': ['{aicc} compile examples/llama3.1-70b.aig --phase decode --batch 32 --context 4096 --target vera-rubin '
               '--emit svg -o {tmp}/vr.svg', SVGSIZE.format(f='vr.svg')],
})


def three(label):
    """The regex of one row of `explain --compare` (as compiled, hybrid, gpu-only, lpu-only columns)."""
    return r'^\s*' + re.escape(label) + r'\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$'


def sig3(x):
    """3 significant digits, as %.3g, without an exponent for numbers below 1e6."""
    v = float(x)
    if v == 0:
        return '0'
    return ('%.3g' % v) if abs(v) < 1e6 else ('%.0f' % v)


def whole(x):
    return '%.0f' % float(x)


# docs/passes.md: the training step's MFU anchors (testsuite/train/llama3-mfu*.test)
TRAIN_ANCHORS = {   # id -> (compile options, published MFU)
    'l3a': ('examples/llama3.1-405b.aig --phase train --batch 1 --context 8192 --grad-accum 32 --target hopper '
            '--machine llama3-h100-roce --tp 8 --pp 16 --dp 64 --pp-virtual 2 --recompute selective', 0.43),
    'l3b': ('examples/llama3.1-405b.aig --phase train --batch 1 --context 8192 --grad-accum 16 --target hopper '
            '--machine llama3-h100-roce --tp 8 --pp 16 --dp 128 --pp-virtual 2 --recompute selective', 0.41),
    'l3c': ('examples/llama3.1-405b.aig --phase train --batch 1 --context 131072 --grad-accum 16 --target hopper '
            '--machine llama3-h100-roce --tp 8 --pp 16 --dp 8 --cp 16 --pp-virtual 2 --recompute selective', 0.38),
    'mt70': ('examples/llama3.1-70b.aig --bind V=32000,CTX=4096 --phase train --batch 4 --context 4096 --target tpu '
             '--machine tpu-v5p-8960 --dp 512 --zero 3 --recompute selective-ffn', 0.654),
    'meg18': ('{tmp}/gpt-bf16.aig --bind H=48,HD=128,L=40,F=24576,V=51200,P=2048 --phase train --batch 8 --context 2048 '
              '--grad-accum 4 --target ampere --machine selene-a100 --tp 8 --dp 32 --zero 0 --recompute full '
              '--no-sequence-parallel --unfused-attention --hidden-dropout', 0.324),
}
for k, (opts, pub) in TRAIN_ANCHORS.items():
    COMMANDS['train.' + k] = (["sed 's/f32\\[/bf16[/g' examples/gpt2-small.aig > {tmp}/gpt-bf16.aig"] if k == 'meg18' else []) + [
                              '{aicc} compile ' + opts + ' --emit summary -o {tmp}/' + k + '.json',
                              'python3 testsuite/train/Inputs/train_step.py anchor {tmp}/' + k + '.json %g 1' % pub]


def pct1(x):
    """A fraction as a percentage with one decimal."""
    return '%.1f' % (100 * float(x))


# id -> (command id, regex, group, format function, suffix)
NUMBERS = {}
for cmd in ('vr70', 'vr70-readme'):
    for col, name in ((1, 'plan'), (2, 'hybrid'), (3, 'gpu'), (4, 'lpu')):
        p = cmd + '.' + name
        NUMBERS[p + '.gpus'] = (cmd, three('GPUs'), col, whole, '')
        NUMBERS[p + '.lpus'] = (cmd, three('LPUs'), col, whole, '')
        NUMBERS[p + '.mb'] = (cmd, three('micro-batches'), col, whole, '')
        NUMBERS[p + '.tpot'] = (cmd, three('TPOT ms'), col, sig3, ' ms')
        NUMBERS[p + '.tps_user'] = (cmd, three('tokens/s per user'), col, whole, '')
        NUMBERS[p + '.tps_chip'] = (cmd, three('tokens/s per chip'), col, whole, '')
        NUMBERS[p + '.gpu_busy'] = (cmd, three('GPU pool busy ms'), col, sig3, ' ms')


def asis(x):
    return x


def diff_row(label):
    """A row of `explain NEW --compare OLD`: old, new, change."""
    return r'^\s*' + re.escape(label) + r'\s+(\S+)\s+(\S+)\s+(\S+)\s*$'


for cmd in ('excl7', 'excl28'):
    NUMBERS[cmd + '.old'] = (cmd, diff_row('TTFT ms'), 1, asis, ' ms')
    NUMBERS[cmd + '.new'] = (cmd, diff_row('TTFT ms'), 2, asis, ' ms')
    NUMBERS[cmd + '.change'] = (cmd, diff_row('TTFT ms'), 3, asis, '')
    NUMBERS[cmd + '.shape'] = (cmd, r'shape\s+old (tp \d+ x pp \d+); new (tp \d+ x pp \d+)', 2, asis, '')
NUMBERS['excl28.oldshape'] = ('excl28', r'shape\s+old (tp \d+ x pp \d+); new', 1, asis, '')
NUMBERS['goodput.mtbf'] = ('goodput', r'MTBF (\S+) h', 1, asis, ' h')
NUMBERS['goodput.rate'] = ('goodput', r'^failures\s+(\S+) per device-hour', 1, asis, '')
NUMBERS['goodput.ckpt'] = ('goodput', r'^checkpoint\s+(\S+ GB)', 1, asis, '')
NUMBERS['goodput.write'] = ('goodput', r'write (\S+) s', 1, asis, ' s')
for k in ('Young', 'Daly', 'best', 'given'):
    rx = r'^interval ' + k + r'\s+(\S+) s \((\S+) min\): useful work (\S+) \(model\)(?:, (\S+) \+- (\S+))?'
    NUMBERS['goodput.%s.s' % k.lower()] = ('goodput', rx, 1, asis, ' s')
    NUMBERS['goodput.%s.model' % k.lower()] = ('goodput', rx, 3, asis, '')
    NUMBERS['goodput.%s.sim' % k.lower()] = ('goodput', rx, 4, asis, '')
COMP = (r'compressed\s+(\d+) all-reduces over (\d+) devices as (\S+): (\S+ \S+) on each member.s links instead of '
        r'(\S+ \S+) \((\S+)x fewer, (\S+ \S+) saved: (\S+ \S+) of link time\); encode/decode (\S+ \S+);.*'
        r'allows \(p\+1\)/\(2\^B-1\) = (\S+) per')
for i, k in enumerate(('count', 'ranks', 'codec', 'wire', 'raw', 'ratio', 'saved', 'link', 'codec_time', 'allow'), 1):
    NUMBERS['comp.' + k] = ('comp', COMP, i, asis, '')
for name, (tgt, model, ctx) in {'w8': ('wafer', 'llama3.1-8b', 1000), 'w70': ('wafer', 'llama3.1-70b', 1000),
                                 'w405': ('wafer', 'llama3.1-405b', 1000), 'hc1': ('hardwired', 'llama3.1-8b', 1500)}.items():
    rx = r'^' + tgt + r'\s+end-to-end ' + re.escape(model) + r' B=1 ctx=%d\s+(\S+)\s+(\S+)\s+(\S+)' % ctx
    NUMBERS['val.%s.pred' % name] = ('validate-llama', rx, 1, whole, '')
    NUMBERS['val.%s.pub' % name] = ('validate-llama', rx, 2, whole, '')
    NUMBERS['val.%s.err' % name] = ('validate-llama', rx, 3, asis, '')
GAPRX = r'step (\S+) us, published (\S+) us, (\d+) instructions: (\S+) us each, ratio (\S+)'
for cmd in ('w8gap', 'w2waferllm', 'hc1gap'):
    for i, k in enumerate(('step', 'published', 'instructions', 'each', 'ratio'), 1):
        NUMBERS['%s.%s' % (cmd, k)] = (cmd, GAPRX, i, asis, ' us' if k in ('step', 'published', 'each') else '')
for tgt, rows in (('lpu', ('llama2-7b', 'llama2-70b', 'mixtral-8x7b')),
                  ('wafer', ('llama3.1-8b', 'llama3.1-70b', 'llama3.1-405b'))):
    for r in rows:
        key = 'layer-%s.%s' % (tgt, r)
        rx = r'^layer ' + tgt + ' ' + re.escape(r) + r': predicted (\S+ us), published (\S+ us) per layer'
        NUMBERS[key + '.pred'] = ('layer-' + tgt, rx, 1, asis, '')
        NUMBERS[key + '.pub'] = ('layer-' + tgt, rx, 2, asis, '')
        NUMBERS[key + '.c'] = ('layer-' + tgt, r'^closing ' + tgt + ' ' + re.escape(r) + r': (\S+ us) per layer', 1, asis, '')
        for o in rows:
            if o != r:
                NUMBERS['%s.then.%s' % (key, o)] = ('layer-' + tgt, r'^closing ' + tgt + ' ' + re.escape(r) +
                                                    r': .*?(?:then|,) ' + re.escape(o) + r' (\S+%)', 1, asis, '')
NUMBERS['l7spread.chips'] = ('l7spread', r'^compute .* on (\d+) lpu devices', 1, whole, '')
NUMBERS['l7spread.tps'] = ('l7spread', r'^TPOT .*?: (\S+) tokens/s per user', 1, whole, '')
# docs/targets-lpu.md "Deployment": each LPU validation row's plan at batch 1 and at 5 (LLMPerf's 5
# concurrent requests): the chips it fills and its per-user rate, beside Groq's reported chip counts
LPUDEP = {'llama2-7b': ('llama3.1-8b', 'KV=32,F=11008,V=32000,CTX=4096'), 'llama2-70b': ('llama3.1-70b', 'V=32000,CTX=4096'),
          'mixtral-8x7b': ('mixtral-8x7b', '')}
for r, (model, bind) in LPUDEP.items():
    # b1, b5: batch 1 and 5; s16: batch 1 with each MXM fed by one direction's 32 stream registers
    # (16 per direction, so mem_vec = 32) instead of both directions' 64, the what-if of the section
    for b, cid, extra in ((1, 'lpudep.%s.b1' % r, ''), (5, 'lpudep.%s.b5' % r, ''),
                          (1, 'lpudep.%s.s16' % r, '--set lpu.streams.count=16 ')):
        COMMANDS[cid] = ['{aicc} compile examples/%s.aig %s--target lpu --machine groq-pod-v1 --phase decode --batch %d '
                         '--context 625 %s-o {tmp}/d.aip' % (model, '--bind %s ' % bind if bind else '', b, extra),
                         '{aicc} run {tmp}/d.aip --timing-only']
        NUMBERS[cid + '.chips'] = (cid, r'^compute .* on (\d+) lpu devices', 1, whole, '')
        NUMBERS[cid + '.tps'] = (cid, r'^TPOT .*?: (\S+) tokens/s per user', 1, whole, '')
# the 7B spread over about as many chips as Groq's 8-rack deployments (36 MiB chips: the fill's 90 % of them)
COMMANDS['lpudep.llama2-7b.spread'] = ['{aicc} compile examples/llama3.1-8b.aig --bind KV=32,F=11008,V=32000,CTX=4096 --target lpu '
                                       '--machine groq-pod-v1 --phase decode --batch 1 --context 625 --set lpu.sram.capacity=36MiB '
                                       '-o {tmp}/d.aip', '{aicc} run {tmp}/d.aip --timing-only']
NUMBERS['lpudep.llama2-7b.spread.chips'] = ('lpudep.llama2-7b.spread', r'^compute .* on (\d+) lpu devices', 1, whole, '')
NUMBERS['lpudep.llama2-7b.spread.tps'] = ('lpudep.llama2-7b.spread', r'^TPOT .*?: (\S+) tokens/s per user', 1, whole, '')
for k in TRAIN_ANCHORS:
    NUMBERS['train.%s.mfu' % k] = ('train.' + k, r'MFU predicted (\S+), published \S+: (\S+)%', 1, pct1, ' %')
    NUMBERS['train.%s.gap' % k] = ('train.' + k, r'MFU predicted (\S+), published \S+: (\S+)%', 2, asis, ' %')
# docs/passes.md: every row of Megatron-LM's SC'21 Table 1 and of MaxText's README MFU table
# (testsuite/train/megatron-sc21-table1.test, maxtext-readme-mfu.test)
TRAIN_TABLES = {'megtab': 'megatron-sc21', 'mttab': 'maxtext-readme'}
for k, f in TRAIN_TABLES.items():
    COMMANDS['train.' + k] = ['python3 testsuite/train/Inputs/mfu_rows.py {aicc} . {tmp} testsuite/train/Inputs/%s.json' % f]
    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'testsuite', 'train', 'Inputs', f + '.json')) as fh:
        rows = [r['name'] for r in json.load(fh)['rows'] if r['expect'] != 'unpriced']
    for i, name in enumerate(rows):
        NUMBERS['train.%s.r%d' % (k, i)] = ('train.' + k, r'^%s +\d+ +\S+ +\S+ +(\S+)%%' % re.escape(name), 1, asis, ' %')
    NUMBERS['train.%s.median' % k] = ('train.' + k, r'median \|error\| (\S+) %', 1, asis, ' %')
    NUMBERS['train.%s.worst' % k] = ('train.' + k, r'worst (\S+) %', 1, asis, ' %')
    NUMBERS['train.%s.within' % k] = ('train.' + k, r'within 10 %: (\d+)', 1, asis, '')
NUMBERS['hc1bound.compute'] = ('hc1bound', r'bound\s+compute (\S+%)', 1, asis, '')
for label in DEMO:
    NUMBERS['demo.%s.tpot' % label] = ('demo-%s-decode' % label, r'^TPOT\s+(\S+ \S+) \(decode.*?: (\S+) tokens/s per user', 1, asis, '')
    NUMBERS['demo.%s.tps' % label] = ('demo-%s-decode' % label, r'^TPOT\s+(\S+ \S+) \(decode.*?: (\S+) tokens/s per user', 2, asis, '')
    NUMBERS['demo.%s.ttft' % label] = ('demo-%s-prefill' % label, r'^TTFT\s+(\S+ \S+) \(prefill', 1, asis, '')
NUMBERS['comp.ttft'] = ('comp-ttft', r'^TTFT\s+(\S+ ms)', 1, asis, '')
NUMBERS['raw.ttft'] = ('raw-ttft', r'^TTFT\s+(\S+ ms)', 1, asis, '')
RS = r'^moves +(\d+): kept on the device (\S+) GB, NVLink (\S+) GB, network (\S+) GB, from checkpoint (\S+) GB$'
NUMBERS['reshard70.state'] = ('reshard70', r'^state +\d+ tensors, (\S+) GB', 1, sig3, ' GB')
NUMBERS['reshard70.moves'] = ('reshard70', RS, 1, whole, '')
NUMBERS['reshard70.local'] = ('reshard70', RS, 2, sig3, ' GB')
NUMBERS['reshard70.nvlink'] = ('reshard70', RS, 3, sig3, ' GB')
NUMBERS['reshard70.network'] = ('reshard70', RS, 4, sig3, ' GB')
NUMBERS['reshard70.storage'] = ('reshard70', RS, 5, sig3, ' GB')
NUMBERS['reshard70.time'] = ('reshard70', r'^predicted +(\S+) s', 1, sig3, ' s')

# README.md and docs/*.md (issue 17): figures quoted in prose
def line(label, rx):
    """The regex of an `aicc run` line `label` whose first group is the figure rx matches."""
    return r'^' + re.escape(label) + r'\s.*?' + rx


NUMBERS.update({
    'd8.tpot': ('d8.run', line('TPOT', r'(\S+) ms \(decode'), 1, sig3, ' ms'),
    'd8.tps': ('d8.run', line('TPOT', r'([0-9.]+) tokens/s per user'), 1, whole, ''),
    'p8.ttft': ('p8.run', line('TTFT', r'(\S+) ms \(prefill'), 1, sig3, ' ms'),
    'tp8.tpot': ('tp8.run', line('TPOT', r'(\S+) ms \(decode'), 1, sig3, ' ms'),
    'pp4.tpot': ('pp4.run', line('TPOT', r'(\S+) ms \(decode'), 1, sig3, ' ms'),
    'tp8.peak0': ('tp8.run', r'^memory\s+gpu0\.hbm: .*?peak (\S+ GB)', 1, str, ''),
    'tp8.peak1': ('tp8.run', r'^memory\s+gpu1\.hbm: .*?peak (\S+ GB)', 1, str, ''),
    'kvrep.tpot': ('kvrep.run', line('TPOT', r'(\S+) ms \(decode'), 1, sig3, ' ms'),
    'kvrep.peak0': ('kvrep.run', r'^memory\s+gpu0\.hbm: .*?peak (\S+ GB)', 1, str, ''),
    'kvrep.peak1': ('kvrep.run', r'^memory\s+gpu1\.hbm: .*?peak (\S+ GB)', 1, str, ''),
})
for pic in ('d8', 'tp8', 'vr'):
    NUMBERS['pic.%s.size' % pic] = ('pic.' + pic, r'width="([0-9]+)pt" height="([0-9]+)pt"', 0,
                                    lambda x: '%s x %s' % tuple(re.findall(r'[0-9]+', x)), ' pt')
    NUMBERS['pic.%s.nodes' % pic] = ('pic.' + pic, r'^nodes (\d+)', 1, whole, ' nodes')
for k in range(4):
    NUMBERS['pp4.peak%d' % k] = ('pp4.run', r'^memory\s+gpu%d\.hbm: .*?peak (\S+) GB' % k, 1, lambda x: '%.1f' % float(x), '')

# docs/machines.md, docs/targets-tpu.md: validation rows (tools/validate.py --only TARGET) and what they show
def valrow(nid, cmd, case):
    """NUMBERS NID.pred, .pub, .err (signed, %), .abs ('22 %') of the validate row CASE in command CMD's output."""
    rx = r'^\S+\s+\S+\s+' + re.escape(case) + r'\s+(\S+)\s+(\S+)\s+([-+]\S+)%'
    NUMBERS[nid + '.pred'] = (cmd, rx, 1, asis, '')
    NUMBERS[nid + '.pub'] = (cmd, rx, 2, asis, '')
    NUMBERS[nid + '.err'] = (cmd, rx, 3, asis, ' %')
    NUMBERS[nid + '.abs'] = (cmd, rx, 3, lambda x: '%.0f' % abs(float(x)), ' %')
    NUMBERS[nid + '.pred1'] = (cmd, rx, 1, lambda x: '%.1f' % float(x), '')
    NUMBERS[nid + '.pub1'] = (cmd, rx, 2, lambda x: '%.1f' % float(x), '')


for tgt in ('tpu', 'hopper'):
    COMMANDS['validate-' + tgt] = ['python3 tools/validate.py "$(dirname {aicc})" --only ' + tgt]
COMMANDS['validate-hopper'] = ['python3 tools/validate.py "$(dirname {aicc})" --only "B=96 2048/128"']
valrow('val.js-bf16', 'validate-tpu', 'jetstream-pt-168 32768x32768x32768 bf16')
valrow('val.js-int8', 'validate-tpu', 'jetstream-pt-168 32768x32768x32768 int8')
valrow('val.jax-4096', 'validate-tpu', 'jax-pallas-mm 4096x4096x4096 bf16')
valrow('val.jax-8192', 'validate-tpu', 'jax-pallas-mm 8192x8192x8192 bf16')
for k in (128, 256, 512, 1024, 2048, 4096, 16384, 32768):
    valrow('val.iw-%d' % k, 'validate-tpu', 'ironwood-micro %dx%dx%d bf16' % (k, k, k))
valrow('val.h100-70b-b96', 'validate-hopper', 'H100 llama2-70b B=96 2048/128 tp2')
COMMANDS['validate-b896'] = ['python3 tools/validate.py "$(dirname {aicc})" --only "B=896 128/128"']
valrow('val.h100-7b-b896', 'validate-b896', 'H100 llama2-7b B=896 128/128')
valrow('val.h200-7b-b896', 'validate-b896', 'H200 llama2-7b B=896 128/128')
COMMANDS['validate-vllm'] = ['python3 tools/validate.py "$(dirname {aicc})" --only latency']
for gpu in ('H200', 'A100'):
    for r, tp in (('llama3.1-8b', ''), ('llama3-70b', ' tp4'), ('mixtral-8x7b', ' tp2')):
        valrow('val.vllm-%s-%s' % (gpu.lower(), r), 'validate-vllm', '%s %s latency B=8 32/128%s' % (gpu, r, tp))
COMMANDS['validate-liger'] = ['python3 tools/validate.py "$(dirname {aicc})" --only liger-1380']
for k in (256, 512, 1024, 2048):
    valrow('val.liger-%d' % k, 'validate-liger', 'liger-1380 128256x4096x%d bf16' % k)
for r in ('llama2-7b', 'llama2-70b', 'mixtral-8x7b'):
    NUMBERS['layer-lpu.%s.pred.us' % r] = ('layer-lpu', r'^layer lpu ' + re.escape(r) + r': predicted (\S+) us', 1, whole, ' us')
COMMANDS['b96'] = ['{aicc} compile examples/llama3.1-70b.aig --target hopper --machine dgx-h100 --phase prefill --batch 96 '
                   '--context 2048 --precision fp8 --bind V=32000,CTX=4096 --kv-format fp8 '
                   '--passes=canonicalize,place-precision,fuse,partition,schedule,plan-memory --tp 2 -o {tmp}/b96.aip',
                   '{aicc} run {tmp}/b96.aip --timing-only']
NUMBERS['b96.peak0'] = ('b96', r'^memory\s+gpu0\.hbm: .*?peak (\S+ GB)', 1, asis, '')

# docs/targets-tpu.md (tools/tpu-doc-numbers.sh before): one compile and `aicc run --timing-only` per cell
def tpu(cid, args, explain=False):
    """Command CID: compile ARGS for the tpu target, then its timing (and with EXPLAIN its explain summary)."""
    COMMANDS[cid] = ['{aicc} compile %s --target tpu -o {tmp}/p.aip' % args, '{aicc} run {tmp}/p.aip --timing-only' +
                     (' && {aicc} explain {tmp}/p.aip' if explain else '')]
    NUMBERS[cid] = (cid, r'^latency\s+(\S+ \S+)', 1, asis, '')


# docs/targets-tpu.md: the v5e 32768^3 bf16 GEMM row's block and its HBM and MXU terms (explain's t.* fields)
COMMANDS['tpu.g32k'] = ["printf 'graph main(a: bf16[M, K], b: bf16[K, N]) -> (y: bf16[M, N]) {{\\n  y = MatMul(a, b)\\n}}\\n' "
                        "> {tmp}/g.aig", '{aicc} compile {tmp}/g.aig --target tpu --machine tpu-v5e --precision bf16 -O0 '
                        '--bind M=32768,N=32768,K=32768 -o {tmp}/g.aip', 'cat {tmp}/g.aip']
NUMBERS['tpu.g32k.block'] = ('tpu.g32k', r't\.vmem_block="(\S+)"', 1, asis, '')
NUMBERS['tpu.g32k.hbm'] = ('tpu.g32k', r't\.hbm_us="(\S+)"', 1, lambda x: '%.1f ms' % (float(x) / 1e3), '')
NUMBERS['tpu.g32k.mxu'] = ('tpu.g32k', r't\.mxu_us="(\S+)"', 1, lambda x: '%.1f ms' % (float(x) / 1e3), '')
for m in ('tpu-v5e', 'tpu-v6e', 'tpu-v7', 'tpu-8i'):
    for sb in (1, 128):
        tpu('tpu.%s.gpt2.s%d' % (m, sb), 'examples/gpt2-small.aig --machine %s --bind B=1,S=%d' % (m, sb))
tpu('tpu.tpu-v7.l8.s1', 'examples/llama3.1-8b.aig --machine tpu-v7 --bind B=1,S=1')
COMMANDS['tpu.v5e.l8.nofit'] = ['{aicc} compile examples/llama3.1-8b.aig --target tpu --machine tpu-v5e --bind B=1,S=1 '
                                '-o {tmp}/p.aip 2>&1 | grep "does not fit" || true']
NUMBERS['tpu.v5e.l8.nofit'] = ('tpu.v5e.l8.nofit', r'need at least ([0-9.]+ GB)', 1, asis, '')
for m, opt in (('tpu-v5e-256', ' --passes=canonicalize,partition --pp 2'), ('tpu-v5p', ''),
               ('tpu-v5p-64', ' --passes=canonicalize,partition --pp 2'), ('tpu-v7', ''),
               ('tpu-v7-64', ' --passes=canonicalize,partition --pp 2'), ('tpu-8i', ''),
               ('tpu-8i-4', ' --passes=canonicalize,partition --pp 2')):
    tpu('tpu.%s.tpot' % m, 'examples/llama3.1-8b.aig --machine %s%s --phase decode --batch 1 --context 8192' % (m, opt),
        explain=bool(opt))
    tpu('tpu.%s.ttft' % m, 'examples/llama3.1-8b.aig --machine %s%s --phase prefill --batch 1 --context 2048' % (m, opt))
    if opt:
        NUMBERS['tpu.%s.ici' % m] = ('tpu.%s.tpot' % m, r'^\s+op class .*?link \S+% \((\S+ \S+)\)', 1, asis, '')
Q = '--passes=canonicalize,place-precision,fuse,partition,schedule,plan-memory'
tpu('tpu.v5e256.pp2', 'examples/llama3.1-8b.aig --machine tpu-v5e-256 %s --pp 2 --phase decode --batch 1 --context 4096' % Q)
tpu('tpu.v5e256.tp4', 'examples/llama3.1-8b.aig --machine tpu-v5e-256 %s --tp 4 --phase decode --batch 1 --context 4096' % Q)
FFN = 'testsuite/tpu/Inputs/tp-ffn.aig --bind T=16,D=1024,F=4096'
tpu('tpu.ffn.v5e', FFN + ' --machine tpu-v5e')
for m in ('tpu-v5e-256', 'tpu-v5p-64', 'tpu-v7-64', 'tpu-8i-4'):
    tpu('tpu.ffn.%s' % m, FFN + ' --machine %s --passes=partition --tp 4' % m, explain=True)
    NUMBERS['tpu.ffn.%s.ar' % m] = ('tpu.ffn.%s' % m, r'^\s+allreduce\s+\d+\s+(\S+ \S+)', 1, asis, '')
# the 8i's KV residency (testsuite/tpu/kv-sram.test's plan)
COMMANDS['tpu.kvsram'] = ['{aicc} compile examples/llama3.1-8b.aig --target tpu --machine tpu-8i --phase decode --context 8192 '
                          '--emit plan -o {tmp}/d.aip', 'grep -m1 -o \'t.kv_sram="[^"]*"\' {tmp}/d.aip && {aicc} explain {tmp}/d.aip']
KVS = r'(\d+) of (\d+) blocks of (\d+) tokens in SRAM \((\S+ MB)\), (\d+) in HBM \((\S+) MB\)'
NUMBERS['tpu.kvsram.sram'] = ('tpu.kvsram', KVS, 4, asis, '')
NUMBERS['tpu.kvsram.hbm'] = ('tpu.kvsram', KVS, 6, asis, ' MB')
NUMBERS['tpu.kvsram.hbm1'] = ('tpu.kvsram', KVS, 6, lambda x: '%.1f' % float(x), ' MB')
NUMBERS['tpu.kvsram.xsram'] = ('tpu.kvsram', r'^\s+layer#1(?:\.\.\d+)?\s.*kv_cache sram (\S+ MiB) hbm (\S+ MiB)', 1, asis, '')
NUMBERS['tpu.kvsram.xhbm'] = ('tpu.kvsram', r'^\s+layer#1(?:\.\.\d+)?\s.*kv_cache sram (\S+ MiB) hbm (\S+ MiB)', 2, asis, '')

# docs/targets-lpu.md, docs/explain.md: llama3.1-70b decode on groq-pod-v1 and groq-lpx (testsuite/lpu/llama70b-pod.test)
def lpu_plan(cid, model, machine, extra=''):
    """Command CID: compile MODEL's batch-1 decode step for the lpu target on MACHINE, then timing,
    explain's first line, the plan's size and its schedule attributes."""
    COMMANDS[cid] = ['{aicc} compile examples/%s.aig --target lpu --machine %s --phase decode --batch 1 --context 4096%s '
                     '-o {tmp}/p.aip' % (model, machine, extra),
                     '{aicc} run {tmp}/p.aip --timing-only && {aicc} explain {tmp}/p.aip | head -1 && '
                     'stat -c "size %s" {tmp}/p.aip && grep -m1 -o \'t\\.[a-z0-9_.]*="[0-9.]*"\' {tmp}/p.aip']
    NUMBERS[cid + '.chips'] = (cid, r'on (\d+) lpu devices', 1, lambda x: '{:,}'.format(int(x)), ' chips')
    NUMBERS[cid + '.lpus'] = (cid, r'on (\d+) lpu devices', 1, whole, ' LPUs')
    NUMBERS[cid + '.fullest'] = (cid, r'fullest \S+: peak (\S+ MB)', 1, asis, '')
    NUMBERS[cid + '.instr'] = (cid, r'(\d+) instructions, predicted', 1, lambda x: '{:,}'.format(int(x)), ' instructions')
    NUMBERS[cid + '.tpot'] = (cid, r'^TPOT\s+(\S+ \S+)', 1, asis, '')
    NUMBERS[cid + '.tps'] = (cid, r'^TPOT.*?: (\S+) tokens/s per user', 1, asis, ' tokens/s')
    NUMBERS[cid + '.size'] = (cid, r'^size (\d+)', 1, lambda x: '%.1f MB' % (int(x) / 1e6), '')
    for a in ('schedule_cycles', 'c2c_copies', 'c2c_directions', 'critical_ops', 'critical_c2c'):
        NUMBERS[cid + '.' + a] = (cid, r't\.' + a + r'="(\d+)"', 1, lambda x: '{:,}'.format(int(x)), '')
    NUMBERS[cid + '.c2c_k'] = (cid, r't\.critical_c2c_cycles="(\d+)"', 1, lambda x: '%.0f k' % (int(x) / 1e3), '')
    NUMBERS[cid + '.c2c'] = (cid, r't\.schedule_cycles="\d+"[\s\S]*?t\.critical_c2c_cycles="\d+"', 0,
                             lambda x: '%.0f %%' % (100.0 * int(re.search(r'critical_c2c_cycles="(\d+)"', x).group(1)) /
                                                       int(re.search(r'schedule_cycles="(\d+)"', x).group(1))), '')


lpu_plan('pod70', 'llama3.1-70b', 'groq-pod-v1')
lpu_plan('lpx70', 'llama3.1-70b', 'groq-lpx')
lpu_plan('pod405', 'llama3.1-405b', 'groq-pod-v1', ' --set lpu.count=5000')
# gpt2-small on one chip and a rack (docs/targets-lpu.md "Reports"): schedule length and unit use
COMMANDS['lpu.gpt2.tiny'] = ['{aicc} compile examples/gpt2-small.aig --bind L=2,H=2,HD=16,F=64,V=256,P=16,B=1,S=8 --target lpu '
                             '--machine groq-lpu-v1 -o {tmp}/p.aip', '{aicc} run {tmp}/p.aip --timing-only && '
                             '{aicc} explain {tmp}/p.aip | head -1 && grep -m1 -o \'t\\.[a-z0-9_.]*="[0-9.]*"\' {tmp}/p.aip']
NUMBERS['lpu.gpt2.tiny.cycles'] = ('lpu.gpt2.tiny', r't\.schedule_cycles="(\d+)"', 1, whole, '')
NUMBERS['lpu.gpt2.tiny.instr'] = ('lpu.gpt2.tiny', r'(\d+) instructions, predicted', 1, whole, ' instructions')
NUMBERS['lpu.gpt2.tiny.lat'] = ('lpu.gpt2.tiny', r'^latency\s+(\S+ \S+)', 1, asis, '')
for u in ('mxm.e', 'vxm.e', 'sxm.e', 'sxm.w'):
    NUMBERS['lpu.gpt2.tiny.' + u] = ('lpu.gpt2.tiny', r't.util.' + re.escape(u) + r'="([0-9.]+)"', 1,
                                     lambda x: '%.0f %%' % (100 * float(x)), '')
COMMANDS['lpu.gpt2.lp30'] = ['{aicc} compile examples/gpt2-small.aig --bind B=1,S=128 --target lpu '
                             '--machine groq-lp30 -o {tmp}/p.aip', '{aicc} run {tmp}/p.aip --timing-only && '
                             'grep -m1 -o \'t\\.[a-z0-9_.]*="[0-9.]*"\' {tmp}/p.aip']
NUMBERS['lpu.gpt2.lp30.cycles'] = ('lpu.gpt2.lp30', r't\.schedule_cycles="(\d+)"', 1, lambda x: '{:,}'.format(int(x)), '')
NUMBERS['lpu.gpt2.lp30.lat'] = ('lpu.gpt2.lp30', r'^latency\s+(\S+ \S+)', 1, asis, '')
NUMBERS['lpu.gpt2.lp30.mxm'] = ('lpu.gpt2.lp30', r't.util.mxm.e="([0-9.]+)"', 1, lambda x: '%.0f %%' % (100 * float(x)), '')
COMMANDS['lpu.gpt2.rack'] = ['{aicc} compile examples/gpt2-small.aig --bind B=1,S=128 --target lpu --machine groq-rack-v1 '
                             '-o {tmp}/p.aip', '{aicc} run {tmp}/p.aip --timing-only > {tmp}/r.txt && cat {tmp}/r.txt && '
                             'printf "chips %s\\n" $(grep -c "^compute" {tmp}/r.txt) && grep -m1 -o \'t\\.[a-z0-9_.]*="[0-9.]*"\' {tmp}/p.aip']
NUMBERS['lpu.gpt2.rack.cycles'] = ('lpu.gpt2.rack', r't\.schedule_cycles="(\d+)"', 1, lambda x: '{:,}'.format(int(x)), '')
NUMBERS['lpu.gpt2.rack.chips'] = ('lpu.gpt2.rack', r'^chips (\d+)', 1, whole, ' chips')
NUMBERS['lpu.gpt2.rack.lat'] = ('lpu.gpt2.rack', r'^latency\s+(\S+ \S+)', 1, asis, '')

COMMANDS['lpu.rack70.err'] = ['{aicc} compile examples/llama3.1-70b.aig --target lpu --machine groq-rack-v1 --phase decode '
                              '--batch 1 --context 4096 -o {tmp}/x.aip 2>&1 | grep error || true']
COMMANDS['lpu.gpt2.err'] = ['{aicc} compile examples/gpt2-small.aig --target lpu --machine groq-lpu-v1 --bind B=1,S=128 '
                            '-o {tmp}/x.aip 2>&1 | grep error || true']

# docs/explain.md: the pictures' limits and the PP-OCR pictures (the real models, which tools/fetch-models.sh
# fetches; without them those figures are reported unchecked)
COMMANDS['pic.expand8'] = ['{aicc} compile examples/llama3.1-8b.aig --bind B=1,S=128 --expand --emit dot -o {tmp}/e.dot',
                           'printf "nodes %s\\n" $(grep -cE "^\\s*n[0-9]+\\s+\\[" {tmp}/e.dot)']
NUMBERS['pic.expand8.nodes'] = ('pic.expand8', r'^nodes (\d+)', 1, whole, ' nodes')
OCR = '.cache/models/ocr-models-1.4.2/package/assets/'
REQUIRES = {}
for pic, (f, shape) in {'rec': ('ch_PP-OCRv4_rec_infer.onnx', '1,3,48,320'),
                        'cls': ('ch_ppocr_mobile_v2.0_cls_infer.onnx', '1,3,48,192'),
                        'det': ('ch_PP-OCRv4_det_infer.onnx', '1,3,640,640')}.items():
    COMMANDS['pic.' + pic] = ['{aicc} compile %s%s --shape x=%s --target hopper -O1 --emit svg -o {tmp}/%s.svg'
                              % (OCR, f, shape, pic), SVGSIZE.format(f=pic + '.svg')]
    REQUIRES['pic.' + pic] = OCR + f
    NUMBERS['pic.%s.size' % pic] = ('pic.' + pic, r'width="([0-9]+)pt" height="([0-9]+)pt"', 0,
                                    lambda x: '%s x %s' % tuple(re.findall(r'[0-9]+', x)), ' pt')
    NUMBERS['pic.%s.nodes' % pic] = ('pic.' + pic, r'^nodes (\d+)', 1, whole, ' nodes')

# docs/targets-gpu.md: the alpha-beta all-reduce of testsuite/multi
COMMANDS['ar16'] = ['{aicc} run testsuite/multi/gpu-allreduce-alpha-beta.aip --timing-only']
NUMBERS['ar16.lat'] = ('ar16', r'^latency\s+(\S+ \S+)', 1, asis, '')

# docs/onnx.md: the PP-OCRv4 recogniser's plan for `Hello World` on the reference target
COMMANDS['ocr.hello'] = ['{aicc} compile %sch_PP-OCRv4_rec_infer.onnx --shape x=1,3,48,199 --emit plan -o {tmp}/h.aip' % OCR,
                         'stat -c "weights %s" {tmp}/h.weights.safetensors && {aicc} run {tmp}/h.aip --timing-only']
REQUIRES['ocr.hello'] = OCR + 'ch_PP-OCRv4_rec_infer.onnx'
NUMBERS['ocr.hello.weights'] = ('ocr.hello', r'^weights (\d+)', 1, lambda x: '%.1f MB' % (int(x) / 1e6), '')
NUMBERS['ocr.hello.lat'] = ('ocr.hello', r'^latency\s+(\S+ \S+)', 1, asis, '')
NUMBERS['ocr.hello.flop'] = ('ocr.hello', r'^compute\s+(\S+ MFLOP)', 1, asis, '')

# docs/targets-vera-rubin.md: the disaggregate pass's remarks (KV pages; a MoE stack too large for the LPX rack)
COMMANDS['vr.remarks'] = ['(' + L70 + ' --remarks=placement' +
                          ' && {aicc} compile examples/deepseek-v3.aig --phase decode --batch 32 --context 4096 --target vera-rubin '
                          '--passes=disaggregate --pools hybrid --emit plan -o {tmp}/ds.aip --remarks=placement) 2>&1']
PAGED = r'KV cache paged .*?-> (\d+) blocks .*? of (\S+ kB) = (\S+ GB) in'
NUMBERS['vr.kv.blocks'] = ('vr.remarks', PAGED, 1, lambda x: '{:,}'.format(int(x)), '')
NUMBERS['vr.kv.block'] = ('vr.remarks', PAGED, 2, lambda x: '%.1f kB' % float(x.split()[0]), '')
NUMBERS['vr.kv.total'] = ('vr.remarks', PAGED, 3, lambda x: '%.1f GB' % float(x.split()[0]), '')
DSV3 = r"FFN of 'moe_layer' stays on the GPU pool: \d+ layers x \d+ lpu = (\d+) LPUs to hold (\S+ GB) of weights"
NUMBERS['vr.ds.lpus'] = ('vr.remarks', DSV3, 1, lambda x: '{:,}'.format(int(x)), ' LPUs')
NUMBERS['vr.ds.gb'] = ('vr.remarks', DSV3, 2, asis, '')
NUMBERS['vr70.gpu.gpus.u'] = ('vr70', three('GPUs'), 3, whole, ' GPUs')
NUMBERS['vr70.hybrid.lpus.layer'] = ('vr70', three('LPUs'), 2, lambda x: '%.0f LPUs' % (float(x) / 80), '')

# docs/passes.md: schedule and memory remarks, the partition pass's numbers
COMMANDS['passes.sched'] = ['cd examples && ({aicc} compile llama3.1-8b.aig --bind B=1,S=128 -O1 --remarks=schedule -o {tmp}/a.aip 2>&1 '
                            '| grep "graph .layer." ; {aicc} compile deepseek-v3.aig --bind B=1,S=128 -O1 --remarks=schedule '
                            '-o {tmp}/b.aip 2>&1 | grep "graph .mla.")']
COMMANDS['passes.mem8'] = ['{aicc} compile examples/llama3.1-8b.aig --bind B=1,S=4096 -O1 --remarks=memory -o {tmp}/a.aip 2>&1']
NUMBERS['passes.mem8.layer'] = ('passes.mem8', r"graph 'layer': arena (\S+ \S+) \(", 1, asis, '')
NUMBERS['passes.mem8.main'] = ('passes.mem8', r"graph 'main': arena (\S+ \S+) \(", 1, asis, '')
COMMANDS['passes.405tp8'] = ['{aicc} compile examples/llama3.1-405b.aig --bind B=1,S=128 --target hopper --machine dgx-h100 '
                             '--tp 8 --pp 1 -o {tmp}/a.aip 2>&1 | grep "on gpu1 " || true']
NUMBERS['passes.405tp8.gb'] = ('passes.405tp8', r'gpu1 of machine dgx-h100: it needs ([0-9.]+ GB)', 1, asis, '')
COMMANDS['passes.ep8'] = ['{aicc} compile examples/mixtral-8x7b.aig --bind B=1,S=128 --machine dgx-h100 --target hopper --ep 8 '
                          '--remarks=placement -o {tmp}/a.aip 2>&1 | grep "expert parallel"']
EP = r'\((\d+) bytes sent\), weighted partial sums added by an AllReduce \((\d+) bytes per device\).*?would move (\d+) bytes'
for i, k in enumerate(('sent', 'ar', 'a2a'), 1):
    NUMBERS['passes.ep8.' + k] = ('passes.ep8', EP, i, lambda x: '%.3g MB' % (int(x) / 1e6), '')

# docs/serving.md: the grid's prices against exact plans (aicc serve --cost-check)
LATE_BLOCKS = {}
for cid, args in (('h100', 'llama3.1-8b.aig --bind L=8 --target hopper'), ('b200', 'llama3.1-8b.aig --target blackwell --machine b200'),
                  ('70b', 'llama3.1-70b.aig --target hopper --machine dgx-h100 --tp 8 --max-batch 64')):
    COMMANDS['serve.cc.' + cid] = ['{aicc} serve examples/%s --rate 1 --cost-check' % args]
    LATE_BLOCKS['serve.cc.' + cid] = ('serve.cc.' + cid, r'^pool\s+batch', r'131 decodes|35 decodes at 600', [],
                                 ['aicc serve examples/%s --rate 1 --cost-check' % args])

# docs/serving.md: a mixed batch priced as one plan (testsuite/unit/test_serve.c test_mixed_is_one_step prints it)
COMMANDS['serve.mixed'] = ['"$(dirname {aicc})"/unit/test_serve 2>&1 | grep "mixed .* ms, decode"']
MIXED = r'mixed (\S+) ms, decode (\S+) ms \+ prefill (\S+) ms = (\S+) ms'
for i, k in enumerate(('mixed', 'decode', 'prefill', 'sum'), 1):
    NUMBERS['serve.mixed.' + k] = ('serve.mixed', MIXED, i, asis, ' ms' if k in ('mixed', 'sum') else '')
# docs/serving.md: the vera-rubin layout and pool sizing at two contexts
for ctx in (256, 512):
    COMMANDS['serve.vr%d' % ctx] = ['{aicc} compile examples/llama3.1-70b.aig --phase decode --batch 32 --context %d '
                                    '--passes=disaggregate --target vera-rubin --remarks=placement -o {tmp}/v.aip 2>&1 | '
                                    'grep -o "pools: [a-z-]*,\\|pools: [0-9]* gpu\\|whole model on [0-9]* lpu" && '
                                    '{aicc} run {tmp}/v.aip --timing-only' % ctx]
    NUMBERS['serve.vr%d.layout' % ctx] = ('serve.vr%d' % ctx, r'pools: ([a-z]+-only|hybrid),', 1, asis, '')
    NUMBERS['serve.vr%d.chips' % ctx] = ('serve.vr%d' % ctx, r'(?:pools: |whole model on )(\d+) ([gl]pu)', 1, whole, '')
    NUMBERS['serve.vr%d.tpot' % ctx] = ('serve.vr%d' % ctx, r'^TPOT\s+(\S+ \S+)', 1, asis, '')

# docs/serving.md: make demo's serving rows (tools/demo.sh serve_row): each deployment's capacity under the SLO
CHAT = ('--requests 1000 --input lognormal:161:1 --output lognormal:338:1 --rate 1 --slo ttft_p90=1s,tpot_p90=50ms '
        '--capacity --rate-min 0.1 --rate-max 2000 --bisect 8')
for tag, opt in (('a', '--target hopper --machine dgx-h100 --tp 8 --scheduler sarathi'),
                 ('b', '--prefill blackwell:b200x8,tp=8 --decode lpu:groq-lpx --max-batch 64'), ('c', '--deployment vera-rubin')):
    cid = 'serve.demo.' + tag
    COMMANDS[cid] = ['{aicc} serve examples/llama3.1-70b.aig %s %s' % (opt, CHAT)]
    CAP = r'^capacity\s+(\S+) req/s under the SLO \((\S+) per chip, (\d+) chips\)'
    AT = r'at capacity: TTFT p90 (\S+) s, TPOT p90 (\S+) s'
    NUMBERS[cid + '.cap'] = (cid, CAP, 1, lambda x: '%.3g' % float(x), ' req/s')
    NUMBERS[cid + '.per'] = (cid, CAP, 2, lambda x: '%.3g' % float(x), ' req/s')
    NUMBERS[cid + '.chips'] = (cid, CAP, 3, whole, '')
    NUMBERS[cid + '.ttft'] = (cid, AT, 1, lambda x: '%.3g s' % float(x), '')
    NUMBERS[cid + '.tpot'] = (cid, AT, 2, lambda x: '%.3g ms' % (1e3 * float(x)), '')

# docs/serving.md "Reproduced comparisons": testsuite/serve/Inputs/papers.py's output.  Its runs are the paper
# tests' (bisections of aicc serve, the longest of the suite), so those tests check these figures from the
# output they already have (--output ID=FILE); the check of all the docs leaves them to the tests (ELSEWHERE).
ELSEWHERE = {}
for paper in ('sarathi', 'distserve', 'paged'):
    COMMANDS['papers.' + paper] = ['python3 testsuite/serve/Inputs/papers.py {aicc} . ' + paper]
    ELSEWHERE['papers.' + paper] = 'testsuite/serve/paper-%s.test' % paper
for slo in ('strict', 'relaxed'):
    rx = r'^' + slo + r'\s+P99 TBT <= \S+\s+vLLM\s+(\S+) req/s\s+Sarathi-Serve\s+(\S+) req/s'
    NUMBERS['papers.%s.vllm' % slo] = ('papers.sarathi', rx, 1, asis, '')
    NUMBERS['papers.%s.sarathi' % slo] = ('papers.sarathi', rx, 2, asis, '')
    NUMBERS['papers.%s.ratio' % slo] = ('papers.sarathi', r'^Sarathi-Serve / vLLM capacity, %s SLO\s+(\S+x)' % slo, 1, asis, '')
for k, rx in (('colo', r'^colocated \(vLLM, 1 GPU\)\s+(\S+)'), ('1p1d', r'^disaggregated 1P1D \(2 GPUs\)\s+(\S+)'),
              ('2p1d', r'^disaggregated 2P1D \(3 GPUs\)\s+(\S+)'), ('1p2d', r'^disaggregated 1P2D \(3 GPUs\)\s+(\S+)'),
              ('ratio', r'^disaggregated / colocated goodput per GPU\s+(\S+x)')):
    NUMBERS['papers.distserve.' + k] = ('papers.distserve', rx, 1, asis, '')
for k in ('paged', 'oracle', 'max'):
    NUMBERS['papers.paged.' + k] = ('papers.paged', r'^' + k + r'\s+throughput\s+(\S+) req/s', 1, asis, '')
for k in ('Oracle', 'Max'):
    NUMBERS['papers.paged.r' + k.lower()] = ('papers.paged', r'^paged / Orca \(%s\) throughput\s+(\S+x)' % k, 1, asis, '')
BATCHED = r'^batched requests: paged / oracle (\S+x), paged / max (\S+x)'
NUMBERS['papers.paged.boracle'] = ('papers.paged', BATCHED, 1, asis, '')
NUMBERS['papers.paged.bmax'] = ('papers.paged', BATCHED, 2, asis, '')

# id -> (command id, start regex, end regex, literal tail lines[, literal head lines[, wrap width]])
BLOCKS = {
    'tp8.summary': ('tp8.explain', r'^summary \(', r'^\s+[0-9.]+%\s', ['     ...']),
    'd8.run': ('d8.run', r'^latency', r'^TPOT', []),
    # docs/explain.md's `--compare` sample: the vr70 commands as a user types them, then the table
    # docs/targets-lpu.md: the errors of a model larger than the machine
    'lpu.rack70.err': ('lpu.rack70.err', r'^aicc: error:', r'', [], [], 100),
    'lpu.gpt2.err': ('lpu.gpt2.err', r'^aicc: error:', r'', [], [], 100),
    'passes.sched': ('passes.sched', r'^llama3.1-8b.aig:', r'^deepseek-v3.aig:', []),
    'vr70.compare': ('vr70', r'^\s+as compiled\s+hybrid\s+gpu-only\s+lpu-only', r'^\s+fastest: ', [],
                     ['aicc compile examples/llama3.1-70b.aig --phase decode --batch 32 --context 4096 \\',
                      '     --passes=disaggregate --target vera-rubin --precision bf16+graph --emit plan -o l70.aip',
                      'aicc explain l70.aip --compare']),
}
BLOCKS.update(LATE_BLOCKS)

MARK = re.compile(r'<!--n:([A-Za-z0-9_.-]+)-->(.*?)<!--/n-->')
# A published figure (a datasheet number, a measurement aicc is validated against) is not aicc output;
# it is marked with where it is recorded, and checked against that record:
#   <!--s:m/MACHINE/PATH-->3.35 TB/s<!--/s-->   `aicc machines MACHINE --fields` prints PATH as this
#                                              figure (converted to SI units, equal to the quoted digits)
#   <!--s:c/SOURCE[/K=V,...]-->206<!--/s-->    a published value of tools/validate/cases.json: the rows
#                                              of source SOURCE whose fields (the group's and the row's)
#                                              match K=V; without K=V, SOURCE's `what` text quotes it
#   <!--s:x/MACHINE-->206 TFLOP/s<!--/s-->     targets/machines/MACHINE.xml quotes the number (a note)
#   <!--s:f/PATH-->2 s<!--/s-->                the repository's file PATH holds the number (a constant in C)
#   <!--s:d/KEY-->1,800 tokens/s<!--/s-->      tools/docs-sources.json's KEY (url, what) quotes it: a
#                                              published figure that neither file records
SMARK = re.compile(r'<!--s:([a-z])/([^>]*?)-->(.*?)<!--/s-->')
# A figure of arithmetic in prose, a unit's definition or an input a reader types: not a quoted
# output.  The next number-plus-unit figure on the line is left uncounted; REASON says why.  On a
# line of its own before a code block (fenced or indented), the whole block is left uncounted (a
# sample of wall-clock times that differ from run to run).
XMARK = re.compile(r'<!--x:([^>]*)-->')
# What the gap scan counts as a quoted figure: a number followed by a unit (outside inline code, markers
# and checked blocks)
UNITS = ('ms us µs ns s min h days GB GiB MB MiB KB KiB kB TB TiB PB TB/s GB/s MB/s PB/s Gb/s Tb/s GiB/s '
         'TFLOP/s PFLOP/s GFLOP/s EFLOP/s TOP/s POP/s FLOP/s TFLOPS PFLOPS TF PF GF W kW MW GHz MHz % x '
         'tokens/s tok/s tokens/s/GPU tokens/s/chip pt nodes chips GPUs LPUs TPUs instructions').split()
FIGURE = re.compile(r'(?<![\w.\-/=+#^])([-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?)((?: ?(?:%s))|x)(?![\w/])' %
                    '|'.join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True) if u != 'x'))
OUT = re.compile(r'^(?P<ind> *)<!--out:(?P<id>[A-Za-z0-9_.-]+)-->\n(?P=ind)```[^\n]*\n(?P<body>.*?)^(?P=ind)```$', re.M | re.S)


SI = {'': 1, '%': 0.01, 'x': 1, 'B': 1, 'KB': 1e3, 'kB': 1e3, 'MB': 1e6, 'GB': 1e9, 'TB': 1e12, 'PB': 1e15,
      'KiB': 1024, 'MiB': 1024 ** 2, 'GiB': 1024 ** 3, 'TiB': 1024 ** 4,
      'B/s': 1, 'MB/s': 1e6, 'GB/s': 1e9, 'TB/s': 1e12, 'PB/s': 1e15, 'GiB/s': 1024 ** 3, 'Gb/s': 1e9 / 8,
      'Tb/s': 1e12 / 8, 's': 1, 'ms': 1e-3, 'us': 1e-6, 'µs': 1e-6, 'ns': 1e-9, 'Hz': 1, 'MHz': 1e6, 'GHz': 1e9,
      'FLOP/s': 1, 'GFLOP/s': 1e9, 'TFLOP/s': 1e12, 'PFLOP/s': 1e15, 'TOP/s': 1e12, 'POP/s': 1e15,
      'TF': 1e12, 'PF': 1e15, 'TFLOPS': 1e12, 'PFLOPS': 1e15, 'W': 1, 'kW': 1e3,
      'GPUs': 1, 'LPUs': 1, 'TPUs': 1, 'chips': 1, 'devices': 1}
NUM = re.compile(r'(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?')


def quoted_number(text):
    """(value, decimals, unit) of a quoted figure '3.35 TB/s', '1,800 tokens/s', '90%'."""
    m = re.match(r'\s*~?([-+]?\d[\d,]*)(?:\.(\d+))?(?:e([-+]?\d+))?\s*(\S*)', text)
    if not m:
        return None
    v = float(m.group(1).replace(',', '') + ('.' + m.group(2) if m.group(2) else '') +
              ('e' + m.group(3) if m.group(3) else ''))
    return v, len(m.group(2) or ''), m.group(4).rstrip('.,;:)')


def numbers_in(text):
    return [float(x.replace(',', '')) for x in NUM.findall(text)]


def same(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def check_sourced(root, build, sourced):
    """Errors of the <!--s:...--> figures: each must be what its record holds."""
    errors, fields, xml, cases, dsrc = [], {}, {}, None, None
    for f, kind, ref, text in sourced:
        where = '%s: s:%s/%s %r' % (os.path.relpath(f, root), kind, ref, text)
        q = quoted_number(text)
        if q is None:
            errors.append(where + ': no number')
            continue
        v, dec, unit = q
        if kind == 'm':
            mach, _, path = ref.partition('/')
            if mach not in fields:
                r = subprocess.run([aicc_path(root, build), 'machines', mach, '--fields'], capture_output=True, text=True)
                fields[mach] = dict(ln.split(None, 1) for ln in r.stdout.splitlines() if ' ' in ln) if r.returncode == 0 else None
            if fields[mach] is None or path not in fields[mach]:
                errors.append(where + ': `aicc machines %s --fields` has no %s' % (mach, path))
                continue
            scale = SI.get(unit)
            if scale is None:
                errors.append(where + ': unit %r unknown to tools/docs-numbers.py SI' % unit)
                continue
            got = float(fields[mach][path])
            if abs(v * scale - got) > (0.5 * 10 ** -dec + 1e-9 * v) * scale:
                errors.append(where + ': the machine says %s = %.6g (SI)' % (path, got))
        elif kind in ('x', 'f'):
            path = os.path.join('targets', 'machines', ref + '.xml') if kind == 'x' else ref
            if path not in xml:
                try:
                    with open(os.path.join(root, path), encoding='utf-8') as fh:
                        xml[path] = numbers_in(fh.read())
                except OSError:
                    xml[path] = None
            if xml[path] is None or not any(same(v, n) or same(v * SI.get(unit, 1), n) for n in xml[path]):
                errors.append(where + ': %s does not quote %s' % (path, text))
        elif kind == 'c':
            if cases is None:
                with open(os.path.join(root, 'tools', 'validate', 'cases.json'), encoding='utf-8') as fh:
                    cases = json.load(fh)
            src, _, sel = ref.partition('/')
            want = dict(kv.split('=', 1) for kv in sel.split(',') if '=' in kv)
            rows = [dict(g, **r) for g in cases['groups'] if g.get('source') == src for r in g['rows']]
            rows = [r for r in rows if all(str(r.get(k)) == x for k, x in want.items())]
            vals = [float(r['value']) for r in rows if isinstance(r.get('value'), (int, float))]
            if not want and src in cases['sources']:
                vals += numbers_in(cases['sources'][src].get('what', ''))
            if src not in cases['sources']:
                errors.append(where + ': tools/validate/cases.json has no source %s' % src)
            elif not any(same(v, n) for n in vals):
                errors.append(where + ': no row of %s in tools/validate/cases.json holds %s' % (ref, text))
        elif kind == 'd':
            if dsrc is None:
                with open(os.path.join(root, 'tools', 'docs-sources.json'), encoding='utf-8') as fh:
                    dsrc = json.load(fh)
            if ref not in dsrc:
                errors.append(where + ': tools/docs-sources.json has no %s' % ref)
            elif not any(same(v, n) for n in numbers_in(dsrc[ref].get('what', ''))):
                errors.append(where + ': tools/docs-sources.json %s does not quote %s' % (ref, text))
        else:
            errors.append(where + ': unknown kind of source (m, c, x, f, d)')
    return errors


def uncovered(text):
    """(line number, figure, line) of each number-plus-unit figure no marker covers."""
    return [u[:3] for u in uncovered_at(text)]


def uncovered_at(text):
    """(line number, figure, line, column) of each number-plus-unit figure no marker covers."""
    blank = lambda m: re.sub(r'[^\n]', ' ', m.group(0))
    text = OUT.sub(blank, text)
    text = MARK.sub(blank, SMARK.sub(blank, text))
    # inline code (what a reader types, a message's text), also across a line break within a paragraph
    text = re.sub(r'(?<!`)`(?!`)(?:[^`\n]|\n(?!\s*\n))+?`(?!`)', blank, text)
    out = []
    lines = text.split('\n')
    skip = set()   # a line that is only <!--x:REASON--> before a code block leaves the whole block out
    for i, ln in enumerate(lines):
        if XMARK.fullmatch(ln.strip()) and i + 1 < len(lines):
            j = i + 1
            if lines[j].startswith('```'):
                while j + 1 < len(lines) and not lines[j + 1].startswith('```'):
                    j += 1
                    skip.add(j)
            else:
                while j < len(lines) and (lines[j].startswith('    ') or not lines[j].strip()):
                    skip.add(j)
                    j += 1
    for i, ln in enumerate(lines, 1):
        if i - 1 in skip:
            continue
        ln = re.sub(r'`[^`]*`', blank, ln)
        pos = []
        for m in XMARK.finditer(ln):
            pos.append(m.end())
        ln2 = XMARK.sub(blank, ln)
        for m in FIGURE.finditer(ln2):
            if pos and m.start() >= pos[0]:
                pos.pop(0)
                continue
            out.append((i, m.group(0), ln.strip(), m.start()))
    return out


def doc_files(root):
    out = [os.path.join(root, 'README.md')]
    d = os.path.join(root, 'docs')
    out += sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith('.md'))
    return out


def aicc_path(root, build):
    aicc = build if os.path.isfile(build) else os.path.join(build, 'aicc')
    return os.path.abspath(aicc if os.path.isabs(aicc) or os.path.exists(aicc) else os.path.join(root, aicc))


def run(root, build, cmd, tmp):
    aicc = aicc_path(root, build)
    out = ''
    t0 = time.time()
    for line in COMMANDS[cmd]:
        r = subprocess.run(line.format(aicc=aicc, tmp=tmp), shell=True, cwd=root, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit('docs-numbers: %s failed (%d):\n%s%s' % (line, r.returncode, r.stdout, r.stderr))
        out = r.stdout
    TIMES[cmd] = time.time() - t0
    return out


def gap(root, texts):
    """Figures no marker covers, beyond tools/docs-numbers.todo's (FILE<TAB>FIGURE lines): (errors, todo left)."""
    todo = {}
    path = os.path.join(root, 'tools', 'docs-numbers.todo')
    if os.path.exists(path):
        with open(path, encoding='utf-8') as fh:
            for ln in fh:
                if ln.strip() and not ln.startswith('#'):
                    f, fig = ln.rstrip('\n').split('\t')
                    todo[(f, fig)] = todo.get((f, fig), 0) + 1
    errors, left = [], 0
    for f, text in texts.items():
        rel = os.path.relpath(f, root)
        for n, fig, ln in uncovered(text):
            if todo.get((rel, fig), 0) > 0:
                todo[(rel, fig)] -= 1
                left += 1
                continue
            errors.append('%s:%d: %s is quoted without a marker (<!--n:ID--> for aicc output, <!--s:...--> for '
                          'a published figure, <!--x:REASON--> for arithmetic or an input): %s' % (rel, n, fig, ln[:160]))
    return errors, left


def main():
    argv = sys.argv[1:]
    files = argv[argv.index('--files') + 1:] if '--files' in argv else None
    argv = argv[:argv.index('--files')] if files is not None else argv
    given = {}   # --output ID=FILE: command ID's output, already made (a test that ran it); only its figures are checked
    while '--output' in argv:
        i = argv.index('--output')
        cid, _, path = argv[i + 1].partition('=')
        with open(path, encoding='utf-8') as fh:
            given[cid] = fh.read()
        argv = argv[:i] + argv[i + 2:]
    args = [a for a in argv if a not in ('--write', '--gap')]
    write = '--write' in argv
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    texts = {}
    for f in files if files is not None else doc_files(root):
        with open(f, encoding='utf-8') as fh:
            texts[f] = fh.read()
    if '--gap' in argv:
        counts = {}
        for f, text in texts.items():
            for n, fig, ln in uncovered(text):
                rel = os.path.relpath(f, root)
                counts[rel] = counts.get(rel, 0) + 1
                print('%s:%d: %s\t%s' % (rel, n, fig, ln[:150]))
        for rel, c in sorted(counts.items(), key=lambda kv: -kv[1]):
            print('docs-numbers: %s: %d uncovered' % (rel, c))
        print('docs-numbers: %d uncovered figure(s)' % sum(counts.values()))
        return
    if len(args) != 1:
        raise SystemExit(__doc__)
    quoted = {}   # id -> [(file, text)]
    sourced = []  # (file, kind, ref, text)
    for f, text in texts.items():
        for m in MARK.finditer(text):
            quoted.setdefault(m.group(1), []).append((f, m.group(2)))
        sourced += [(f, m.group(1), m.group(2), m.group(3)) for m in SMARK.finditer(text)]
    blocks = {}   # id -> [(file, text)]
    for f, text in texts.items():
        for m in OUT.finditer(text):
            blocks.setdefault(m.group('id'), []).append((f, m.group('body')))
    errors = []
    for u in sorted(set(blocks) - set(BLOCKS)):
        errors.append('%s: marker out:%s has no entry in tools/docs-numbers.py' % (blocks[u][0][0], u))
    for u in sorted(set(NUMBERS) - set(quoted)) if files is None else ():
        if NUMBERS[u][0] in ('d8.run', 'p8.run', 'tp8.run', 'pp4.run') or NUMBERS[u][0].startswith('pic.'):
            errors.append('n:%s is quoted nowhere' % u)
    for u in sorted(set(BLOCKS) - set(blocks)) if files is None else ():
        errors.append('out:%s is quoted nowhere' % u)
    unknown = sorted(set(quoted) - set(NUMBERS))
    for u in unknown:
        errors.append('%s: marker n:%s has no entry in tools/docs-numbers.py' % (quoted[u][0][0], u))
    elsewhere = []
    if given:   # only the figures of the given outputs
        quoted = {nid: q for nid, q in quoted.items() if nid in NUMBERS and NUMBERS[nid][0] in given}
        blocks = {bid: b for bid, b in blocks.items() if bid in BLOCKS and BLOCKS[bid][0] in given}
        sourced, todo = [], 0
    else:
        if not write:
            elsewhere = sorted(nid for nid in quoted if nid in NUMBERS and NUMBERS[nid][0] in ELSEWHERE)
            quoted = {nid: q for nid, q in quoted.items() if nid not in elsewhere}
        errors += check_sourced(root, args[0], sourced)
        gaps, todo = gap(root, texts)
        errors += gaps
    outputs = {}
    value = {}
    with tempfile.TemporaryDirectory() as tmp:
        # every command the quotes need, in parallel, each in a directory of its own
        need = sorted({NUMBERS[n][0] for n in set(quoted) & set(NUMBERS)} | {BLOCKS[b][0] for b in set(blocks) & set(BLOCKS)},
                      key=lambda c: -len(COMMANDS[c]))
        outputs.update({c: given[c] for c in need if c in given})
        need = [c for c in need if c not in given]
        missing = {c for c in need if c in REQUIRES and not os.path.exists(os.path.join(root, REQUIRES[c]))}
        need = [c for c in need if c not in missing]
        unchecked = sorted(nid for nid in quoted if nid in NUMBERS and NUMBERS[nid][0] in missing)
        quoted = {nid: q for nid, q in quoted.items() if nid not in unchecked}
        for c in need:
            os.mkdir(os.path.join(tmp, c))
        with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
            for c, out in zip(need, pool.map(lambda c: run(root, args[0], c, os.path.join(tmp, c)), need)):
                outputs[c] = out
        for nid in sorted(set(quoted) & set(NUMBERS)):
            cmd, rx, group, fmt, suffix = NUMBERS[nid]
            m = re.search(rx, outputs[cmd], re.M)
            if not m:
                errors.append('%s: %r not in the output of %s' % (nid, rx, ' && '.join(COMMANDS[cmd])))
                continue
            value[nid] = fmt(m.group(group)) + suffix
        for bid in sorted(set(blocks) & set(BLOCKS)):
            cmd, start, end, tail = BLOCKS[bid][:4]
            head = list(BLOCKS[bid][4]) if len(BLOCKS[bid]) > 4 else []
            lines, on = [], False
            for ln in outputs[cmd].splitlines():
                on = on or re.search(start, ln) is not None
                if on:
                    lines.append(ln.rstrip())
                    if re.search(end, ln):
                        break
            if not lines:
                errors.append('out:%s: %r not in the output of %s' % (bid, start, ' && '.join(COMMANDS[cmd])))
                continue
            if len(BLOCKS[bid]) > 5:   # a message of one line, quoted wrapped at this width
                lines = textwrap.wrap(' '.join(lines), BLOCKS[bid][5], break_long_words=False, break_on_hyphens=False)
            value['out:' + bid] = '\n'.join(head + lines + tail) + '\n'
    changed = []
    for f, text in texts.items():
        def sub(m):
            nid = m.group(1)
            if nid in value and m.group(2) != value[nid]:
                changed.append('%s: %s is quoted as %s, the command prints %s' %
                               (os.path.relpath(f, root), nid, m.group(2), value[nid]))
                return '<!--n:%s-->%s<!--/n-->' % (nid, value[nid])
            return m.group(0)
        def subout(m):
            bid = 'out:' + m.group('id')
            want = ''.join(m.group('ind') + ln + '\n' for ln in value.get(bid, '').splitlines())
            if bid in value and m.group('body') != want:
                changed.append('%s: the output quoted as %s differs from what the command prints now' %
                               (os.path.relpath(f, root), bid))
                return m.group(0)[:m.start('body') - m.start(0)] + want + m.group('ind') + '```'
            return m.group(0)
        new = OUT.sub(subout, MARK.sub(sub, text))
        if write and new != text:
            with open(f, 'w', encoding='utf-8') as fh:
                fh.write(new)
    for e in errors:
        print('docs-numbers: error: ' + e)
    for c in changed:
        print(('docs-numbers: rewrote ' if write else 'docs-numbers: stale: ') + c)
    n = sum(len(v) for v in quoted.values()) + sum(len(v) for v in blocks.values())
    print('docs-numbers: %d quoted figure(s), %d stale%s' % (n, len(changed), ', rewritten' if write and changed else ''))
    print('docs-numbers: %d published figure(s) checked against their records, %d left on tools/docs-numbers.todo'
          % (len(sourced), todo))
    slow = sorted(TIMES.items(), key=lambda kv: -kv[1])[:3]
    if slow:
        print('docs-numbers: %d commands; slowest %s' % (len(TIMES), ', '.join('%s %.1f s' % kv for kv in slow)))
    if elsewhere:
        print('docs-numbers: %d figure(s) left to %s' % (len(elsewhere), ', '.join(sorted({ELSEWHERE[NUMBERS[n][0]] for n in elsewhere}))))
    if unchecked:
        print('docs-numbers: %d figure(s) not checked: their inputs are missing (%s; tools/fetch-models.sh)'
              % (len(unchecked), ', '.join(sorted({REQUIRES[NUMBERS[n][0]] for n in unchecked}))))
    if errors or (changed and not write):
        if changed and not write:
            print('docs-numbers: run `make docs-numbers` to regenerate them')
        sys.exit(1)


if __name__ == '__main__':
    main()
