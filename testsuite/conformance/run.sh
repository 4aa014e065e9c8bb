#!/bin/sh
# testsuite/conformance/run.sh AICC [OUTDIR]: run aicc's ONNX conformance suite with the driver
# AICC: the Debian node tests listed in debian-node-suite.txt (from libonnx-testdata) and the
# opset18plus/ tests.  Every failure must be listed, with its reason, in known-failures.txt;
# an unlisted failure fails the suite, a listed test that now passes is reported (update the
# list).  Prints both sets' "N passed, N failed" and exits 1 on an unexpected failure.
set -u
AICC=$1
OUT=${2:-${TMPDIR:-/tmp}}
HERE=$(cd "$(dirname "$0")" && pwd)
NODE=/usr/share/libonnx-testdata/data/node
status=0
if [ ! -d "$NODE" ]; then
	echo "conformance: $NODE is missing: install the Debian package libonnx-testdata" >&2
	exit 1
fi
dirs=$(grep -v '^#' "$HERE/debian-node-suite.txt" | awk -v d="$NODE" 'NF { print d "/test_" $1 }')
"$AICC" onnx-test $dirs >"$OUT/conformance-debian.txt" 2>&1
"$AICC" onnx-test "$HERE"/opset18plus/test_* >"$OUT/conformance-opset18plus.txt" 2>&1
for set in debian opset18plus; do
	f=$OUT/conformance-$set.txt
	echo "$set: $(tail -n 1 "$f")"
	grep '^FAIL ' "$f" | while read -r _ name rest; do
		name=${name%:}
		if ! grep -q "^$name	" "$HERE/known-failures.txt"; then
			echo "unexpected failure: $name $rest"
		fi
	done >"$OUT/conformance-$set.unexpected"
	if [ -s "$OUT/conformance-$set.unexpected" ]; then
		cat "$OUT/conformance-$set.unexpected"
		status=1
	fi
	grep '^PASS ' "$f" | while read -r _ name; do
		if grep -q "^$name	" "$HERE/known-failures.txt"; then
			echo "now passes (remove it from known-failures.txt): $name"
		fi
	done
done
exit $status
