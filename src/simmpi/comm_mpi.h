/* The simulator's partitions over MPI: struct mroce_sim_comm (sim/comm.h)
 * on Open MPI's MPI_COMM_WORLD, one rank per process, for
 * `mpirun -np N mroce-sim ...` (docs/sim.md "Parallel runs"). Built only
 * when CMake finds MPI (Debian: libopenmpi-dev, openmpi-bin); the
 * simulator itself never includes <mpi.h>.
 *
 * Thread-safety: MPI_THREAD_SINGLE; one thread per process uses it.
 */
#ifndef MROCE_SIMMPI_COMM_MPI_H
#define MROCE_SIMMPI_COMM_MPI_H

#include <stdbool.h>

#include "sim/comm.h"

/* Whether this process was started by an MPI launcher (mpirun, mpiexec,
 * srun): only then does mroce-sim initialise MPI, so a plain run (and the
 * suites' forked workers) never touches it. */
bool mroce_simmpi_launched(void);

/* MPI_Init and the comm of MPI_COMM_WORLD; NULL (after a message on
 * stderr) if MPI cannot start. Call once. */
const struct mroce_sim_comm *mroce_simmpi_init(int *argc, char ***argv);

/* MPI_Finalize; c NULL is a no-op. */
void mroce_simmpi_finalize(const struct mroce_sim_comm *c);

#endif
