#!/usr/bin/python3
"""tools/ocr-page.py: the page steps of the PP-OCRv4 detector + recogniser pipeline (text
detection, then recognition of each detected line), around the two models that aicc runs.
Plain Python and PIL (python3-pil, fonts-dejavu-core); no numpy, OpenCV or pyclipper.

  ocr-page.py render LINES.txt PAGE.png
      Renders the lines of LINES.txt (DejaVu Sans 32 px, black on white, 56 px apart, 24 px
      left margin) on a white page whose sides are multiples of 32 (the detector's stride), and
      prints one line "x0 y0 x1 y1 TEXT" per line: the ink's bounding box, pixels inclusive.
  ocr-page.py det-input PAGE.png OUT.pb [OUT.npy]
      The detector's input f32[1, 3, H, W] named 'x': PaddleOCR's NormalizeImage
      ((px / 255 - mean) / std with mean 0.485 0.456 0.406 and std 0.229 0.224 0.225 per channel)
      and ToCHWImage.  The page's sides are already multiples of 32 and at most 960, so
      DetResizeForTest (limit_side_len 960, limit_type max) leaves it as it is; other sizes are
      refused.
  ocr-page.py boxes MAP.npy
      DB post-processing of the detector's probability map f32[1, 1, H, W] into text boxes,
      printed "x0 y0 x1 y1 SCORE" one a line, top to bottom (see boxes_from_map).
  ocr-page.py crops PAGE.png BOXES.txt OUTDIR
      Cuts each box of BOXES.txt (as `boxes` prints them) out of the page and makes it the
      recogniser's input f32[1, 3, 48, W]: OUTDIR/line_K.pb (tensor 'x') and line_K.npy, K from
      0 in the order of the boxes; prints "line_K W" per box.
  ocr-page.py match INK.txt BOXES.txt
      Checks the detected boxes against the rendered lines (INK.txt as `render` prints it):
      as many boxes as lines, box K overlapping line K's ink box with an intersection over union
      of at least 0.5 (the ICDAR 2015 robust-reading criterion for a true detection; Karatzas et
      al., ICDAR 2015) and no other line's.  Prints one summary line; exits 1 otherwise.

Sources: PaddleOCR release/2.7 (PP-OCRv4), ppocr/postprocess/db_postprocess.py (DBPostProcess),
ppocr/data/imaug/operators.py (DetResizeForTest, NormalizeImage), tools/infer/predict_rec.py
(resize_norm_img) and tools/infer/predict_system.py (sorted_boxes, get_rotate_crop_image),
https://github.com/PaddlePaddle/PaddleOCR; the DB paper: Liao et al., "Real-time Scene Text
Detection with Differentiable Binarization", AAAI 2020, arXiv:1911.08947 (the shrink ratio 0.4
of its labels is what the unclip step undoes)."""
import math
import os
import sys

from PIL import Image, ImageDraw, ImageFont

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npyio  # noqa: E402

FONT = '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf'
SIZE, PITCH, MARGIN, TOP = 32, 56, 24, 16
# DBPostProcess's defaults in PP-OCRv4's tools/infer/utility.py: det_db_thresh 0.3,
# det_db_box_thresh 0.6, det_db_unclip_ratio 1.5, use_dilation False, score_mode 'fast'; min_size 3
THRESH, BOX_THRESH, UNCLIP_RATIO, MIN_SIZE = 0.3, 0.6, 1.5, 3
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
REC_H = 48


def render(lines, out):
    """Renders lines on a page (sides multiples of 32) saved as out; returns the ink boxes."""
    font = ImageFont.truetype(FONT, SIZE)
    width = max(font.getbbox(t)[2] for t in lines) + 2 * MARGIN
    w = -(-width // 32) * 32
    h = -(-(TOP + PITCH * len(lines)) // 32) * 32
    img = Image.new('RGB', (w, h), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    ink = []
    for i, t in enumerate(lines):
        draw.text((MARGIN, TOP + PITCH * i), t, font=font, fill=(0, 0, 0))
        x0, y0, x1, y1 = draw.textbbox((MARGIN, TOP + PITCH * i), t, font=font)
        ink.append((x0, y0, x1 - 1, y1 - 1, t))
    img.save(out)
    return ink


def det_input(page):
    img = Image.open(page).convert('RGB')
    w, h = img.size
    if w % 32 or h % 32 or max(w, h) > 960:
        sys.exit('ocr-page: %s is %dx%d; the page sides must be multiples of 32, at most 960' % (page, w, h))
    px = img.load()
    vals = [(px[x, y][c] / 255.0 - MEAN[c]) / STD[c] for c in range(3) for y in range(h) for x in range(w)]
    return [1, 3, h, w], vals


def components(mask, w, h):
    """The 8-connected components of mask (a flat list, row-major) as lists of pixel indices:
    the regions whose outer borders cv2.findContours traces."""
    seen = bytearray(w * h)
    out = []
    for start in range(w * h):
        if not mask[start] or seen[start]:
            continue
        seen[start] = 1
        stack, comp = [start], []
        while stack:
            p = stack.pop()
            comp.append(p)
            y, x = divmod(p, w)
            for dy in (-1, 0, 1):
                for dx in (-1, 0, 1):
                    yy, xx = y + dy, x + dx
                    if 0 <= yy < h and 0 <= xx < w:
                        q = yy * w + xx
                        if mask[q] and not seen[q]:
                            seen[q] = 1
                            stack.append(q)
        out.append(comp)
    return out


def boxes_from_map(shape, prob):
    """DBPostProcess.boxes_from_bitmap for box_type 'quad', for upright text: the bitmap
    prob > THRESH, one candidate per 8-connected region, its minimum-area rectangle (get_mini_boxes:
    for an upright line the axis-aligned box of the region's pixel centres, so a region of
    columns x0..x1 is x1 - x0 wide), dropped when its short side is under MIN_SIZE or the mean
    probability inside it (box_score_fast) is under BOX_THRESH; then unclipped: pyclipper offsets
    the box outwards by distance = area * UNCLIP_RATIO / perimeter (round joins), whose
    minimum-area rectangle is the box grown by that distance on every side; dropped when the short
    side is under MIN_SIZE + 2; corners rounded and clipped to the page (the map has the page's
    size: no rescaling), to 0 .. W - 1 as TextDetector.filter_tag_det_res does, which then drops
    boxes at most 3 pixels wide or high.  Differences from PaddleOCR, none of which a page of upright lines
    reaches: rotated minimum-area rectangles are not searched, and the contours of holes
    (cv2.RETR_LIST lists them too) give no candidates.  Returns (x0, y0, x1, y1, score) sorted
    top to bottom, then left to right (sorted_boxes)."""
    h, w = shape[-2], shape[-1]
    mask = [v > THRESH for v in prob]
    boxes = []
    for comp in components(mask, w, h):
        xs = [p % w for p in comp]
        ys = [p // w for p in comp]
        x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
        if min(x1 - x0, y1 - y0) < MIN_SIZE:
            continue
        # box_score_fast: the mean of the map over the pixels the box covers (its corners are
        # pixel centres, so the covered pixels are x0..x1, y0..y1)
        score = sum(prob[y * w + x] for y in range(y0, y1 + 1) for x in range(x0, x1 + 1)) / \
            ((x1 - x0 + 1) * (y1 - y0 + 1))
        if score < BOX_THRESH:
            continue
        bw, bh = x1 - x0, y1 - y0
        d = bw * bh * UNCLIP_RATIO / (2 * (bw + bh))
        ex0, ey0, ex1, ey1 = x0 - d, y0 - d, x1 + d, y1 + d
        if min(ex1 - ex0, ey1 - ey0) < MIN_SIZE + 2:
            continue
        clip = lambda v, hi: min(max(int(round(v)), 0), hi)  # noqa: E731 (np.round: half to even)
        b = (clip(ex0, w - 1), clip(ey0, h - 1), clip(ex1, w - 1), clip(ey1, h - 1), score)
        if b[2] - b[0] > 3 and b[3] - b[1] > 3:
            boxes.append(b)
    boxes.sort(key=lambda b: (b[1], b[0]))
    return boxes


def crop(img, box):
    """get_rotate_crop_image for an upright box: the box's pixels (width x1 - x0, height
    y1 - y0, as the perspective warp of its corners gives), then resize_norm_img: resized to
    REC_H high keeping the aspect ratio (width ceil(REC_H * w / h)), bilinear, and normalised
    (px / 255 - 0.5) / 0.5.  PaddleOCR pads a batch of crops to its widest ratio (at least
    320 / 48); aicc recognises each crop alone at its own width, which needs no padding."""
    x0, y0, x1, y1 = box[:4]
    c = img.crop((x0, y0, x1, y1))
    w, h = c.size
    rw = min(max(1, math.ceil(REC_H * w / h)), 4 * 320)
    c = c.resize((rw, REC_H), Image.BILINEAR)
    px = c.load()
    vals = [(px[x, y][ch] / 255.0 - 0.5) / 0.5 for ch in range(3) for y in range(REC_H) for x in range(rw)]
    return [1, 3, REC_H, rw], vals


def iou(a, b):
    """Intersection over union of two boxes (x0, y0, x1, y1), pixels inclusive."""
    iw = min(a[2], b[2]) - max(a[0], b[0]) + 1
    ih = min(a[3], b[3]) - max(a[1], b[1]) + 1
    if iw <= 0 or ih <= 0:
        return 0.0
    area = lambda r: (r[2] - r[0] + 1) * (r[3] - r[1] + 1)  # noqa: E731
    return iw * ih / (area(a) + area(b) - iw * ih)


def match(ink, boxes):
    """None when boxes[k] matches ink[k] (IoU >= 0.5) and overlaps no other line, else why."""
    if len(boxes) != len(ink):
        return '%d boxes for %d lines' % (len(boxes), len(ink))
    for k, b in enumerate(boxes):
        v = iou(b, ink[k])
        if v < 0.5:
            return 'box %d %s has IoU %.2f with line %d %s' % (k, b[:4], v, k, ink[k][:4])
        for j, o in enumerate(ink):
            if j != k and iou(b, o) > 0:
                return 'box %d %s overlaps line %d' % (k, b[:4], j)
    return None


def read_boxes(path):
    with open(path) as f:
        return [tuple(int(v) for v in ln.split()[:4]) for ln in f if ln.strip()]


def main():
    a = sys.argv[1:]
    if len(a) == 3 and a[0] == 'render':
        with open(a[1], encoding='utf-8') as f:
            lines = [ln.rstrip('\n') for ln in f if ln.strip() and not ln.startswith('#')]
        for x0, y0, x1, y1, t in render(lines, a[2]):
            print('%d %d %d %d %s' % (x0, y0, x1, y1, t))
    elif len(a) in (3, 4) and a[0] == 'det-input':
        shape, vals = det_input(a[1])
        npyio.write_pb(a[2], 'x', shape, vals)
        if len(a) == 4:
            npyio.write_npy(a[3], shape, vals)
    elif len(a) == 2 and a[0] == 'boxes':
        shape, prob = npyio.read_npy(a[1])
        if len(shape) != 4 or shape[0] != 1 or shape[1] != 1:
            sys.exit('ocr-page: expected a probability map [1, 1, H, W], got %s' % (shape,))
        for b in boxes_from_map(shape, prob):
            print('%d %d %d %d %.3f' % b)
    elif len(a) == 4 and a[0] == 'crops':
        img = Image.open(a[1]).convert('RGB')
        boxes = read_boxes(a[2])
        os.makedirs(a[3], exist_ok=True)
        for k, b in enumerate(boxes):
            shape, vals = crop(img, b)
            npyio.write_pb(os.path.join(a[3], 'line_%d.pb' % k), 'x', shape, vals)
            npyio.write_npy(os.path.join(a[3], 'line_%d.npy' % k), shape, vals)
            print('line_%d %d' % (k, shape[3]))
    elif len(a) == 3 and a[0] == 'match':
        ink, boxes = read_boxes(a[1]), read_boxes(a[2])
        why = match(ink, boxes)
        if why:
            print('boxes: ' + why)
            sys.exit(1)
        print('boxes: %d for %d lines, each on its line (IoU %s)' % (
            len(boxes), len(ink), ' '.join('%.2f' % iou(b, i) for b, i in zip(boxes, ink))))
    else:
        sys.exit(__doc__.split('\n\n')[1])


if __name__ == '__main__':
    main()
