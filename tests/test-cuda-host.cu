/* The CUDA kernels' shared arithmetic, checked on the host (no GPU needed): the __host__
 * __device__ helpers of plugins/backend-cuda/cuda-common.cuh against the CPU backend's own
 * functions, and the strided walks of cuda-iter.c against plain index arithmetic.
 *   - Philox 4x32-10 and the (seed, step, node, sample, element) -> word mapping equal
 *     src/core/philox.h's, so dropout masks and random fills agree with the CPU bit for bit;
 *   - the dropout threshold and the uniform/open-interval scalings equal philox.h's;
 *   - f32 -> bf16 / f16 and back equal src/core/cpu/convert.c's on every 16-bit pattern and on a
 *     sweep of f32 patterns (every 4099th, every f16-subnormal exponent, the specials);
 *   - a merged walk visits the same offsets, in the same order, as the unmerged shape.
 * The device paths these helpers compile to are the same source; the GPU tests check those. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

extern "C" {
#include "core/cpu/kernels.h"
}
#include "core/philox.h"

#include "backend-cuda/cuda-common.cuh"

/* tests/testing.h's checks, without GLib (nvcc's front end warns about its headers) */
static int n_checks, n_failed_tests;
#define DEF_TEST(name) static int test_##name(void)
#define REPORT(ok, ...)                                                                                      \
    do {                                                                                                     \
        n_checks++;                                                                                          \
        printf("%sok %d - ", (ok) ? "" : "not ", n_checks);                                                  \
        printf(__VA_ARGS__);                                                                                 \
        printf(" (%s:%d)\n", __FILE__, __LINE__);                                                            \
    } while (0)
#define OK(cond)                                                                                             \
    do {                                                                                                     \
        int ok_ = !!(cond);                                                                                  \
        REPORT(ok_, "%s", #cond);                                                                            \
        if (!ok_)                                                                                            \
            return -1;                                                                                       \
    } while (0)
#define EXPECT_EQ_INT(expect, actual)                                                                        \
    do {                                                                                                     \
        long long e_ = (long long)(expect), a_ = (long long)(actual);                                        \
        REPORT(e_ == a_, "%s = %lld, expected %lld", #actual, a_, e_);                                       \
        if (e_ != a_)                                                                                        \
            return -1;                                                                                       \
    } while (0)
#define RUN_TEST(name)                                                                                       \
    do {                                                                                                     \
        printf("# %s\n", #name);                                                                             \
        if (test_##name() != 0)                                                                              \
            n_failed_tests++;                                                                                \
    } while (0)
#define N_ELEMENTS(a) (sizeof(a) / sizeof((a)[0]))

using namespace rtcuda;

static uint64_t next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

DEF_TEST(philox_equals_the_cpu)
{
    uint64_t s = 0x1234567;
    int bad = 0;
    for (int i = 0; i < 100000; i++) {
        uint32_t c[4], k[2], a[4], b[4];
        for (int j = 0; j < 4; j++)
            c[j] = (uint32_t)next(&s);
        k[0] = (uint32_t)next(&s);
        k[1] = (uint32_t)next(&s);
        philox_block(c[0], c[1], c[2], c[3], k[0], k[1], a);
        rt_philox_block(c[0], c[1], c[2], c[3], k[0], k[1], b);
        bad += memcmp(a, b, sizeof a) != 0;
    }
    EXPECT_EQ_INT(0, bad);
    return 0;
}

/* the mapping of backend-cpu-ew.c (rng_segment) written out: element e of a tensor whose batch
 * axis has size batch and post elements after it */
static void cpu_position(int64_t e, int64_t batch, int64_t post, int64_t offset, uint64_t *sample,
                         uint64_t *within)
{
    if (!post) {
        *sample = 0;
        *within = (uint64_t)e;
        return;
    }
    *sample = (uint64_t)((e / post) % batch + offset);
    *within = (uint64_t)((e / (post * batch)) * post + e % post);
}

DEF_TEST(rng_words_equal_the_cpu)
{
    const int64_t state[4] = {(int64_t)0x0123456789abcdefull, 17, 5, 0};
    rng_stream s = rng_stream_make(state, 9);
    rt_rng_stream cs = rt_rng_stream_make(state, 9);
    OK(s.k0 == cs.k0 && s.k1 == cs.k1 && s.node == cs.node && s.step == cs.step);
    /* shapes [4, 3, 7] with batch axis 1 (post 7), batch axis 0 (post 21) and none */
    const int64_t layouts[3][2] = {{3, 7}, {4, 21}, {1, 0}};
    int bad = 0, checked = 0;
    for (int l = 0; l < 3; l++)
        for (int64_t e = 0; e < 84; e++) {
            uint64_t sample, within, cs_sample, cs_within;
            rng_position(e, layouts[l][0], layouts[l][1], state[2], &sample, &within);
            cpu_position(e, layouts[l][0], layouts[l][1], state[2], &cs_sample, &cs_within);
            uint32_t w_cpu;
            rt_rng_fill(&cs, cs_sample, cs_within, 1, &w_cpu);
            bad += sample != cs_sample || within != cs_within || rng_word(s, sample, within) != w_cpu;
            checked++;
        }
    EXPECT_EQ_INT(0, bad);
    EXPECT_EQ_INT(252, checked);
    /* far counters (the 32-bit block index wraps the same way) */
    uint32_t w[RT_RNG_CHUNK];
    uint64_t within = ((uint64_t)1 << 34) + 3;
    rt_rng_fill(&cs, 2, within, 9, w);
    for (int i = 0; i < 9; i++)
        bad += rng_word(s, 2, within + (uint64_t)i) != w[i];
    EXPECT_EQ_INT(0, bad);
    return 0;
}

DEF_TEST(scalings_equal_the_cpu)
{
    uint64_t s = 99;
    int bad = 0;
    for (int i = 0; i < 100000; i++) {
        uint32_t w = (uint32_t)next(&s);
        bad += rng_unit(w) != rt_rng_unit(w) || rng_open01(w) != rt_rng_open01(w);
        bad += uniform_from(w, -2.5, 7.0) != -2.5 + (7.0 - -2.5) * rt_rng_unit(w);
    }
    uint32_t extremes[4] = {0, 1, 0x7fffffffu, 0xffffffffu};
    for (int i = 0; i < 4; i++)
        bad += rng_unit(extremes[i]) != rt_rng_unit(extremes[i]) ||
               rng_open01(extremes[i]) != rt_rng_open01(extremes[i]);
    const double ps[] = {0.0, 1e-12, 0.1, 0.25, 0.5, 0.9, 0.999999999, 1.0 - 1e-16};
    for (size_t i = 0; i < N_ELEMENTS(ps); i++)
        bad += drop_threshold(ps[i]) != rt_rng_drop_threshold(ps[i]);
    EXPECT_EQ_INT(0, bad);
    return 0;
}

/* n f32 bit patterns through both conversions; returns the mismatches (printing the first) */
static int convert_both(const uint32_t *bits, size_t n)
{
    float *x = new float[n], *back_cpu = new float[n];
    uint16_t *h_cpu = new uint16_t[n];
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        x[i] = bits_f32(bits[i]);
    rt_cpu_f32_to_bf16(x, h_cpu, n);
    for (size_t i = 0; i < n; i++)
        if (bf16_from_f32(x[i]) != h_cpu[i] && bad++ == 0)
            printf("# bf16 of 0x%08x: 0x%04x, the CPU 0x%04x\n", bits[i], bf16_from_f32(x[i]), h_cpu[i]);
    rt_cpu_f32_to_f16(x, h_cpu, n);
    for (size_t i = 0; i < n; i++)
        if (f16_from_f32(x[i]) != h_cpu[i] && bad++ == 0)
            printf("# f16 of 0x%08x: 0x%04x, the CPU 0x%04x\n", bits[i], f16_from_f32(x[i]), h_cpu[i]);
    memcpy(back_cpu, x, n * sizeof(float));
    rt_cpu_round_bf16(back_cpu, n);
    for (size_t i = 0; i < n; i++)
        bad += f32_bits(round_to(x[i], RT_CUDA_BF16)) != f32_bits(back_cpu[i]);
    memcpy(back_cpu, x, n * sizeof(float));
    rt_cpu_round_f16(back_cpu, n);
    for (size_t i = 0; i < n; i++)
        bad += f32_bits(round_to(x[i], RT_CUDA_F16)) != f32_bits(back_cpu[i]);
    delete[] x;
    delete[] back_cpu;
    delete[] h_cpu;
    return bad;
}

DEF_TEST(conversions_equal_the_cpu)
{
    /* every 16-bit pattern back to f32 */
    uint16_t h[65536];
    float cpu_b[65536], cpu_h[65536];
    for (int i = 0; i < 65536; i++)
        h[i] = (uint16_t)i;
    rt_cpu_bf16_to_f32(h, cpu_b, 65536);
    rt_cpu_f16_to_f32(h, cpu_h, 65536);
    int bad = 0;
    for (int i = 0; i < 65536; i++)
        bad += f32_bits(bf16_to_f32(h[i])) != f32_bits(cpu_b[i]) ||
               f32_bits(f16_to_f32(h[i])) != f32_bits(cpu_h[i]);
    EXPECT_EQ_INT(0, bad);

    enum { CHUNK = 1 << 16 };
    uint32_t *bits = new uint32_t[CHUNK];
    size_t n = 0;
    /* a sweep of all f32 patterns, both signs */
    for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) {
        bits[n++] = (uint32_t)u;
        if (n == CHUNK) {
            bad += convert_both(bits, n);
            n = 0;
        }
    }
    /* where f16 turns subnormal or rounds to zero (exponents 100..114), every 61st mantissa;
     * the halfway points of the f16 and bf16 grids and their neighbours */
    for (uint32_t e = 100; e <= 114; e++)
        for (uint32_t m = 0; m < (1u << 23); m += 61) {
            bits[n++] = e << 23 | m;
            if (n == CHUNK) {
                bad += convert_both(bits, n);
                n = 0;
            }
        }
    const uint32_t special[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u,
                                0x7f800001u, 0x7fbfffffu, 0x477fefffu, 0x477ff000u, 0x477fe000u, 0x387fc000u,
                                0x33000000u, 0x33000001u, 0x32ffffffu, 0x3f808000u, 0x3f818000u, 0x3f807fffu,
                                0x7f7fffffu, 0x00000001u, 0x807fffffu};
    for (size_t i = 0; i < N_ELEMENTS(special); i++)
        bits[n++] = special[i];
    bad += convert_both(bits, n);
    delete[] bits;
    EXPECT_EQ_INT(0, bad);
    return 0;
}

/* offsets of element i of shape with the given strides, decoded without merging */
static int64_t plain_offset(int nd, const int64_t *shape, const int64_t *stride, int64_t i)
{
    int64_t off = 0;
    for (int d = nd - 1; d >= 0; d--) {
        off += (i % shape[d]) * stride[d];
        i /= shape[d];
    }
    return off;
}

static int64_t walk_offset(const rt_cuda_iter *it, int k, int64_t i)
{
    return plain_offset(it->nd, it->shape, it->st[k], i);
}

DEF_TEST(walks_visit_the_same_elements)
{
    /* contiguous [2, 3, 4]: one flat axis */
    const int64_t shape[3] = {2, 3, 4}, dense[3] = {12, 4, 1};
    const int64_t *s1[1] = {dense};
    rt_cuda_iter it;
    rt_cuda_iter_init(&it, 3, shape, 1, s1);
    EXPECT_EQ_INT(1, it.nd);
    EXPECT_EQ_INT(24, it.n);
    EXPECT_EQ_INT(1, it.st[0][0]);
    /* a scalar */
    rt_cuda_iter_init(&it, 0, shape, 1, s1);
    EXPECT_EQ_INT(1, it.nd);
    EXPECT_EQ_INT(1, it.n);

    /* random shapes (with size-1 axes), an output, a transposed input, a broadcast input */
    uint64_t s = 4242;
    int bad = 0;
    for (int trial = 0; trial < 500; trial++) {
        int nd = 1 + (int)(next(&s) % 5);
        int64_t sh[5], out_st[5], in_st[5], bc_st[5], perm_st[5];
        for (int d = 0; d < nd; d++)
            sh[d] = 1 + (int64_t)(next(&s) % 4);
        int64_t acc = 1;
        for (int d = nd - 1; d >= 0; d--) {
            out_st[d] = acc;
            acc *= sh[d];
        }
        /* input: strides of the reversed layout (a transpose); broadcast: some axes 0 */
        acc = 1;
        for (int d = 0; d < nd; d++) {
            perm_st[d] = acc;
            acc *= sh[d];
        }
        for (int d = 0; d < nd; d++) {
            in_st[d] = trial % 2 ? perm_st[d] : out_st[d];
            bc_st[d] = next(&s) % 2 ? 0 : out_st[d];
        }
        const int64_t *strides[3] = {out_st, in_st, bc_st};
        rt_cuda_iter_init(&it, nd, sh, 3, strides);
        int64_t n = 1;
        for (int d = 0; d < nd; d++)
            n *= sh[d];
        bad += it.n != n;
        for (int64_t i = 0; i < n; i++)
            for (int k = 0; k < 3; k++)
                bad += walk_offset(&it, k, i) != plain_offset(nd, sh, strides[k], i);
    }
    EXPECT_EQ_INT(0, bad);
    return 0;
}

int main(void)
{
    RUN_TEST(philox_equals_the_cpu);
    RUN_TEST(rng_words_equal_the_cpu);
    RUN_TEST(scalings_equal_the_cpu);
    RUN_TEST(conversions_equal_the_cpu);
    RUN_TEST(walks_visit_the_same_elements);
    printf("# %d checks, %d failed test(s)\n", n_checks, n_failed_tests);
    return n_failed_tests ? 1 : 0;
}
