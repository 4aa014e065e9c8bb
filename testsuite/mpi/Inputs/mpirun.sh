#!/bin/sh
# testsuite/mpi/Inputs/mpirun.sh: mpirun for the tests: ranks may outnumber the cores
# (--oversubscribe), root is allowed (containers, CI), output is not tagged.
if [ "$(id -u)" -eq 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1
exec mpirun --oversubscribe "$@"
