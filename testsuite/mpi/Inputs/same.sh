#!/bin/sh
# testsuite/mpi/Inputs/same.sh AICC MPIRUN PLAN N [RUN OPTIONS...]: runs PLAN in one process and
# on N MPI ranks with the same options and says whether every output file is byte-identical
# ("same: K outputs") or which differs; MPI_OPTS adds options of the MPI run alone.  Exit
# status 1 on any difference or failure.
set -u
aicc=$1 mpirun=$2 plan=$3 n=$4
shift 4
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
"$aicc" run "$plan" --output-dir "$d/one" "$@" > "$d/one.txt" || { echo "one-process run failed"; exit 1; }
"$mpirun" -np "$n" "$aicc" run "$plan" --mpi ${MPI_OPTS:-} --output-dir "$d/many" "$@" > "$d/many.txt" || { echo "mpi run failed"; cat "$d/many.txt"; exit 1; }
k=0
for f in "$d"/one/*.npy; do
	g="$d/many/$(basename "$f")"
	cmp -s "$f" "$g" || { echo "differs: $(basename "$f")"; exit 1; }
	k=$((k + 1))
done
[ "$(ls "$d/many" | wc -l)" -eq "$k" ] || { echo "the mpi run wrote other files"; exit 1; }
echo "same: $k outputs on $n ranks"
