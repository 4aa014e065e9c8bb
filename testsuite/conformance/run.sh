#!/bin/sh
# testsuite/conformance/run.sh AICC [OUTDIR]: aicc's ONNX conformance suite.  Runs every test of
# Debian's libonnx-testdata suites node (932), pytorch-converted (82), pytorch-operator (35) and
# simple (23), and the opset18plus/ tests, each through `aicc onnx-test` (reference target).
# Every failure must be listed as SUITE/NAME<TAB>reason in known-failures.txt: the suite fails
# on a failure that is not listed and on a listed test that now passes (so the list stays
# true).  Prints each set's "N passed, N failed" and exits 1 on any mismatch with the list.
set -u
AICC=$1
OUT=${2:-${TMPDIR:-/tmp}}
HERE=$(cd "$(dirname "$0")" && pwd)
DATA=/usr/share/libonnx-testdata/data
LIST=$HERE/known-failures.txt
status=0
if [ ! -d "$DATA/node" ]; then
	echo "conformance: $DATA is missing: install the Debian package libonnx-testdata" >&2
	exit 1
fi
for set in node pytorch-converted pytorch-operator simple opset18plus; do
	if [ "$set" = opset18plus ]; then dir=$HERE/opset18plus; else dir=$DATA/$set; fi
	f=$OUT/conformance-$set.txt
	"$AICC" onnx-test "$dir"/test_* >"$f" 2>&1
	echo "$set: $(tail -n 1 "$f")"
	grep '^FAIL ' "$f" | while read -r _ name rest; do
		name=${name%:}
		grep -q "^$set/$name	" "$LIST" || echo "unexpected failure: $set/$name: $rest"
	done >"$OUT/conformance-$set.unexpected"
	grep '^PASS ' "$f" | while read -r _ name; do
		grep -q "^$set/$name	" "$LIST" && echo "now passes (remove it from known-failures.txt): $set/$name"
	done >>"$OUT/conformance-$set.unexpected"
	if [ -s "$OUT/conformance-$set.unexpected" ]; then
		cat "$OUT/conformance-$set.unexpected"
		status=1
	fi
done
exit $status
