#!/bin/sh
# mpi_job.sh EXPECT TIMEOUT N PROG ARGS... — runs PROG as an N-process job
# under OpenMPI's mpirun, through run_job.sh (bounded by TIMEOUT seconds,
# exit status EXPECT, GREP, no process left behind).  Processes are not
# bound to cores and may outnumber them; as root, mpirun needs to be told
# that this is intended.
expect=$1 limit=$2 n=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
root=""
[ "$(id -u)" -eq 0 ] && root="--allow-run-as-root"
exec "$here/run_job.sh" "$expect" "$limit" mpirun $root --oversubscribe --bind-to none -n "$n" "$@"
