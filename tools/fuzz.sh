#!/bin/sh
# tools/fuzz.sh: build aicc's libFuzzer harnesses (testsuite/fuzz/fuzz_*.c) with clang,
# ASan and UBSan into build-fuzz/, then run each for FUZZ_SECONDS (default 60) seconds on a corpus
# seeded from the test suite (fuzz_aig: *.aig, fuzz_plan: *.aip, fuzz_onnx: *.onnx).
# Findings (crash-*, leak-*, timeout-*) land in build-fuzz/findings/<harness>/.
set -eu
cd "$(dirname "$0")/.."
SECS=${FUZZ_SECONDS:-60}
B=build-fuzz
make --no-print-directory BUILD=$B CC=clang OPT=-O1 \
	SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer" fuzzbins
for h in $B/fuzz/fuzz_*; do
	[ -x "$h" ] || continue
	name=$(basename "$h")
	case $name in
	fuzz_aig) ext=aig ;;
	fuzz_plan) ext=aip ;;
	fuzz_onnx) ext=onnx ;;
	*) ext=none ;;
	esac
	corpus=$B/corpus/$name
	findings=$B/findings/$name
	mkdir -p "$corpus" "$findings"
	find testsuite examples -name "*.$ext" -size -64k -exec cp {} "$corpus"/ \; 2>/dev/null || true
	echo "== $name: ${SECS}s, corpus $(ls "$corpus" | wc -l) files"
	"$h" -max_total_time="$SECS" -max_len=65536 -timeout=10 -rss_limit_mb=4096 \
		-artifact_prefix="$findings/" -print_final_stats=1 "$corpus" 2>&1 |
		grep -E 'stat::number_of_executed_units|stat::peak_rss|ERROR|SUMMARY|Done' || true
	n=$(ls "$findings" | wc -l)
	echo "$name: $n finding(s) in $findings"
done
