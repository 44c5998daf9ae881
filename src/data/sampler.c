/* The sampler: a permutation per (seed, epoch), cut into batches and sharded over ranks. */
#include "config.h"

#include <string.h>

#include <robotrain/error.h>

#include "data/sampler.h"

struct rt_sampler {
    rt_sampler_options o;
    int64_t global_batches; /* batches of the whole world per epoch (before completion) */
    int64_t per_rank;
    int64_t cached_epoch; /* -1: none */
    int64_t *perm;        /* [num_items] */
};

void rt_sampler_options_init(rt_sampler_options *options)
{
    memset(options, 0, sizeof *options);
    options->batch_size = 8;
    options->world_size = 1;
    options->shuffle = TRUE;
    options->seed = 1000;
}

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

typedef struct {
    uint64_t s[4];
} xoshiro;

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t xoshiro_next(xoshiro *x)
{
    uint64_t *s = x->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform in [0, bound) without bias (Lemire, "Fast random integer generation in an interval",
 * 2019), 64-bit. */
static uint64_t uniform_below(xoshiro *x, uint64_t bound)
{
    unsigned __int128 m = (unsigned __int128)xoshiro_next(x) * bound;
    uint64_t low = (uint64_t)m;
    if (low < bound) {
        uint64_t threshold = -bound % bound;
        while (low < threshold) {
            m = (unsigned __int128)xoshiro_next(x) * bound;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

static void make_permutation(rt_sampler *s, int64_t epoch)
{
    int64_t n = s->o.num_items;
    for (int64_t i = 0; i < n; i++)
        s->perm[i] = i;
    if (s->o.shuffle) {
        uint64_t st = s->o.seed;
        uint64_t key = splitmix64(&st) ^ (uint64_t)epoch;
        st = key;
        key = splitmix64(&st);
        xoshiro x;
        st = key;
        for (int k = 0; k < 4; k++)
            x.s[k] = splitmix64(&st);
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = (int64_t)uniform_below(&x, (uint64_t)i + 1);
            int64_t t = s->perm[i];
            s->perm[i] = s->perm[j];
            s->perm[j] = t;
        }
    }
    s->cached_epoch = epoch;
}

rt_sampler *rt_sampler_new(const rt_sampler_options *o, GError **error)
{
    if (o->num_items < 1 || o->batch_size < 1 || o->world_size < 1 || o->rank < 0 ||
        o->rank >= o->world_size) {
        g_set_error(
            error, RT_ERROR, RT_ERROR_INVALID_ARG,
            "cannot sample %" G_GINT64_FORMAT " items in batches of %" G_GINT64_FORMAT
            " for rank %d of %d: there must be items, batches of at least one, and 0 <= rank < world size",
            o->num_items, o->batch_size, o->rank, o->world_size);
        return NULL;
    }
    if (o->num_items > (INT64_C(1) << 40) || o->batch_size > (INT64_C(1) << 24)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%" G_GINT64_FORMAT " items in batches of %" G_GINT64_FORMAT
                    " are more than the sampler supports",
                    o->num_items, o->batch_size);
        return NULL;
    }
    rt_sampler *s = g_new0(rt_sampler, 1);
    s->o = *o;
    int64_t n = o->num_items, b = o->batch_size, w = o->world_size;
    if (o->drop_last) {
        s->global_batches = n / b;
        s->per_rank = s->global_batches / w;
    } else {
        s->global_batches = (n + b - 1) / b;
        s->per_rank = w == 1 ? s->global_batches : (s->global_batches + w - 1) / w;
    }
    if (s->per_rank == 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "with drop_last, %" G_GINT64_FORMAT " items give no full batch of %" G_GINT64_FORMAT
                    " for each of %d ranks; lower the batch size",
                    n, b, o->world_size);
        g_free(s);
        return NULL;
    }
    s->perm = g_try_new(int64_t, n);
    if (!s->perm) {
        g_set_error(error, RT_ERROR, RT_ERROR_FAILED,
                    "no memory for a permutation of %" G_GINT64_FORMAT " items", n);
        g_free(s);
        return NULL;
    }
    s->cached_epoch = -1;
    return s;
}

void rt_sampler_free(rt_sampler *sampler)
{
    if (!sampler)
        return;
    g_free(sampler->perm);
    g_free(sampler);
}

const rt_sampler_options *rt_sampler_get_options(const rt_sampler *sampler)
{
    return &sampler->o;
}

int64_t rt_sampler_batches_per_epoch(const rt_sampler *sampler)
{
    return sampler->per_rank;
}

int64_t rt_sampler_item(rt_sampler *s, int64_t epoch, int64_t position)
{
    g_return_val_if_fail(position >= 0 && position < s->o.num_items, -1);
    if (s->cached_epoch != epoch)
        make_permutation(s, epoch);
    return s->perm[position];
}

int64_t rt_sampler_batch(rt_sampler *s, int64_t epoch, int64_t batch, int64_t *items)
{
    g_return_val_if_fail(batch >= 0 && batch < s->per_rank, 0);
    if (s->cached_epoch != epoch)
        make_permutation(s, epoch);
    int64_t n = s->o.num_items, b = s->o.batch_size;
    int64_t global = batch * s->o.world_size + s->o.rank;
    int64_t start = global * b;
    int64_t count = b;
    if (s->o.world_size == 1 && !s->o.drop_last)
        count = MIN(b, n - start); /* the short last batch */
    for (int64_t k = 0; k < count; k++)
        items[k] = s->perm[(start + k) % n]; /* past the end: the epoch's start again */
    return count;
}

void rt_sampler_position(const rt_sampler *sampler, int64_t step, int64_t *epoch, int64_t *batch)
{
    *epoch = step / sampler->per_rank;
    *batch = step % sampler->per_rank;
}
