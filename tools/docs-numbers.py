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
quotes, are errors too.  Standard library only.
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


def three(label):
    """The regex of one row of `explain --compare` (hybrid, gpu-only, lpu-only columns)."""
    return r'^\s*' + re.escape(label) + r'\s+(\S+)\s+(\S+)\s+(\S+)\s*$'


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
    for col, name in ((1, 'hybrid'), (2, 'gpu'), (3, 'lpu')):
        p = cmd + '.' + name
        NUMBERS[p + '.gpus'] = (cmd, three('GPUs'), col, whole, '')
        NUMBERS[p + '.lpus'] = (cmd, three('LPUs'), col, whole, '')
        NUMBERS[p + '.mb'] = (cmd, three('micro-batches'), col, whole, '')
        NUMBERS[p + '.tpot'] = (cmd, three('TPOT ms'), col, sig3, ' ms')
        NUMBERS[p + '.tps_user'] = (cmd, three('tokens/s per user'), col, whole, '')
        NUMBERS[p + '.tps_chip'] = (cmd, three('tokens/s per chip'), col, whole, '')
        NUMBERS[p + '.gpu_busy'] = (cmd, three('GPU pool busy ms'), col, sig3, ' ms')

RS = r'^moves +(\d+): kept on the device (\S+) GB, NVLink (\S+) GB, network (\S+) GB, from checkpoint (\S+) GB$'
NUMBERS['reshard70.state'] = ('reshard70', r'^state +\d+ tensors, (\S+) GB', 1, sig3, ' GB')
NUMBERS['reshard70.moves'] = ('reshard70', RS, 1, whole, '')
NUMBERS['reshard70.local'] = ('reshard70', RS, 2, sig3, ' GB')
NUMBERS['reshard70.nvlink'] = ('reshard70', RS, 3, sig3, ' GB')
NUMBERS['reshard70.network'] = ('reshard70', RS, 4, sig3, ' GB')
NUMBERS['reshard70.storage'] = ('reshard70', RS, 5, sig3, ' GB')
NUMBERS['reshard70.time'] = ('reshard70', r'^predicted +(\S+) s', 1, sig3, ' s')

MARK = re.compile(r'<!--n:([A-Za-z0-9_.-]+)-->(.*?)<!--/n-->')


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
    errors = []
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
    changed = []
    for f, text in texts.items():
        def sub(m):
            nid = m.group(1)
            if nid in value and m.group(2) != value[nid]:
                changed.append('%s: %s is quoted as %s, the command prints %s' %
                               (os.path.relpath(f, root), nid, m.group(2), value[nid]))
                return '<!--n:%s-->%s<!--/n-->' % (nid, value[nid])
            return m.group(0)
        new = MARK.sub(sub, text)
        if write and new != text:
            with open(f, 'w', encoding='utf-8') as fh:
                fh.write(new)
    for e in errors:
        print('docs-numbers: error: ' + e)
    for c in changed:
        print(('docs-numbers: rewrote ' if write else 'docs-numbers: stale: ') + c)
    n = sum(len(v) for v in quoted.values())
    print('docs-numbers: %d quoted figure(s), %d stale%s' % (n, len(changed), ', rewritten' if write and changed else ''))
    if errors or (changed and not write):
        if changed and not write:
            print('docs-numbers: run `make docs-numbers` to regenerate them')
        sys.exit(1)


if __name__ == '__main__':
    main()
