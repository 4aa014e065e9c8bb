#!/bin/sh
# tools/make-ocr-goldens.sh: regenerate testsuite/ocr/ (rendered inputs and onnxruntime goldens
# for the PP-OCRv4 recogniser, and the page of the detector + recogniser pipeline).  Fetches the
# models (tools/fetch-models.sh), installs
# onnxruntime-node@1.30.0 with --ignore-scripts into a scratch folder outside the repository,
# renders each string of testsuite/ocr/strings.txt (tools/render-text.py) and runs the model
# (tools/make-ocr-goldens.js).  Writes NAME.in.npy, NAME.golden.npy and NAME.txt per string.
# Then renders the lines of page.txt as page.png (tools/ocr-page.py render; their ink boxes to
# page.ink.txt), runs the detector on it (page.det.golden.npy: onnxruntime's probability map),
# and runs onnxruntime's map through the rest of the pipeline (DB boxes to page.boxes.txt, crops,
# the recogniser, CTC decoding), which must read page.txt's lines back.
# Only maintainers run this; `make check` uses the committed files and needs no onnxruntime.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SCRATCH=${ORT_SCRATCH:-${TMPDIR:-/tmp}/aicc-ort}
MODEL=$(sh "$ROOT/tools/fetch-models.sh" "$ROOT/.cache/models")
KEYS=$(dirname "$MODEL")/ppocr_keys_v1.txt
if [ ! -d "$SCRATCH/node_modules/onnxruntime-node" ]; then
	mkdir -p "$SCRATCH"
	(cd "$SCRATCH" && npm init -y >/dev/null && npm install --silent --ignore-scripts onnxruntime-node@1.30.0)
fi
OUT=$ROOT/testsuite/ocr
while IFS='	' read -r name text; do
	case $name in ''|'#'*) continue ;; esac
	"$ROOT/tools/render-text.py" "$text" "$OUT/$name.in.npy" >/dev/null
	NODE_PATH=$SCRATCH/node_modules node "$ROOT/tools/make-ocr-goldens.js" "$MODEL" \
		"$OUT/$name.in.npy" "$OUT/$name.golden.npy"
	got=$(python3 "$ROOT/tools/ctc-decode.py" "$OUT/$name.golden.npy" "$KEYS")
	if [ "$got" != "$text" ]; then
		echo "make-ocr-goldens: onnxruntime reads '$got' for '$text'; pick another string" >&2
		exit 1
	fi
	printf '%s\n' "$text" >"$OUT/$name.txt"
done <"$OUT/strings.txt"
# the page: det golden, and onnxruntime's own boxes and strings
PAGE=$ROOT/tools/ocr-page.py
ASSETS=$(dirname "$MODEL")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/aicc-page.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
grep -v '^#' "$OUT/page.txt" >"$tmp/lines.txt"
python3 "$PAGE" render "$tmp/lines.txt" "$OUT/page.png" >"$OUT/page.ink.txt"
python3 "$PAGE" det-input "$OUT/page.png" "$tmp/page.pb" "$tmp/page.npy"
NODE_PATH=$SCRATCH/node_modules node "$ROOT/tools/make-ocr-goldens.js" "$ASSETS/ch_PP-OCRv4_det_infer.onnx" \
	"$tmp/page.npy" "$OUT/page.det.golden.npy"
python3 "$PAGE" boxes "$OUT/page.det.golden.npy" >"$OUT/page.boxes.txt"
python3 "$PAGE" match "$OUT/page.ink.txt" "$OUT/page.boxes.txt"
python3 "$PAGE" crops "$OUT/page.png" "$OUT/page.boxes.txt" "$tmp/crops" >"$tmp/crops.txt"
while read -r name width; do
	NODE_PATH=$SCRATCH/node_modules node "$ROOT/tools/make-ocr-goldens.js" "$MODEL" "$tmp/crops/$name.npy" \
		"$tmp/$name.out.npy" >/dev/null
	python3 "$ROOT/tools/ctc-decode.py" "$tmp/$name.out.npy" "$KEYS"
done <"$tmp/crops.txt" >"$tmp/read.txt"
if ! cmp -s "$tmp/read.txt" "$tmp/lines.txt"; then
	echo "make-ocr-goldens: onnxruntime reads the page as '$(paste -sd'|' "$tmp/read.txt")' for" \
		"'$(paste -sd'|' "$tmp/lines.txt")'; pick other lines (PP-OCRv4 drops the space of tight" \
		"crops of lines without descenders, such as 'Hello World')" >&2
	exit 1
fi
