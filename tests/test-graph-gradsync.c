/* Gradient averaging as graph nodes (rt_graph_add_grad_sync): the buckets cut the gradient blob
 * at parameter boundaries, from the last parameter to the first, each at least the bucket size
 * but the last; together they cover every gradient once; the collective runs after the backward
 * pass and before the norm, clipping and AdamW (a collective that halves the data halves the
 * reported gradient norm); without a collective the nodes change nothing; a failing collective
 * fails the step with its own error; misuse is refused. */
#include "config.h"

#include <math.h>

#include "graph-test.h"

enum { N_PARAMS = 5 };
static const int64_t sizes[N_PARAMS] = {10, 300, 5, 200, 50};

typedef struct net {
    rt_graph *g;
    rt_tensor *p[N_PARAMS], *unused;
    double norm; /* of the gradient: the constants k */
} net;

typedef struct calls {
    int n;
    size_t offset[16], count[16];
    const char *fail; /* message of a failure to report, or NULL */
    uint8_t *base;
} calls;

static gboolean collective(void *user_data, void *data, size_t count, rt_dtype dtype, void *stream,
                           GError **error)
{
    calls *c = user_data;
    if (c->fail) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "%s", c->fail);
        return FALSE;
    }
    if (c->n < 16) {
        c->offset[c->n] = (size_t)((uint8_t *)data - c->base);
        c->count[c->n] = count;
    }
    c->n++;
    if (dtype != RT_F32 || stream)
        return TRUE;
    float *x = data;
    for (size_t i = 0; i < count; i++)
        x[i] *= 0.5f; /* as averaging with a peer whose gradients are zero */
    return TRUE;
}

/* loss = sum_i p_i . k_i: the gradient of p_i is k_i */
static gboolean build(net *n, size_t bucket_bytes, int *n_buckets)
{
    GError *error = NULL;
    rt_graph *g = n->g = rt_graph_new(RT_GRAPH_TRAIN);
    double sq = 0;
    for (int i = 0; i < N_PARAMS; i++) {
        char name[16];
        g_snprintf(name, sizeof name, "p%d", i);
        n->p[i] = rt_param(g, name, RT_F32, 1, &sizes[i], rt_init_constant(0.5));
        if (i == 2)
            n->unused = rt_param(g, "unused", RT_F32, 1, (int64_t[]){7}, rt_init_constant(1));
        double *k = g_new(double, sizes[i]);
        for (int64_t j = 0; j < sizes[i]; j++) {
            k[j] = 0.01 * (double)(i + 1) + 0.001 * (double)j;
            sq += k[j] * k[j];
        }
        rt_tensor *tk = rt_cast(g, rt_const(g, RT_F64, 1, &sizes[i], k), RT_F32);
        g_free(k);
        rt_set_loss(g, rt_sum(g, rt_mul(g, n->p[i], tk), RT_ALL_AXES, FALSE));
    }
    n->norm = sqrt(sq);
    rt_adamw_group group = {1e-3, 0.9, 0.999, 1e-8, 0};
    if (!rt_graph_backward(g, &error) || (*n_buckets = rt_graph_add_grad_sync(g, bucket_bytes, &error)) < 0 ||
        !rt_graph_add_adamw(g, &group, 1, 0, &error)) {
        printf("# %s\n", error->message);
        g_error_free(error);
        return FALSE;
    }
    return rt_test_plan(g);
}

static size_t end_of(const rt_tensor *t)
{
    return t->offset + rt_tensor_nbytes(t);
}

DEF_TEST(buckets)
{
    net n;
    int n_buckets = 0;
    OK(build(&n, 800, &n_buckets));
    /* from the end: p4 (200 B) + p3 (800 B); p2 (20 B) + p1 (1200 B); p0 */
    EXPECT_EQ_INT(3, n_buckets);
    EXPECT_EQ_INT(3, rt_graph_n_grad_buckets(n.g));
    calls c = {0};
    c.base = rt_graph_storage_buffer(n.g, RT_STORAGE_GRAD)->ptr;
    rt_graph_set_collective(n.g, collective, &c);
    GError *error = NULL;
    OK(rt_graph_compute(n.g, &error));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(3, c.n);
    size_t expect_begin[3] = {n.p[3]->offset, n.p[1]->offset, n.p[0]->offset};
    size_t expect_end[3] = {end_of(n.p[4]), end_of(n.p[2]), end_of(n.p[0])};
    for (int b = 0; b < 3 && b < c.n; b++) {
        RT_TEST_REPORT(c.offset[b] == expect_begin[b] && c.offset[b] + 4 * c.count[b] == expect_end[b],
                       "bucket %d covers bytes [%zu, %zu) of the gradients (got [%zu, %zu))", b,
                       expect_begin[b], expect_end[b], c.offset[b], c.offset[b] + 4 * c.count[b]);
        if (b > 0)
            OK1(c.offset[b] + 4 * c.count[b] <= c.offset[b - 1], "buckets go from the last parameter back");
    }
    OK1(n.unused->offset >= end_of(n.p[4]), "the parameter without gradient lies after the buckets");
    double norm = 0;
    OK(rt_graph_read_scalar(n.g, rt_graph_find(n.g, "grad_norm"), &norm, &error));
    EXPECT_NEAR(0.5 * n.norm, norm, 1e-5 * n.norm);

    /* without a collective the nodes leave the gradients as they are */
    rt_graph_set_collective(n.g, NULL, NULL);
    OK(rt_graph_compute(n.g, &error));
    OK(rt_graph_read_scalar(n.g, rt_graph_find(n.g, "grad_norm"), &norm, &error));
    EXPECT_NEAR(n.norm, norm, 1e-5 * n.norm);

    /* a failing collective fails the step with its error */
    c.fail = "rank 1 is gone";
    rt_graph_set_collective(n.g, collective, &c);
    OK(!rt_graph_compute(n.g, &error));
    OK1(g_error_matches(error, RT_ERROR, RT_ERROR_NETWORK), "the collective's error domain and code");
    EXPECT_ERROR(error, "averaging gradient bucket 0 of 3: rank 1 is gone");
    rt_graph_free(n.g);
    return 0;
}

DEF_TEST(one_bucket_per_parameter_or_all)
{
    net n;
    int n_buckets = 0;
    OK(build(&n, 1, &n_buckets));
    EXPECT_EQ_INT(N_PARAMS, n_buckets);
    rt_graph_free(n.g);
    OK(build(&n, (size_t)25 << 20, &n_buckets));
    EXPECT_EQ_INT(1, n_buckets);
    rt_graph_free(n.g);
    return 0;
}

DEF_TEST(misuse)
{
    GError *error = NULL;
    rt_graph *g = rt_graph_new(RT_GRAPH_TRAIN);
    rt_tensor *p = rt_param(g, "p", RT_F32, 1, (int64_t[]){4}, rt_init_constant(1));
    rt_set_loss(g, rt_sum(g, p, RT_ALL_AXES, FALSE));
    EXPECT_EQ_INT(-1, rt_graph_add_grad_sync(g, 100, &error));
    EXPECT_ERROR(error, "after rt_graph_backward and before rt_graph_add_adamw");
    OK(rt_graph_backward(g, &error));
    EXPECT_EQ_INT(-1, rt_graph_add_grad_sync(g, 0, &error));
    EXPECT_ERROR(error, "a bucket of 0 bytes");
    EXPECT_EQ_INT(1, rt_graph_add_grad_sync(g, 100, &error));
    EXPECT_EQ_INT(-1, rt_graph_add_grad_sync(g, 100, &error));
    EXPECT_ERROR(error, "call it once");
    rt_graph_free(g);
    return 0;
}

int main(void)
{
    RUN_TEST(buckets);
    RUN_TEST(one_bucket_per_parameter_or_all);
    RUN_TEST(misuse);
    END_TEST;
}
