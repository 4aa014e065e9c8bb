#!/usr/bin/env python3
"""tools/docs-numbers.py BUILD|AICC [--write]: the numbers README.md and docs/*.md quote, regenerated.

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
the quote stops); the block is checked and rewritten whole.  Standard library only.
"""
import os
import re
import subprocess
import sys
import tempfile

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
})
for pic in ('d8', 'tp8', 'vr'):
    NUMBERS['pic.%s.size' % pic] = ('pic.' + pic, r'width="([0-9]+)pt" height="([0-9]+)pt"', 0,
                                    lambda x: '%s x %s' % tuple(re.findall(r'[0-9]+', x)), ' pt')
    NUMBERS['pic.%s.nodes' % pic] = ('pic.' + pic, r'^nodes (\d+)', 1, whole, ' nodes')
for k in range(4):
    NUMBERS['pp4.peak%d' % k] = ('pp4.run', r'^memory\s+gpu%d\.hbm: .*?peak (\S+) GB' % k, 1, lambda x: '%.1f' % float(x), '')

# id -> (command id, start regex, end regex, literal tail lines[, literal head lines])
BLOCKS = {
    'tp8.summary': ('tp8.explain', r'^summary \(', r'^\s+[0-9.]+%\s', ['     ...']),
    'd8.run': ('d8.run', r'^latency', r'^TPOT', []),
    # docs/explain.md's `--compare` sample: the vr70 commands as a user types them, then the table
    'vr70.compare': ('vr70', r'^\s+as compiled\s+hybrid\s+gpu-only\s+lpu-only', r'^\s+fastest: ', [],
                     ['aicc compile examples/llama3.1-70b.aig --phase decode --batch 32 --context 4096 \\',
                      '     --passes=disaggregate --target vera-rubin --precision bf16+graph --emit plan -o l70.aip',
                      'aicc explain l70.aip --compare']),
}

MARK = re.compile(r'<!--n:([A-Za-z0-9_.-]+)-->(.*?)<!--/n-->')
OUT = re.compile(r'^<!--out:([A-Za-z0-9_.-]+)-->\n```[^\n]*\n(.*?)^```$', re.M | re.S)


def doc_files(root):
    out = [os.path.join(root, 'README.md')]
    d = os.path.join(root, 'docs')
    out += sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith('.md'))
    return out


def run(root, build, cmd, tmp):
    aicc = build if os.path.isfile(build) else os.path.join(build, 'aicc')
    aicc = os.path.abspath(aicc if os.path.isabs(aicc) or os.path.exists(aicc) else os.path.join(root, aicc))
    out = ''
    for line in COMMANDS[cmd]:
        r = subprocess.run(line.format(aicc=aicc, tmp=tmp), shell=True, cwd=root, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit('docs-numbers: %s failed (%d):\n%s%s' % (line, r.returncode, r.stdout, r.stderr))
        out = r.stdout
    return out


def main():
    args = [a for a in sys.argv[1:] if a != '--write']
    write = '--write' in sys.argv[1:]
    if len(args) != 1:
        raise SystemExit(__doc__)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    quoted = {}   # id -> [(file, text)]
    texts = {}
    for f in doc_files(root):
        with open(f, encoding='utf-8') as fh:
            texts[f] = fh.read()
        for m in MARK.finditer(texts[f]):
            quoted.setdefault(m.group(1), []).append((f, m.group(2)))
    blocks = {}   # id -> [(file, text)]
    for f, text in texts.items():
        for m in OUT.finditer(text):
            blocks.setdefault(m.group(1), []).append((f, m.group(2)))
    errors = []
    for u in sorted(set(blocks) - set(BLOCKS)):
        errors.append('%s: marker out:%s has no entry in tools/docs-numbers.py' % (blocks[u][0][0], u))
    for u in sorted(set(NUMBERS) - set(quoted)):
        if NUMBERS[u][0] in ('d8.run', 'p8.run', 'tp8.run', 'pp4.run') or NUMBERS[u][0].startswith('pic.'):
            errors.append('n:%s is quoted nowhere' % u)
    for u in sorted(set(BLOCKS) - set(blocks)):
        errors.append('out:%s is quoted nowhere' % u)
    unknown = sorted(set(quoted) - set(NUMBERS))
    for u in unknown:
        errors.append('%s: marker n:%s has no entry in tools/docs-numbers.py' % (quoted[u][0][0], u))
    outputs = {}
    value = {}
    with tempfile.TemporaryDirectory() as tmp:
        for nid in sorted(set(quoted) & set(NUMBERS)):
            cmd, rx, group, fmt, suffix = NUMBERS[nid]
            if cmd not in outputs:
                outputs[cmd] = run(root, args[0], cmd, tmp)
            m = re.search(rx, outputs[cmd], re.M)
            if not m:
                errors.append('%s: %r not in the output of %s' % (nid, rx, ' && '.join(COMMANDS[cmd])))
                continue
            value[nid] = fmt(m.group(group)) + suffix
        for bid in sorted(set(blocks) & set(BLOCKS)):
            cmd, start, end, tail = BLOCKS[bid][:4]
            head = list(BLOCKS[bid][4]) if len(BLOCKS[bid]) > 4 else []
            if cmd not in outputs:
                outputs[cmd] = run(root, args[0], cmd, tmp)
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
            bid = 'out:' + m.group(1)
            if bid in value and m.group(2) != value[bid]:
                changed.append('%s: the output quoted as %s differs from what the command prints now' %
                               (os.path.relpath(f, root), bid))
                return m.group(0)[:m.start(2) - m.start(0)] + value[bid] + '```'
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
    if errors or (changed and not write):
        if changed and not write:
            print('docs-numbers: run `make docs-numbers` to regenerate them')
        sys.exit(1)


if __name__ == '__main__':
    main()
