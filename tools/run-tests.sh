#!/bin/sh
# tools/run-tests.sh BUILD...: run every test kind against each build directory (unit tests with
# cmocka, golden tests with lit + FileCheck) and print one closing line "N passed, N failed".
# Exit status 1 if anything failed.  The real model of the OCR test is fetched first (when npm
# and the network allow; otherwise lit reports that test UNSUPPORTED).
set -u
LIT=/usr/lib/llvm-14/build/utils/lit/lit.py
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# viz: libgvc's gvContext keeps one buffer to exit (testsuite/lsan.supp says when that is seen);
# print_suppressions=0: a test that expects an empty stderr gets one under LSan too.
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")/.." && pwd)/testsuite/lsan.supp:print_suppressions=0"
export OPENBLAS_NUM_THREADS=1
passed=0
failed=0
log=$(mktemp)
sh tools/fetch-models.sh >/dev/null 2>&1 || true
for b in "$@"; do
	echo "== unit tests ($b)"
	for t in "$b"/unit/test_*; do
		[ -x "$t" ] || continue
		if "$t" >"$log" 2>&1; then st=0; else st=1; fi
		p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
		f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
		p=${p:-0}; f=${f:-0}
		if [ "$st" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi   # crashed or leaked
		passed=$((passed + p)); failed=$((failed + f))
		if [ "$f" -ne 0 ]; then echo "FAIL: $t"; cat "$log"; else echo "ok   $t ($p)"; fi
	done
	echo "== golden tests ($b)"
	python3 "$LIT" -v --param build="$b" -j "$(nproc)" testsuite >"$log" 2>&1
	sed -n '/^\*\*\*\*\*\*\*\*\*\*\*\*\*\*\*\*\*\*\*\*/,$p' "$log" | grep -vE '^(PASS|XFAIL): ' | head -n 400
	count() { sed -n "s/^  $1 *: *\([0-9]*\)$/\1/p" "$log" | tail -n 1; }
	p=$(( $(count Passed || true) + 0 ))
	f=$(( $(count Failed || true) + 0 ))
	u=$(( $(count Unresolved || true) + 0 ))
	t=$(( $(count 'Timed Out' || true) + 0 ))
	x=$(( $(count 'Unexpectedly Passed' || true) + 0 ))
	f=$((f + u + t + x))
	n=$((p + f))
	[ "$n" -gt 0 ] || { echo "lit ran no test"; cat "$log"; f=$((f + 1)); }
	echo "golden ($b): $p passed, $f failed"
	passed=$((passed + p)); failed=$((failed + f))
done
rm -f "$log"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
