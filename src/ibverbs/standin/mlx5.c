/* Stand-in libmlx5.so.1: Debian's perftest binaries link libmlx5 with
 * immediate binding, so the symbols they name must exist for them to
 * load. perftest calls them only on a Mellanox device; on the soft NIC
 * (another vendor) it does not. Each refuses: no device is an mlx5. */
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <stddef.h>

static void *mlx5_none(void)
{
    errno = EOPNOTSUPP;
    return NULL;
}

struct ibv_context *mlx5dv_open_device(struct ibv_device *device,
                                       struct mlx5dv_context_attr *attr)
{
    (void)device, (void)attr;
    return mlx5_none();
}

struct ibv_qp *mlx5dv_create_qp(struct ibv_context *context,
                                struct ibv_qp_init_attr_ex *qp_attr,
                                struct mlx5dv_qp_init_attr *mlx5_qp_attr)
{
    (void)context, (void)qp_attr, (void)mlx5_qp_attr;
    return mlx5_none();
}

struct mlx5dv_qp_ex *mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *qp)
{
    (void)qp;
    return mlx5_none();
}

struct mlx5dv_mkey *mlx5dv_create_mkey(struct mlx5dv_mkey_init_attr *attr)
{
    (void)attr;
    return mlx5_none();
}

int mlx5dv_destroy_mkey(struct mlx5dv_mkey *mkey)
{
    (void)mkey;
    return EOPNOTSUPP;
}

int mlx5dv_devx_general_cmd(struct ibv_context *context, const void *in,
                            size_t inlen, void *out, size_t outlen)
{
    (void)context, (void)in, (void)inlen, (void)out, (void)outlen;
    return EOPNOTSUPP;
}

int mlx5dv_crypto_login(struct ibv_context *context,
                        struct mlx5dv_crypto_login_attr *login_attr)
{
    (void)context, (void)login_attr;
    return EOPNOTSUPP;
}

struct mlx5dv_dek *mlx5dv_dek_create(struct ibv_context *context,
                                     struct mlx5dv_dek_init_attr *init_attr)
{
    (void)context, (void)init_attr;
    return mlx5_none();
}

int mlx5dv_dek_destroy(struct mlx5dv_dek *dek)
{
    (void)dek;
    return EOPNOTSUPP;
}
