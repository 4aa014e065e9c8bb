#!/usr/bin/env python3
"""testsuite/viz/picture-size.py PNG SVG MAX_W MAX_H: checks that a picture reads at real size.

PNG and SVG are renderings of the same picture (aicc ... --emit png / --emit svg).  Passes
(exit 0, one line "png W x H px, svg W x H pt at scale 1, text >= F pt") when
  * the PNG's size (its IHDR chunk) is at most MAX_W x MAX_H pixels and at least 100 x 100, and
    its longer side at most 4 times the shorter (a long chain is wrapped into columns);
  * the SVG is drawn at 100 %: its graph transform scales by 1 (Graphviz writes scale(s s) and
    shrinks the drawing when the graph has a size attribute smaller than the layout);
  * every text is at least 8 pt (the smallest label Graphviz draws, edge labels at 8 pt);
  * the PNG is the SVG at 96 dpi (W_px = W_pt * 96 / 72 within 2 px), so the PNG is not scaled
    either.
Otherwise prints what is wrong and exits 1.  Standard library only (struct, re).
"""
import re
import struct
import sys


def png_size(path):
    with open(path, 'rb') as f:
        head = f.read(24)
    if head[:8] != b'\x89PNG\r\n\x1a\n' or head[12:16] != b'IHDR':
        raise SystemExit('%s: not a PNG file' % path)
    return struct.unpack('>II', head[16:24])


def main():
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    png, svg, max_w, max_h = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    w, h = png_size(png)
    text = open(svg, encoding='utf-8').read()
    m = re.search(r'<svg width="([0-9.]+)pt" height="([0-9.]+)pt"', text)
    s = re.search(r'<g id="graph0" class="graph" transform="scale\(([0-9.]+) ([0-9.]+)\)', text)
    fonts = [float(x) for x in re.findall(r'font-size="([0-9.]+)"', text)]
    bad = []
    if not m or not s:
        raise SystemExit('%s: no Graphviz SVG header' % svg)
    sw, sh = float(m.group(1)), float(m.group(2))
    scale = float(s.group(1))
    if w > max_w or h > max_h:
        bad.append('png %d x %d px is larger than %d x %d' % (w, h, max_w, max_h))
    if max(w, h) > 4 * min(w, h):
        bad.append('png %d x %d px is more than 4:1' % (w, h))
    if w < 100 or h < 100:
        bad.append('png %d x %d px is smaller than 100 x 100' % (w, h))
    if abs(scale - 1) > 1e-6:
        bad.append('svg drawn at scale %g, not 1' % scale)
    if not fonts or min(fonts) < 8:
        bad.append('smallest text %s pt, under 8 pt' % (min(fonts) if fonts else 'none'))
    if abs(w - sw * 96 / 72) > 2 or abs(h - sh * 96 / 72) > 2:
        bad.append('png %d x %d px is not the svg %g x %g pt at 96 dpi' % (w, h, sw, sh))
    if bad:
        print('FAIL: ' + '; '.join(bad))
        sys.exit(1)
    print('png %d x %d px, svg %g x %g pt at scale 1, text >= %g pt' % (w, h, sw, sh, min(fonts)))


if __name__ == '__main__':
    main()
