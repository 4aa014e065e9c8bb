#!/usr/bin/env python3
"""testsuite/viz/label-overlap.py SVG: checks that no edge label of a picture covers a node, a title
or another edge's label.

SVG is a picture aicc rendered (aicc ... --emit svg).  Boxes are read from the SVG Graphviz wrote:
  * a node is its shape: the bounding box of its polygon or path, or its ellipse (tested as an
    ellipse, so a label beside a round input's corner does not count);
  * a title is a line of a cluster's label or of the graph's caption;
  * an edge label is a line of text in an edge's group (label, xlabel, head or tail label).
A text line spans [x - w/2, x + w/2] (Graphviz writes text-anchor="middle") and from the baseline
y up by 0.8 and down by 0.2 of its font size (Helvetica's ascent and descent, rounded up).  The
SVG carries no text widths, so w is measured by Graphviz itself: every distinct (text, font size)
is laid out once through libgvc (ctypes, Graphviz's -Tjson renderer), whose text spans carry the
width the picture was drawn with.  Boxes touching by less than 0.5 pt do not count.

Passes (exit 0, one line "N edge labels clear of N nodes and N titles") when no edge-label line
intersects a node, a title or a line of another edge's label; otherwise prints each collision and
exits 1.
"""
import ctypes
import json
import re
import sys
import xml.etree.ElementTree as ET

NS = '{http://www.w3.org/2000/svg}'
EPS = 0.5


def measure(texts):
    """{(text, size): width in pt} as Graphviz lays the texts out in Helvetica."""
    cg = ctypes.CDLL('libcgraph.so.6')
    gv = ctypes.CDLL('libgvc.so.6')
    cg.agmemread.restype = ctypes.c_void_p
    cg.agmemread.argtypes = [ctypes.c_char_p]
    cg.agclose.argtypes = [ctypes.c_void_p]
    gv.gvContext.restype = ctypes.c_void_p
    gv.gvLayout.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p]
    gv.gvRenderData.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                                ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_uint)]
    gv.gvFreeRenderData.argtypes = [ctypes.c_void_p]
    gv.gvFreeLayout.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    gv.gvFreeContext.argtypes = [ctypes.c_void_p]
    keys = sorted(texts)
    lines = ['digraph m { node [shape=plaintext, fontname=Helvetica, margin=0];']
    for i, (t, size) in enumerate(keys):
        lab = t.replace('\\', '\\\\').replace('"', '\\"')
        lines.append('t%d [label="%s", fontsize=%g];' % (i, lab, size))
    lines.append('}')
    g = cg.agmemread('\n'.join(lines).encode('utf-8'))
    c = gv.gvContext()
    if not g or not c or gv.gvLayout(c, g, b'dot') != 0:
        raise SystemExit('libgvc could not lay out the texts')
    data, n = ctypes.c_void_p(), ctypes.c_uint()
    if gv.gvRenderData(c, g, b'json', ctypes.byref(data), ctypes.byref(n)) != 0:
        raise SystemExit('libgvc could not render json')
    doc = json.loads(ctypes.string_at(data, n.value).decode('utf-8'))
    gv.gvFreeRenderData(data)
    gv.gvFreeLayout(c, g)
    cg.agclose(g)
    gv.gvFreeContext(c)
    width = {}
    for obj in doc.get('objects', []):
        k = int(obj['name'][1:])
        width[keys[k]] = max(op['width'] for op in obj['_ldraw_'] if op['op'] == 'T')
    return width


def text_of(el):
    return ''.join(el.itertext())


def shape_box(g):
    """('rect', x0, y0, x1, y1) or ('ellipse', cx, cy, rx, ry) of a node group, or None."""
    for el in g.iter():
        if el.tag == NS + 'ellipse':
            return ('ellipse', float(el.get('cx')), float(el.get('cy')), float(el.get('rx')), float(el.get('ry')))
        if el.tag == NS + 'polygon' or el.tag == NS + 'path':
            nums = [float(x) for x in re.findall(r'-?[0-9.]+(?:e-?[0-9]+)?', el.get('points') or el.get('d') or '')]
            xs, ys = nums[0::2], nums[1::2]
            if xs:
                return ('rect', min(xs), min(ys), max(xs), max(ys))
    return None


def hits(label, shape):
    x0, y0, x1, y1 = label
    if shape[0] == 'rect':
        _, a0, b0, a1, b1 = shape
        return min(x1, a1) - max(x0, a0) > EPS and min(y1, b1) - max(y0, b0) > EPS
    _, cx, cy, rx, ry = shape
    # the label's point nearest the centre, shrunk by EPS, inside the ellipse?
    px = min(max(cx, x0 + EPS), x1 - EPS)
    py = min(max(cy, y0 + EPS), y1 - EPS)
    return ((px - cx) / rx) ** 2 + ((py - cy) / ry) ** 2 < 1


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    root = ET.parse(sys.argv[1]).getroot()
    graph = next(g for g in root.iter(NS + 'g') if g.get('class') == 'graph')
    texts = []   # (kind, owner, text element)
    nodes = []   # (name, shape)
    for el in graph:
        cls = el.get('class') if el.tag == NS + 'g' else None
        if el.tag == NS + 'text':
            texts.append(('title', 'the caption', el))
        elif cls in ('cluster', 'edge', 'node'):
            name = text_of(el.find(NS + 'title'))
            kind = {'cluster': 'title', 'edge': 'label', 'node': None}[cls]
            if cls == 'node':
                nodes.append((name, shape_box(el)))
            else:
                texts.extend((kind, name, t) for t in el.iter(NS + 'text'))
    width = measure({(text_of(t), float(t.get('font-size'))) for _, _, t in texts})

    def box(t):
        w, fs = width[(text_of(t), float(t.get('font-size')))], float(t.get('font-size'))
        x, y = float(t.get('x')), float(t.get('y'))
        return (x - w / 2, y - 0.8 * fs, x + w / 2, y + 0.2 * fs)

    labels = [(o, text_of(t), box(t)) for k, o, t in texts if k == 'label']
    titles = [(o, text_of(t), ('rect',) + box(t)) for k, o, t in texts if k == 'title']
    bad = []
    for edge, text, b in labels:
        for name, shape in nodes:
            if shape and hits(b, shape):
                bad.append("edge %s label '%s' covers node %s" % (edge, text, name))
        for owner, title, shape in titles:
            if hits(b, shape):
                bad.append("edge %s label '%s' covers the title '%s' of %s" % (edge, text, title, owner))
    for i, (edge, text, b) in enumerate(labels):
        for edge2, text2, b2 in labels[i + 1:]:
            if edge2 != edge and hits(b, ('rect',) + b2):
                bad.append("edge %s label '%s' covers edge %s label '%s'" % (edge, text, edge2, text2))
    if bad:
        print('FAIL: %d collisions' % len(bad))
        for line in bad:
            print('  ' + line)
        sys.exit(1)
    print('%d edge labels clear of %d nodes and %d titles' % (len(labels), len(nodes), len(titles)))


if __name__ == '__main__':
    main()
