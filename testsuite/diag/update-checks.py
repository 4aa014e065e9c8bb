#!/usr/bin/env python3
"""testsuite/diag/update-checks.py [BUILD] [FILE...]: regenerate the CHECK lines of the .aig
diagnostics tests from what the compiler prints now (LLVM's update_test_checks, in small).

Each diagnostic becomes a CHECK line for `file:line:col: kind: message` and CHECK-NEXT lines for
the source line and the caret, matched with --strict-whitespace so the column is checked.  A
final CHECK-NOT makes sure nothing else is reported.  Review the diff before committing."""
import os, re, subprocess, sys

here = os.path.dirname(os.path.abspath(__file__))
build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, '..', '..', 'build')
files = sys.argv[2:] or sorted(os.path.join(here, f) for f in os.listdir(here) if f.endswith('.aig'))

def pattern(line):
    """A FileCheck pattern matching `line` literally."""
    return re.sub(r'(\{\{|\[\[)', lambda m: '{{[' + m.group(1)[0] + ']}}' + m.group(1)[0], line)

for path in files:
    text = open(path, encoding='latin-1').read()
    body = ''.join(l for l in text.splitlines(True) if not l.startswith('# CHECK'))
    open(path, 'w', encoding='latin-1').write(body)
    res = subprocess.run([os.path.join(build, 'aicc'), 'compile', path], capture_output=True)
    out = res.stderr.decode('latin-1').splitlines()
    checks = []
    for line in out:
        line = line.replace(path, '{{.*}}' + os.path.basename(path))
        if re.match(r'^(\{\{\.\*\}\}\S+|aicc): (\S+ )?(error|note|warning)', line):
            checks.append('# CHECK: ' + line.replace('{{.*}}', '\0').replace('\0', '{{.*}}', 1) if False else '# CHECK: ' + line)
        else:
            checks.append('# CHECK-NEXT: {{^}}' + pattern(line) + '{{$}}')
    checks.append('# CHECK-NOT: {{error|note}}:')
    if not body.endswith('\n'):
        body += '\n'
    open(path, 'w', encoding='latin-1').write(body + '\n'.join(checks) + '\n')
