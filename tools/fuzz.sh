#!/bin/sh
# tools/fuzz.sh [HARNESS...]: build aicc's libFuzzer harnesses (testsuite/fuzz/fuzz_*.c) with clang,
# ASan and UBSan (non-recoverable) into build-fuzz/, then run each (or the ones named) for
# FUZZ_SECONDS (default 60) seconds at low priority on a seed corpus built from the test suite:
#   fuzz_aig      *.aig files of testsuite/ and examples/
#   fuzz_plan     *.aip files, and plans compiled from the small test models
#   fuzz_exec     the same plans (the executor runs the small ones)
#   fuzz_onnx     *.onnx of testsuite/ and every model.onnx of Debian's libonnx-testdata
#   fuzz_machine  targets/machines/*.xml, alone and with --set overrides appended
# Seeds are named after their whole path, so files of the same name do not overwrite each other.
# Findings (crash-*, leak-*, timeout-*, oom-*) land in build-fuzz/findings/<harness>/; each
# harness ends with a line "NAME: N execs, cov C, ft F, K finding(s)" (libFuzzer's final stats).
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SECS=${FUZZ_SECONDS:-60}
B=build-fuzz
make --no-print-directory BUILD=$B CC=clang OPT=-O1 \
	SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" fuzzbins
[ -x build/aicc ] || make --no-print-directory all >/dev/null
export AICC_MACHINES="$ROOT/targets/machines"
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export OPENBLAS_NUM_THREADS=1
seed() {     # seed DIR FILE...: copy each file under a name made from its path
	d=$1; shift
	for f in "$@"; do
		[ -f "$f" ] && [ "$(wc -c <"$f")" -le 65536 ] || continue
		cp "$f" "$d/$(echo "$f" | sed 's|^/||; s|/|_|g')"
	done
}
plans() {    # small plans compiled from the test suite's models
	d=$1
	for m in testsuite/run/mlp.aig testsuite/multi/Inputs/*.aig testsuite/passes/*.aig testsuite/lpu/*.aig; do
		[ -f "$m" ] || continue
		n=$(echo "$m" | sed 's|/|_|g')
		for t in reference hopper lpu; do
			build/aicc compile "$m" --target $t --bind B=1,S=4 --init-unbound normal --emit plan \
				-o "$d/$n.$t.aip" >/dev/null 2>&1 || rm -f "$d/$n.$t.aip"
		done
	done
	for m in /usr/share/libonnx-testdata/data/node/test_*/model.onnx; do    # one plan per ONNX operator test
		[ -f "$m" ] || continue
		n=$(basename "$(dirname "$m")")
		build/aicc compile "$m" --emit plan -o "$d/$n.aip" >/dev/null 2>&1 || rm -f "$d/$n.aip"
	done
	find "$d" -name '*.aip' -size +64k -delete
	rm -rf "$d"/*.weights
}
want=${*:-$(ls testsuite/fuzz/fuzz_*.c | sed 's|.*/||; s|\.c$||')}
for name in $want; do
	h=$B/fuzz/$name
	[ -x "$h" ] || continue
	corpus=$B/corpus/$name
	findings=$B/findings/$name
	mkdir -p "$corpus" "$findings"
	case $name in
	fuzz_aig) seed "$corpus" $(find testsuite examples -name '*.aig') ;;
	fuzz_plan|fuzz_exec) seed "$corpus" $(find testsuite -name '*.aip'); plans "$corpus" ;;
	fuzz_onnx) seed "$corpus" $(find testsuite -name '*.onnx') \
		$(find /usr/share/libonnx-testdata -name model.onnx 2>/dev/null) ;;
	fuzz_machine)
		seed "$corpus" targets/machines/*.xml
		for x in targets/machines/*.xml; do
			n=$(basename "$x" .xml)
			{ cat "$x"; printf '\n--set\nhbm.bandwidth=1e-300\ngpu.peak.bf16=1e300\nclock=1e-9GHz\ncount=1000000000\n'; } \
				>"$corpus/$n.set.xml"
		done ;;
	esac
	echo "== $name: ${SECS}s, corpus $(ls "$corpus" | wc -l) files"
	log=$B/$name.log
	nice -n 19 "$h" -max_total_time="$SECS" -max_len=65536 -timeout=20 -rss_limit_mb=4096 -malloc_limit_mb=2048 \
		-artifact_prefix="$findings/" -print_final_stats=1 "$corpus" >"$log" 2>&1 || true
	grep -E 'ERROR|SUMMARY|runtime error' "$log" | head -n 5 || true
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
	cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
	n=$(ls "$findings" | wc -l)
	echo "$name: ${execs:-0} execs, cov ${cov:-?}, ft ${ft:-?}, $n finding(s) in $findings"
done
