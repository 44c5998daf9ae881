/* tests/graph-test.h: helpers shared by the graph, op and autodiff tests (on top of
 * tests/testing.h): a CPU device, host copies in double, a deterministic random source. */
#ifndef ROBOTRAIN_GRAPH_TEST_H
#define ROBOTRAIN_GRAPH_TEST_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <robotrain/robotrain.h>

#include "core/cpu/kernels.h" /* rt_cpu_set_num_threads */
#include "testing.h"

/* The CPU device, opened once per test program (closed at exit by the OS). */
static inline rt_backend_device *rt_test_cpu(void)
{
    static rt_backend_device *dev;
    if (!dev) {
        GError *error = NULL;
        dev = rt_backend_cpu()->open(0, &error);
        if (!dev) {
            printf("# cannot open the CPU device: %s\n", error->message);
            exit(99);
        }
    }
    return dev;
}

/* Plans g on the CPU; prints the error and returns FALSE on failure. */
static inline gboolean rt_test_plan(rt_graph *g)
{
    GError *error = NULL;
    if (!rt_graph_plan(g, rt_backend_cpu(), rt_test_cpu(), &error)) {
        printf("# rt_graph_plan: %s\n", error->message);
        g_error_free(error);
        return FALSE;
    }
    return TRUE;
}

static inline gboolean rt_test_run(rt_graph *g)
{
    GError *error = NULL;
    if (!rt_graph_compute(g, &error)) {
        printf("# rt_graph_compute: %s\n", error->message);
        g_error_free(error);
        return FALSE;
    }
    return TRUE;
}

/* A reproducible stream of doubles in [lo, hi) (xorshift64*). */
typedef struct rt_test_rng {
    uint64_t s;
} rt_test_rng;

static inline double rt_test_uniform(rt_test_rng *r, double lo, double hi)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    uint64_t x = r->s * 2685821657736338717ull;
    return lo + (hi - lo) * (double)(x >> 11) * (1.0 / 9007199254740992.0);
}

static inline void rt_test_fill(rt_test_rng *r, double *x, int64_t n, double lo, double hi)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = rt_test_uniform(r, lo, hi);
}

/* Writes n doubles into a planned f32 or f64 tensor (converting). */
static inline gboolean rt_test_write(rt_graph *g, const rt_tensor *t, const double *x)
{
    int64_t n = rt_tensor_numel(t);
    GError *error = NULL;
    gboolean ok;
    if (t->dtype == RT_F64) {
        ok = rt_graph_write(g, t, x, (size_t)n * 8, &error);
    } else {
        float *f = g_new(float, n);
        for (int64_t i = 0; i < n; i++)
            f[i] = (float)x[i];
        ok = rt_graph_write(g, t, f, (size_t)n * 4, &error);
        g_free(f);
    }
    if (!ok) {
        printf("# rt_graph_write: %s\n", error->message);
        g_error_free(error);
    }
    return ok;
}

/* Reads a planned f32 or f64 tensor into n doubles. */
static inline gboolean rt_test_read(rt_graph *g, const rt_tensor *t, double *x)
{
    int64_t n = rt_tensor_numel(t);
    GError *error = NULL;
    gboolean ok;
    if (t->dtype == RT_F64) {
        ok = rt_graph_read(g, t, x, (size_t)n * 8, &error);
    } else {
        float *f = g_new(float, n);
        ok = rt_graph_read(g, t, f, (size_t)n * 4, &error);
        for (int64_t i = 0; ok && i < n; i++)
            x[i] = f[i];
        g_free(f);
    }
    if (!ok) {
        printf("# rt_graph_read: %s\n", error->message);
        g_error_free(error);
    }
    return ok;
}

/* max |a - b| / (atol + rtol * |b|) over n elements: <= 1 means close */
static inline double rt_test_closeness(const double *a, const double *b, int64_t n, double atol,
                                       double rtol, int64_t *worst)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs(a[i] - b[i]) / (atol + rtol * fabs(b[i]));
        if (isnan(a[i]) != isnan(b[i]))
            e = INFINITY;
        if (e > m) {
            m = e;
            if (worst)
                *worst = i;
        }
    }
    return m;
}

/* OK() that arrays a (computed) and b (reference) agree */
#define EXPECT_CLOSE(a, b, n, atol, rtol)                                                     \
    do {                                                                                      \
        int64_t w_ = 0;                                                                       \
        double c_ = rt_test_closeness((a), (b), (n), (atol), (rtol), &w_);                    \
        RT_TEST_REPORT(c_ <= 1.0, "%s ~ %s (%lld elements; worst [%lld] %.9g vs %.9g) (%s:%d)", \
                       #a, #b, (long long)(n), (long long)w_, (a)[w_], (b)[w_], __FILE__,     \
                       __LINE__);                                                             \
        if (c_ > 1.0)                                                                         \
            return -1;                                                                        \
    } while (0)

#endif
