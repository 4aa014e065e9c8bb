#!/usr/bin/python3
"""tools/ctc-decode.py OUTPUT.npy KEYS.txt: greedy CTC decoding of the PP-OCRv4 recogniser's
output f32[N, T, 6625] into text, one line per batch item.

Per time step the arg-max class is taken; repeats of the same class are merged, then the blank
class 0 is dropped.  Classes 1..6623 are the lines of the key file (ppocr_keys_v1.txt), 6624 is
a space.  Plain Python (no numpy)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npyio  # noqa: E402


def decode(shape, vals, keys):
    n, t, c = shape
    chars = [''] + keys + [' ']
    lines = []
    for b in range(n):
        prev = -1
        out = []
        for s in range(t):
            row = vals[(b * t + s) * c:(b * t + s + 1) * c]
            k = max(range(c), key=row.__getitem__)
            if k != prev and k != 0:
                out.append(chars[k] if k < len(chars) else '?')
            prev = k
        lines.append(''.join(out))
    return lines


def main():
    if len(sys.argv) != 3:
        sys.exit('usage: ctc-decode.py OUTPUT.npy KEYS.txt')
    shape, vals = npyio.read_npy(sys.argv[1])
    if len(shape) != 3:
        sys.exit('ctc-decode: expected an output of rank 3 [N, T, C], got %s' % (shape,))
    with open(sys.argv[2], encoding='utf-8') as f:
        keys = [line.rstrip('\r\n') for line in f]
    for line in decode(shape, vals, keys):
        print(line)


if __name__ == '__main__':
    main()
