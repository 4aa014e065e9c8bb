#!/usr/bin/python3
"""tools/render-text.py TEXT OUT.npy [--pb OUT.pb] [--width W]: render TEXT as the input of the
PP-OCRv4 text recogniser.

DejaVu Sans at 32 px, black on white, on a 48 px high RGB strip (the recogniser's input height)
as wide as the text plus 8 px margins (or --width W).  Pixels x become (x/255 - 0.5)/0.5, the
layout goes HWC -> CHW with a batch of 1, so the tensor is f32[1, 3, 48, W].  Writes .npy and,
with --pb, an onnx.TensorProto named 'x' (for `aicc run --input x=FILE.pb`).  Prints W.
Needs python3-pil and fonts-dejavu-core only."""
import argparse
import os
import sys

from PIL import Image, ImageDraw, ImageFont

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npyio  # noqa: E402

FONT = '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf'
HEIGHT = 48


def render(text, width=None):
    font = ImageFont.truetype(FONT, 32)
    left, top, right, bottom = font.getbbox(text)
    w = width or (right - left) + 16
    img = Image.new('RGB', (w, HEIGHT), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    y = (HEIGHT - (bottom - top)) // 2 - top
    draw.text((8 - left, y), text, font=font, fill=(0, 0, 0))
    return img


def to_chw(img):
    w, h = img.size
    px = img.load()
    vals = []
    for c in range(3):
        for y in range(h):
            for x in range(w):
                vals.append((px[x, y][c] / 255.0 - 0.5) / 0.5)
    return [1, 3, h, w], vals


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('text')
    ap.add_argument('out')
    ap.add_argument('--pb')
    ap.add_argument('--width', type=int)
    ap.add_argument('--png', help='also save the rendered strip as a PNG')
    a = ap.parse_args()
    img = render(a.text, a.width)
    if a.png:
        img.save(a.png)
    shape, vals = to_chw(img)
    npyio.write_npy(a.out, shape, vals)
    if a.pb:
        npyio.write_pb(a.pb, 'x', shape, vals)
    print(shape[3])


if __name__ == '__main__':
    main()
