#!/bin/sh
# testsuite/mpi/Inputs/kill-after-cpu.sh SECONDS CMD...: runs CMD and kills it (SIGKILL) once it
# has used SECONDS of CPU time, then dies of SIGKILL itself (as `timeout -s KILL` does, so
# mpirun reports the rank killed).  CPU time, not wall time: under load (a busy test machine)
# a rank can spend seconds of wall time starting up, and a wall-clock kill then lands before
# the ranks reached the point the test means to interrupt (failure.test's killed rank: it
# must die inside its MatMuls, after the start barrier, while rank 0 waits for it).
s=$1
shift
"$@" &
pid=$!
limit=$((s * $(getconf CLK_TCK)))
while kill -0 "$pid" 2>/dev/null; do
	# utime + stime of the process (fields 14 and 15; the name in field 2 holds no space)
	t=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null)
	if [ -n "$t" ] && [ "$t" -ge "$limit" ]; then
		kill -9 "$pid"
		wait "$pid"
		kill -9 $$
	fi
	sleep 0.05
done
wait "$pid"
