#!/bin/sh
# testsuite/mpi/Inputs/fails.sh CMD...: runs CMD (stdout and stderr together) and passes when it
# fails within 120 s; a hang (killed at 120 s) or a success is a failure of the test.
timeout 120 "$@" 2>&1
st=$?
[ "$st" -eq 124 ] && { echo "fails.sh: hung (killed after 120 s)"; exit 1; }
[ "$st" -eq 0 ] && { echo "fails.sh: succeeded"; exit 1; }
echo "fails.sh: failed with status $st"
exit 0
