/* Counter-based randomness: Philox 4x32-10 against Random123's known answers; dropout and
 * noise reproducible across runs, graph rebuilds and thread counts; a batch split across
 * "processes" (sample offsets) draws exactly what the whole batch draws; and the normal and
 * uniform draws have the right moments. */
#include "config.h"

#include "graph-test.h"

#include "core/graph-internal.h" /* rt_philox4x32_10 */

DEF_TEST(philox_known_answers)
{
    /* Random123 kat_vectors, philox4x32 10 */
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
         0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
         0x94fdcceb, 0x5001e420, 0x24126ea1},
    };
    for (int i = 0; i < 3; i++) {
        uint32_t out[4];
        rt_philox4x32_10(kat[i], kat[i] + 4, out);
        for (int j = 0; j < 4; j++)
            EXPECT_EQ_INT(kat[i][6 + j], out[j]);
    }
    return 0;
}

/* dropout on a batch-first input, VAE-style noise, and attention with dropout */
typedef struct rnd_graph {
    rt_graph *g;
    rt_tensor *x, *drop, *noise, *att;
} rnd_graph;

static gboolean build(rnd_graph *r, int64_t batch)
{
    rt_graph *g = r->g = rt_graph_new(RT_GRAPH_TRAIN);
    r->x = rt_input(g, "x", RT_F32, 3, (int64_t[]){batch, 256, 96}, 0);
    r->drop = rt_dropout(g, r->x, 0.25);
    r->noise = rt_randn_like(g, rt_slice(g, r->x, 2, 0, 32));
    /* sequence-first attention: [L=256, B, E=96] from the batch-first input */
    rt_tensor *q = rt_contiguous(g, rt_transpose(g, r->x, 0, 1));
    r->att = rt_attention(g, q, q, q, NULL, 4, 0.2, FALSE);
    rt_graph_output(g, "drop", r->drop);
    rt_graph_output(g, "noise", r->noise);
    rt_graph_output(g, "att", r->att);
    return rt_test_plan(g);
}

static gboolean run_rnd(rnd_graph *r, const float *x, uint64_t step, int64_t offset, float *drop,
                        float *noise, float *att)
{
    int64_t b = r->x->shape[0];
    return rt_graph_write(r->g, r->x, x, (size_t)(b * 256 * 96) * 4, NULL) &&
           rt_graph_set_rng(r->g, 2024, step, offset, NULL) && rt_test_run(r->g) &&
           rt_graph_read(r->g, r->drop, drop, (size_t)(b * 256 * 96) * 4, NULL) &&
           rt_graph_read(r->g, r->noise, noise, (size_t)(b * 256 * 32) * 4, NULL) &&
           rt_graph_read(r->g, r->att, att, (size_t)(b * 256 * 96) * 4, NULL);
}

enum { NB = 4, N = NB * 256 * 96, NN = NB * 256 * 32 };

static float *random_input(void)
{
    float *x = g_new(float, N);
    rt_test_rng r = {99};
    for (int i = 0; i < N; i++)
        x[i] = (float)rt_test_uniform(&r, -1, 1);
    return x;
}

DEF_TEST(reproducible_across_runs_rebuilds_and_threads)
{
    float *x = random_input();
    float *d[4], *n[4], *a[4];
    for (int i = 0; i < 4; i++) {
        d[i] = g_new(float, N);
        n[i] = g_new(float, NN);
        a[i] = g_new(float, N);
    }
    rnd_graph r1, r2;
    rt_cpu_set_num_threads(1);
    OK(build(&r1, NB));
    OK(run_rnd(&r1, x, 5, 0, d[0], n[0], a[0]));
    OK(run_rnd(&r1, x, 5, 0, d[1], n[1], a[1])); /* same graph, again */
    rt_cpu_set_num_threads(3);
    OK(build(&r2, NB));                           /* a rebuilt graph, three threads */
    OK(run_rnd(&r2, x, 5, 0, d[2], n[2], a[2]));
    OK(run_rnd(&r2, x, 6, 0, d[3], n[3], a[3]));  /* the next step */
    rt_cpu_set_num_threads(0);
    for (int i = 1; i < 3; i++) {
        OK(memcmp(d[0], d[i], N * 4) == 0);
        OK(memcmp(n[0], n[i], NN * 4) == 0);
        /* the attention dropout masks are the same; its GEMMs may round differently when
         * split over other thread counts (OpenBLAS picks kernels by size) */
        double worst = 0;
        for (int e = 0; e < N; e++)
            worst = MAX(worst, fabs(a[0][e] - a[i][e]));
        EXPECT_NEAR(0, worst, 1e-5);
    }
    OK(memcmp(d[0], d[3], N * 4) != 0);
    OK(memcmp(n[0], n[3], NN * 4) != 0);
    OK(memcmp(a[0], a[3], N * 4) != 0);
    /* dropout keeps about 75% and scales by 1/0.75 */
    int kept = 0;
    for (int i = 0; i < N; i++)
        if (d[0][i] != 0) {
            kept++;
            if (fabsf(d[0][i] - x[i] / 0.75f) > 1e-6f)
                break;
        }
    EXPECT_NEAR(0.75, (double)kept / N, 0.01);
    rt_graph_free(r1.g);
    rt_graph_free(r2.g);
    for (int i = 0; i < 4; i++) {
        g_free(d[i]);
        g_free(n[i]);
        g_free(a[i]);
    }
    g_free(x);
    return 0;
}

/* two "processes" with half the batch each and sample offsets 0 and 2 draw what one process
 * with the whole batch draws */
DEF_TEST(batch_split_draws_the_same_numbers)
{
    float *x = random_input();
    float *d = g_new(float, N), *n = g_new(float, NN), *a = g_new(float, N);
    float *dh = g_new(float, N), *nh = g_new(float, NN), *ah = g_new(float, N);
    rnd_graph whole, half;
    OK(build(&whole, NB));
    OK(build(&half, NB / 2));
    OK(run_rnd(&whole, x, 3, 0, d, n, a));
    const int per = 256 * 96, per_n = 256 * 32;
    for (int part = 0; part < 2; part++) {
        OK(run_rnd(&half, x + part * 2 * per, 3, part * 2, dh + part * 2 * per,
                   nh + part * 2 * per_n, ah + part * 2 * per));
    }
    OK(memcmp(d, dh, N * 4) == 0);
    OK(memcmp(n, nh, NN * 4) == 0);
    /* attention: the same probabilities dropped, so the same outputs (up to GEMM blocking) */
    double worst = 0;
    for (int l = 0; l < 256; l++)
        for (int b = 0; b < NB; b++)
            for (int e = 0; e < 96; e++) {
                float whole_v = a[(l * NB + b) * 96 + e];
                float half_v = ah[(b / 2) * 2 * per + (l * 2 + b % 2) * 96 + e];
                worst = MAX(worst, fabs(whole_v - half_v));
            }
    EXPECT_NEAR(0, worst, 1e-5);
    /* and a different offset draws different numbers */
    OK(run_rnd(&half, x, 3, 1, dh, nh, ah));
    OK(memcmp(d, dh, (size_t)per * 2 * 4) != 0);
    rt_graph_free(whole.g);
    rt_graph_free(half.g);
    g_free(x);
    g_free(d);
    g_free(n);
    g_free(a);
    g_free(dh);
    g_free(nh);
    g_free(ah);
    return 0;
}

DEF_TEST(moments)
{
    const int64_t n = 200000;
    rt_graph *g = rt_graph_new(RT_GRAPH_TRAIN);
    rt_tensor *u = rt_rand_uniform(g, RT_F64, 1, &n, -1, 2, 5);
    rt_tensor *z = rt_rand_normal(g, RT_F64, 1, &n, -1, -1, 3);
    rt_graph_output(g, "u", u);
    rt_graph_output(g, "z", z);
    OK(rt_test_plan(g));
    OK(rt_graph_set_rng(g, 1, 1, 0, NULL) && rt_test_run(g));
    double *uv = g_new(double, n), *zv = g_new(double, n);
    OK(rt_test_read(g, u, uv) && rt_test_read(g, z, zv));
    double su = 0, suu = 0, sz = 0, szz = 0, lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        su += uv[i];
        suu += uv[i] * uv[i];
        sz += zv[i];
        szz += zv[i] * zv[i];
        lo = MIN(lo, uv[i]);
        hi = MAX(hi, uv[i]);
    }
    double mu = su / n, vu = suu / n - mu * mu, mz = sz / n, vz = szz / n - mz * mz;
    EXPECT_NEAR(3.5, mu, 0.01);     /* U(2, 5): mean 3.5, variance 0.75 */
    EXPECT_NEAR(0.75, vu, 0.01);
    OK(lo >= 2 && hi < 5);
    EXPECT_NEAR(-1, mz, 0.03);      /* N(-1, 9) */
    EXPECT_NEAR(9, vz, 0.1);
    g_free(uv);
    g_free(zv);
    rt_graph_free(g);
    return 0;
}

/* parameter initialisers: a pure function of (seed, name) */
DEF_TEST(initialisers)
{
    float w1[64], w2[64], w3[64];
    for (int run = 0; run < 3; run++) {
        rt_graph *g = rt_graph_new(0);
        rt_graph_set_init_seed(g, run == 2 ? 8 : 7);
        if (run == 1) /* another parameter first: the order does not matter */
            rt_param(g, "other", RT_F32, 1, (int64_t[]){10}, rt_init_normal(0, 1));
        rt_tensor *w = rt_param(g, "w", RT_F32, 2, (int64_t[]){8, 8}, rt_init_uniform(-0.5, 0.5));
        rt_graph_output(g, "y", rt_scale(g, w, 1, 0));
        OK(rt_test_plan(g));
        OK(rt_graph_read(g, w, run == 0 ? w1 : run == 1 ? w2 : w3, sizeof w1, NULL));
        rt_graph_free(g);
    }
    OK(memcmp(w1, w2, sizeof w1) == 0);
    OK(memcmp(w1, w3, sizeof w1) != 0);
    for (int i = 0; i < 64; i++)
        OK(w1[i] >= -0.5f && w1[i] < 0.5f);
    return 0;
}

int main(void)
{
    RUN_TEST(philox_known_answers);
    RUN_TEST(reproducible_across_runs_rebuilds_and_threads);
    RUN_TEST(batch_split_draws_the_same_numbers);
    RUN_TEST(moments);
    RUN_TEST(initialisers);
    END_TEST;
}
