#!/bin/sh
# testsuite/ocr/check.sh AICC WORKDIR: the real-model test (PP-OCRv4, fetched by
# tools/fetch-models.sh into .cache/models; ocr.test REQUIRES it).  For every NAME of
# strings.txt, with NAME.in.npy as input (converted to an ONNX TensorProto .pb) and NAME.golden.npy
# from onnxruntime as expected output:
#   1. compile -> plan -> run on disk: `aicc compile MODEL --shape x=... --emit plan -o NAME.aip`
#      (weights go to NAME.weights/), `aicc run NAME.aip --input x=NAME.pb --output-dir`, the
#      output compared with tools/npy-compare.py (rtol 1e-3, atol 1e-5) and decoded with
#      tools/ctc-decode.py, which must give back the rendered string;
#   2. the same as an ONNX test folder through `aicc onnx-test` (the in-process pipeline).
set -eu
AICC=$1
W=$2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/testsuite/ocr
MODEL=$(sh "$ROOT/tools/fetch-models.sh" "$ROOT/.cache/models")
KEYS=$(dirname "$MODEL")/ppocr_keys_v1.txt
OUT=softmax_11.tmp_0
grep -v '^#' "$HERE/strings.txt" | while IFS='	' read -r name text; do
	[ -n "$name" ] || continue
	python3 "$ROOT/tools/npy2pb.py" "$HERE/$name.in.npy" x "$W/$name.in.pb"
	shape=$(python3 -c "import sys; sys.path.insert(0, '$ROOT/tools'); import npyio; \
print(','.join(map(str, npyio.read_npy('$HERE/$name.in.npy')[0])))")
	"$AICC" compile "$MODEL" --shape "x=$shape" --emit plan -o "$W/$name.aip"
	"$AICC" run "$W/$name.aip" --input "x=$W/$name.in.pb" --output-dir "$W/$name.out" >"$W/$name.run.txt"
	echo "$name: $(python3 "$ROOT/tools/npy-compare.py" "$W/$name.out/$OUT.npy" "$HERE/$name.golden.npy")"
	got=$(python3 "$ROOT/tools/ctc-decode.py" "$W/$name.out/$OUT.npy" "$KEYS")
	echo "$name: '$got'"
	[ "$got" = "$text" ] || { echo "FAIL: expected '$text'"; exit 1; }
	d=$W/ocr_$name
	mkdir -p "$d/test_data_set_0"
	ln -sf "$MODEL" "$d/model.onnx"
	cp "$W/$name.in.pb" "$d/test_data_set_0/input_0.pb"
	python3 "$ROOT/tools/npy2pb.py" "$HERE/$name.golden.npy" $OUT "$d/test_data_set_0/output_0.pb"
	"$AICC" onnx-test "$d"
done
