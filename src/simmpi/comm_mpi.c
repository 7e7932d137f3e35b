/* The simulator's comm over MPI; see comm_mpi.h.
 *
 * alltoallv: the byte counts go first (MPI_Alltoall), then the bytes
 * (MPI_Alltoallv into one receive buffer kept between calls). allreduce:
 * two in-place MPI_Allreduce, MPI_SUM on the first part and MPI_MAX on
 * the rest, on 64-bit unsigned integers. MPI_Allreduce gives every rank
 * the same result, which the simulator relies on to take the same
 * decisions everywhere. */
#include "simmpi/comm_mpi.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include <mroce/mroce.h>

struct simmpi {
    struct mroce_sim_comm comm;
    int *scount, *sdispl, *rcount, *rdispl;
    uint64_t *slen, *rlen;
    uint8_t *in;
    size_t in_cap;
};

bool mroce_simmpi_launched(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK",
                                       "PMI_SIZE", "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        if (getenv(vars[i]))
            return true;
    return false;
}

static int simmpi_err(int rc)
{
    return rc == MPI_SUCCESS ? 0 : MROCE_EPROTO;
}

/* Counts and displacements of the exchange, as MPI's ints. */
static int simmpi_counts(struct simmpi *m, const size_t *out_len,
                         size_t *in_len, size_t *total)
{
    int n = m->comm.size;
    for (int r = 0; r < n; r++)
        m->slen[r] = out_len[r];
    int err = simmpi_err(MPI_Alltoall(m->slen, 1, MPI_UINT64_T, m->rlen, 1,
                                      MPI_UINT64_T, MPI_COMM_WORLD));
    uint64_t so = 0, ro = 0;
    for (int r = 0; !err && r < n; r++) {
        if (so + m->slen[r] > INT_MAX || ro + m->rlen[r] > INT_MAX)
            err = MROCE_ERANGE; /* one window of 2 GB: not supported */
        m->scount[r] = (int)m->slen[r];
        m->sdispl[r] = (int)so;
        m->rcount[r] = (int)m->rlen[r];
        m->rdispl[r] = (int)ro;
        in_len[r] = m->rlen[r];
        so += m->slen[r];
        ro += m->rlen[r];
    }
    *total = ro;
    return err;
}

static int simmpi_alltoallv(void *ud, const void *const *out,
                            const size_t *out_len, const void **in,
                            size_t *in_len)
{
    struct simmpi *m = ud;
    size_t total, stotal = 0;
    int err = simmpi_counts(m, out_len, in_len, &total);
    for (int r = 0; r < m->comm.size; r++)
        stotal += out_len[r];
    /* MPI_Alltoallv wants one send buffer: gather the outboxes */
    uint8_t *send = err ? NULL : malloc(stotal + 1);
    if (!err && total + 1 > m->in_cap) {
        uint8_t *b = realloc(m->in, total + 1);
        if (b) {
            m->in = b;
            m->in_cap = total + 1;
        }
    }
    int bad = err || !send || m->in_cap < total + 1, any = 0;
    /* every rank learns whether one cannot go on, before the exchange */
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!any) {
        for (int r = 0; r < m->comm.size; r++)
            if (out_len[r])
                memcpy(send + m->sdispl[r], out[r], out_len[r]);
        err = simmpi_err(MPI_Alltoallv(send, m->scount, m->sdispl, MPI_BYTE,
                                       m->in, m->rcount, m->rdispl, MPI_BYTE,
                                       MPI_COMM_WORLD));
    }
    free(send);
    *in = m->in;
    return any ? (err ? err : MROCE_ENOMEM) : err;
}

static int simmpi_allreduce(void *ud, uint64_t *v, size_t n_sum, size_t n_max)
{
    (void)ud;
    if (n_sum > INT_MAX || n_max > INT_MAX)
        return MROCE_ERANGE;
    int err = 0;
    if (n_sum)
        err = simmpi_err(MPI_Allreduce(MPI_IN_PLACE, v, (int)n_sum,
                                       MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD));
    if (!err && n_max)
        err = simmpi_err(MPI_Allreduce(MPI_IN_PLACE, v + n_sum, (int)n_max,
                                       MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD));
    return err;
}

static void simmpi_free(struct simmpi *m)
{
    free(m->scount);
    free(m->sdispl);
    free(m->rcount);
    free(m->rdispl);
    free(m->slen);
    free(m->rlen);
    free(m->in);
    free(m);
}

const struct mroce_sim_comm *mroce_simmpi_init(int *argc, char ***argv)
{
    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
        fprintf(stderr, "mroce-sim: MPI_Init failed\n");
        return NULL;
    }
    /* errors come back as codes: a rank that fails says so, then all end */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    struct simmpi *m = calloc(1, sizeof(*m));
    int n = 0;
    if (m) {
        MPI_Comm_rank(MPI_COMM_WORLD, &m->comm.rank);
        MPI_Comm_size(MPI_COMM_WORLD, &n);
        m->comm.size = n;
        m->scount = calloc((size_t)n, sizeof(int));
        m->sdispl = calloc((size_t)n, sizeof(int));
        m->rcount = calloc((size_t)n, sizeof(int));
        m->rdispl = calloc((size_t)n, sizeof(int));
        m->slen = calloc((size_t)n, sizeof(uint64_t));
        m->rlen = calloc((size_t)n, sizeof(uint64_t));
    }
    if (!m || !m->scount || !m->sdispl || !m->rcount || !m->rdispl ||
        !m->slen || !m->rlen) {
        fprintf(stderr, "mroce-sim: out of memory starting MPI\n");
        if (m)
            simmpi_free(m);
        MPI_Abort(MPI_COMM_WORLD, 2);
        return NULL;
    }
    m->comm.alltoallv = simmpi_alltoallv;
    m->comm.allreduce = simmpi_allreduce;
    m->comm.ud = m;
    return &m->comm;
}

void mroce_simmpi_finalize(const struct mroce_sim_comm *c)
{
    if (!c)
        return;
    simmpi_free(c->ud);
    MPI_Finalize();
}
