/*
 * peer_mpi_init.c — OpenMPI's side of bench/startup.sh: the trivial MPI
 * program (MPI_Init, MPI_Finalize) that mpirun starts N of beside rally's.
 * Built by bench/startup.sh with mpicc, not by CMake.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Finalize();
    return 0;
}
