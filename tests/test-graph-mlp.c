/* A small MLP trains end to end (forward, backward, clipping, AdamW) on random data, and every
 * step after the first allocates nothing: malloc and friends are wrapped in this program
 * (glibc's __libc_* entry points), counting calls while a step runs. Under AddressSanitizer,
 * which owns malloc, that one check is skipped. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "graph-test.h"

#if defined(__SANITIZE_ADDRESS__)
#define RT_COUNT_MALLOC 0
#else
#define RT_COUNT_MALLOC 1
#endif

#if RT_COUNT_MALLOC
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void __libc_free(void *p);
void *memalign(size_t align, size_t size);

static volatile int counting;
static volatile long n_allocations;

static void count(void)
{
    if (counting)
        __atomic_add_fetch(&n_allocations, 1, __ATOMIC_RELAXED);
}

void *malloc(size_t size)
{
    count();
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
    count();
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
    count();
    return __libc_realloc(p, size);
}

void *memalign(size_t align, size_t size)
{
    count();
    return __libc_memalign(align, size);
}

void *aligned_alloc(size_t align, size_t size)
{
    count();
    return __libc_memalign(align, size);
}

int posix_memalign(void **p, size_t align, size_t size)
{
    count();
    *p = __libc_memalign(align, size);
    return *p ? 0 : ENOMEM;
}

void free(void *p)
{
    __libc_free(p);
}
#endif

enum { B = 16, IN = 8, HID = 32, OUT = 4 };

typedef struct mlp {
    rt_graph *g;
    rt_tensor *x, *t, *loss;
} mlp;

static gboolean build(mlp *m, int64_t batch)
{
    GError *error = NULL;
    rt_graph *g = m->g = rt_graph_new(RT_GRAPH_TRAIN);
    rt_graph_set_init_seed(g, 7);
    double b1 = 1.0 / sqrt(IN), b2 = 1.0 / sqrt(HID);
    m->x = rt_input(g, "x", RT_F32, 2, (int64_t[]){batch, IN}, 0);
    m->t = rt_input(g, "target", RT_F32, 2, (int64_t[]){batch, OUT}, 0);
    rt_tensor *w1 = rt_param(g, "l1.weight", RT_F32, 2, (int64_t[]){HID, IN}, rt_init_uniform(-b1, b1));
    rt_tensor *c1 = rt_param(g, "l1.bias", RT_F32, 1, (int64_t[]){HID}, rt_init_uniform(-b1, b1));
    rt_tensor *ln_w = rt_param(g, "ln.weight", RT_F32, 1, (int64_t[]){HID}, rt_init_constant(1));
    rt_tensor *ln_b = rt_param(g, "ln.bias", RT_F32, 1, (int64_t[]){HID}, rt_init_constant(0));
    rt_tensor *w2 = rt_param(g, "l2.weight", RT_F32, 2, (int64_t[]){OUT, HID}, rt_init_uniform(-b2, b2));
    rt_tensor *c2 = rt_param(g, "l2.bias", RT_F32, 1, (int64_t[]){OUT}, rt_init_uniform(-b2, b2));
    rt_tensor *h = rt_relu(g, rt_layer_norm(g, rt_linear(g, m->x, w1, c1), ln_w, ln_b, 1e-5));
    h = rt_dropout(g, h, 0.1);
    rt_tensor *y = rt_linear(g, h, w2, c2);
    rt_tensor *d = rt_sub(g, y, m->t);
    m->loss = rt_mean(g, rt_mul(g, d, d), RT_ALL_AXES, FALSE);
    rt_set_loss(g, m->loss);
    rt_graph_set_group_by_prefix(g, "ln.", 1);
    rt_adamw_group groups[2] = {{1e-2, 0.9, 0.999, 1e-8, 1e-4}, {5e-3, 0.9, 0.999, 1e-8, 0}};
    if (!rt_graph_backward(g, &error) || !rt_graph_add_adamw(g, groups, 2, 1.0, &error)) {
        printf("# %s\n", error->message);
        g_error_free(error);
        return FALSE;
    }
    return rt_test_plan(g);
}

/* targets: a fixed linear map of the inputs */
static void make_batch(rt_test_rng *r, double *x, double *t, int64_t batch)
{
    rt_test_fill(r, x, batch * IN, -1, 1);
    for (int64_t b = 0; b < batch; b++)
        for (int o = 0; o < OUT; o++) {
            double s = 0;
            for (int i = 0; i < IN; i++)
                s += x[b * IN + i] * sin(1.0 + o * IN + i);
            t[b * OUT + o] = s;
        }
}

static int train(int threads, int steps, double *first_loss, double *last_loss, long *allocs)
{
    rt_cpu_set_num_threads(threads);
    mlp m;
    OK(build(&m, B));
    rt_test_rng r = {12345};
    double x[B * IN], t[B * OUT];
    GError *error = NULL;
    *allocs = 0;
    for (int step = 0; step < steps; step++) {
        make_batch(&r, x, t, B);
        float xf[B * IN], tf[B * OUT];
        for (int i = 0; i < B * IN; i++)
            xf[i] = (float)x[i];
        for (int i = 0; i < B * OUT; i++)
            tf[i] = (float)t[i];
#if RT_COUNT_MALLOC
        counting = step > 0;
        n_allocations = 0;
#endif
        gboolean ok = rt_graph_write(m.g, m.x, xf, sizeof xf, &error) &&
                      rt_graph_write(m.g, m.t, tf, sizeof tf, &error) &&
                      rt_graph_set_rng(m.g, 42, (uint64_t)step, 0, &error) &&
                      rt_graph_compute(m.g, &error);
#if RT_COUNT_MALLOC
        counting = 0;
        *allocs += n_allocations;
#endif
        if (!ok) {
            EXPECT_NO_ERROR(error);
            OK(ok);
        }
        double loss;
        if (!rt_graph_read_scalar(m.g, m.loss, &loss, &error))
            EXPECT_NO_ERROR(error);
        if (step == 0)
            *first_loss = loss;
        *last_loss = loss;
    }
    rt_graph_free(m.g);
    rt_cpu_set_num_threads(0);
    return 0;
}

DEF_TEST(mlp_learns)
{
    double first, last;
    long allocs;
    OK(train(1, 300, &first, &last, &allocs) == 0);
    printf("# loss %.4f -> %.4f\n", first, last);
    OK(first > 0.5);
    OK(last < 0.25 * first);
    return 0;
}

DEF_TEST(steps_allocate_nothing)
{
#if !RT_COUNT_MALLOC
    printf("# skipped under AddressSanitizer, which replaces malloc\n");
    return 0;
#else
    double first, last;
    long allocs;
    OK(train(1, 5, &first, &last, &allocs) == 0);
    EXPECT_EQ_INT(0, allocs);
    OK(train(2, 5, &first, &last, &allocs) == 0);
    EXPECT_EQ_INT(0, allocs);
    return 0;
#endif
}

/* the counter works: a graph build allocates */
DEF_TEST(counter_counts)
{
#if RT_COUNT_MALLOC
    counting = 1;
    n_allocations = 0;
    rt_graph *g = rt_graph_new(0);
    rt_graph_free(g);
    counting = 0;
    OK(n_allocations > 0);
#endif
    return 0;
}

int main(void)
{
    RUN_TEST(counter_counts);
    RUN_TEST(mlp_learns);
    RUN_TEST(steps_allocate_nothing);
    END_TEST;
}
