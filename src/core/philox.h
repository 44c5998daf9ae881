/* src/core/philox.h: Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3", SC'11) and the mapping from (seed, step, node, sample, element) to its counter, shared by
 * every CPU kernel that draws numbers. A CUDA kernel that uses the same mapping draws the
 * same values. */
#ifndef ROBOTRAIN_PHILOX_H
#define ROBOTRAIN_PHILOX_H

#include <math.h>
#include <stdint.h>

static inline void rt_philox_block(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                                   uint32_t k1, uint32_t out[4])
{
    for (int round = 0; round < 10; round++) {
        if (round > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        uint64_t p0 = (uint64_t)0xD2511F53u * c0;
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* The draw of one random node in one step. Element e of sample s takes word e % 4 of the block
 * at counter (e / 4, s, node, step) under key seed; a tensor without a batch axis is one
 * sample, s = 0. */
typedef struct rt_rng_stream {
    uint32_t k0, k1, node, step;
} rt_rng_stream;

static inline rt_rng_stream rt_rng_stream_make(const int64_t *rng_state, int64_t node)
{
    uint64_t seed = (uint64_t)rng_state[0];
    rt_rng_stream s = {(uint32_t)seed, (uint32_t)(seed >> 32), (uint32_t)node,
                       (uint32_t)rng_state[1]};
    return s;
}

/* The four words of the block holding elements 4q..4q+3 of sample. */
static inline void rt_rng_words(const rt_rng_stream *s, uint64_t sample, uint64_t q, uint32_t w[4])
{
    rt_philox_block((uint32_t)q, (uint32_t)sample, s->node, s->step, s->k0, s->k1, w);
}

/* Words for RT_RNG_CHUNK consecutive elements at most, computed 64 blocks side by side so the
 * compiler vectorises the rounds. Fills out[i] = word of element within + i of sample, for
 * i < n, where (within % 4) + n <= RT_RNG_CHUNK. */
#define RT_RNG_CHUNK 256

static inline void rt_rng_fill(const rt_rng_stream *s, uint64_t sample, uint64_t within, int n,
                               uint32_t *out)
{
    enum { NB = RT_RNG_CHUNK / 4 };
    uint32_t x0[NB], x1[NB], x2[NB], x3[NB];
    uint32_t q0 = (uint32_t)(within / 4);
    for (int b = 0; b < NB; b++) {
        x0[b] = q0 + (uint32_t)b;
        x1[b] = (uint32_t)sample;
        x2[b] = s->node;
        x3[b] = s->step;
    }
    uint32_t k0 = s->k0, k1 = s->k1;
    for (int round = 0; round < 10; round++) {
        if (round > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        for (int b = 0; b < NB; b++) {
            uint64_t p0 = (uint64_t)0xD2511F53u * x0[b];
            uint64_t p1 = (uint64_t)0xCD9E8D57u * x2[b];
            uint32_t n0 = (uint32_t)(p1 >> 32) ^ x1[b] ^ k0;
            uint32_t n2 = (uint32_t)(p0 >> 32) ^ x3[b] ^ k1;
            x1[b] = (uint32_t)p1;
            x3[b] = (uint32_t)p0;
            x0[b] = n0;
            x2[b] = n2;
        }
    }
    int skip = (int)(within % 4);
    for (int i = 0; i < n; i++) {
        int k = skip + i, b = k / 4;
        switch (k % 4) {
        case 0: out[i] = x0[b]; break;
        case 1: out[i] = x1[b]; break;
        case 2: out[i] = x2[b]; break;
        default: out[i] = x3[b]; break;
        }
    }
}

/* How many elements from within fit one rt_rng_fill. */
static inline int rt_rng_chunk(uint64_t within, int64_t left)
{
    int64_t room = RT_RNG_CHUNK - (int64_t)(within % 4);
    return (int)(left < room ? left : room);
}

/* Uniform double in (0, 1) from one word: never 0 or 1, so logs are finite. */
static inline double rt_rng_open01(uint32_t w) { return ((double)w + 0.5) * (1.0 / 4294967296.0); }

/* Uniform in [0, 1) with 24 bits, as a float would hold it. */
static inline double rt_rng_unit(uint32_t w) { return (double)(w >> 8) * (1.0 / 16777216.0); }

/* Box-Muller: words (w0, w1) give two normals (cos and sin), computed in double. */
static inline void rt_rng_normal2(uint32_t w0, uint32_t w1, double *z0, double *z1)
{
    double r = sqrt(-2.0 * log(rt_rng_open01(w0)));
    double t = 6.283185307179586476925 * rt_rng_open01(w1);
    *z0 = r * cos(t);
    *z1 = r * sin(t);
}

/* Dropout keeps an element when its word is >= this threshold (probability 1 - p). */
static inline uint32_t rt_rng_drop_threshold(double p)
{
    double t = p * 4294967296.0;
    return t >= 4294967295.0 ? 0xFFFFFFFFu : (uint32_t)t;
}

#endif
