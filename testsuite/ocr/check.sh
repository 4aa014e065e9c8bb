#!/bin/sh
# testsuite/ocr/check.sh AICC WORKDIR: the real-model test.  Fetches PP-OCRv4 (tools/fetch-models.sh),
# and for every NAME of strings.txt builds an ONNX test folder (the model, NAME.in.npy as input,
# NAME.golden.npy from onnxruntime as expected output, converted to TensorProto .pb), runs it with
# `aicc onnx-test` (rtol 1e-3, atol 1e-5) and decodes aicc's output with tools/ctc-decode.py,
# which must give back the rendered string.  If the model cannot be fetched it prints
# "SKIP: ..." and exits 77.
set -eu
AICC=$1
W=$2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/testsuite/ocr
if ! MODEL=$(sh "$ROOT/tools/fetch-models.sh" "$ROOT/.cache/models" 2>"$W/fetch.log"); then
	echo "SKIP: the PP-OCRv4 model could not be fetched: $(cat "$W/fetch.log")"
	exit 77
fi
KEYS=$(dirname "$MODEL")/ppocr_keys_v1.txt
status=0
grep -v '^#' "$HERE/strings.txt" | while IFS='	' read -r name text; do
	[ -n "$name" ] || continue
	d=$W/ocr_$name
	mkdir -p "$d/test_data_set_0"
	ln -sf "$(cd "$(dirname "$MODEL")" && pwd)/$(basename "$MODEL")" "$d/model.onnx"
	python3 "$ROOT/tools/npy2pb.py" "$HERE/$name.in.npy" x "$d/test_data_set_0/input_0.pb"
	python3 "$ROOT/tools/npy2pb.py" "$HERE/$name.golden.npy" softmax_11.tmp_0 "$d/test_data_set_0/output_0.pb"
	"$AICC" onnx-test --output-dir "$W" "$d" || exit 1
	got=$(python3 "$ROOT/tools/ctc-decode.py" "$W/ocr_$name.0.npy" "$KEYS")
	echo "$name: '$got'"
	[ "$got" = "$text" ] || { echo "FAIL: expected '$text'"; exit 1; }
done || status=1
exit $status
