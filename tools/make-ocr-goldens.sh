#!/bin/sh
# tools/make-ocr-goldens.sh: regenerate testsuite/ocr/ (rendered inputs and onnxruntime goldens
# for the PP-OCRv4 recogniser).  Fetches the model (tools/fetch-models.sh), installs
# onnxruntime-node@1.30.0 with --ignore-scripts into a scratch folder outside the repository,
# renders each string of testsuite/ocr/strings.txt (tools/render-text.py) and runs the model
# (tools/make-ocr-goldens.js).  Writes NAME.in.npy, NAME.golden.npy and NAME.txt per string.
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
