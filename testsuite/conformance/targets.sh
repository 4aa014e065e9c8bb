#!/bin/sh
# testsuite/conformance/targets.sh AICC OUTDIR TARGET... : ONNX's backend tests on other targets.
# For each TARGET, runs `aicc onnx-test --target TARGET` (the target's default precision; floats
# within the tolerance derived from the formats its plan introduced, explicit conversions bit for
# bit: tools/cmd_onnx_test.c) over Debian libonnx-testdata's node, pytorch-converted and
# pytorch-operator suites and the opset18plus/ tests, and holds the target to the reference:
# every test that passes on the reference target (not in known-failures.txt) must pass, or be
# listed as TARGET/SUITE/NAME<TAB>reason in targets-known-failures.txt; a listed test that now
# passes is reported too (so the list stays true).  With AICC_CONFORMANCE_SUBSET=1 (the
# ASan+UBSan build, where a whole run takes about a minute per target) only the pytorch suites,
# the opset18plus tests and the node tests of subset.txt's operator families run.  Prints one
# "TARGET SUITE: N passed, N failed" line per run and exits 1 on any mismatch.
set -u
AICC=$1
OUT=$2
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
DATA=/usr/share/libonnx-testdata/data
REF=$HERE/known-failures.txt
LIST=$HERE/targets-known-failures.txt
status=0
[ -d "$DATA/node" ] || { echo "conformance: $DATA is missing: install libonnx-testdata" >&2; exit 1; }
for t in "$@"; do
	for set in node pytorch-converted pytorch-operator opset18plus; do
		if [ "$set" = opset18plus ]; then dir=$HERE/opset18plus; else dir=$DATA/$set; fi
		tests=$(ls -d "$dir"/test_*)
		if [ "${AICC_CONFORMANCE_SUBSET:-0}" = 1 ] && [ "$set" = node ]; then
			pat=$(grep -v '^#' "$HERE/subset.txt" | tr '\n' '|' | sed 's/|$//')
			tests=$(ls -d "$dir"/test_* | grep -E "/test_($pat)")
		fi
		f=$OUT/$t-$set.txt
		"$AICC" onnx-test --target "$t" $tests >"$f" 2>&1
		echo "$t $set: $(tail -n 1 "$f")"
		grep '^FAIL ' "$f" | while read -r _ name rest; do
			name=${name%:}
			grep -q "^$set/$name	" "$REF" || grep -q "^$t/$set/$name	" "$LIST" ||
				echo "unexpected failure on $t: $set/$name: $rest"
		done >"$OUT/$t-$set.unexpected"
		grep '^PASS ' "$f" | while read -r _ name; do
			grep -q "^$t/$set/$name	" "$LIST" && echo "now passes on $t (remove it from targets-known-failures.txt): $set/$name"
		done >>"$OUT/$t-$set.unexpected"
		if [ -s "$OUT/$t-$set.unexpected" ]; then
			cat "$OUT/$t-$set.unexpected"
			status=1
		fi
	done
done
exit $status
