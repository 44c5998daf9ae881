/* The sampler: permutations, sharding as accelerate's BatchSamplerShard does it (checked against
 * a separate simulation of its loop), resume, drop_last, errors. */
#include "config.h"

#include <robotrain/error.h>

#include "data/sampler.h"
#include "testing.h"

static rt_sampler *make(int64_t n, int64_t b, int world, int rank, uint64_t seed, gboolean shuffle,
                        gboolean drop_last, GError **error)
{
    rt_sampler_options o;
    rt_sampler_options_init(&o);
    o.num_items = n;
    o.batch_size = b;
    o.world_size = world;
    o.rank = rank;
    o.seed = seed;
    o.shuffle = shuffle;
    o.drop_last = drop_last;
    return rt_sampler_new(&o, error);
}

/* Every item of an epoch once: the batches of one rank (world 1) concatenated. */
static int is_permutation_epoch(rt_sampler *s, int64_t n, int64_t b, int64_t epoch)
{
    int *seen = g_new0(int, n);
    int64_t *items = g_new(int64_t, b);
    int64_t total = 0;
    int ok = 1;
    for (int64_t k = 0; k < rt_sampler_batches_per_epoch(s); k++) {
        int64_t c = rt_sampler_batch(s, epoch, k, items);
        if (c != (k + 1 < rt_sampler_batches_per_epoch(s) ? b : n - k * b))
            ok = 0;
        for (int64_t i = 0; i < c; i++) {
            if (items[i] < 0 || items[i] >= n || seen[items[i]]++)
                ok = 0;
            total++;
        }
    }
    g_free(seen);
    g_free(items);
    return ok && total == n;
}

DEF_TEST(epochs_are_permutations)
{
    GError *error = NULL;
    rt_sampler *s = make(103, 8, 1, 0, 1000, TRUE, FALSE, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(13, rt_sampler_batches_per_epoch(s)); /* ceil(103 / 8), the last one short */
    for (int64_t e = 0; e < 5; e++)
        OK(is_permutation_epoch(s, 103, 8, e));
    /* shuffled: not the identity, and different epochs differ */
    int64_t a[103], b[103];
    int same_as_identity = 1, same_epochs = 1;
    for (int i = 0; i < 103; i++) {
        a[i] = rt_sampler_item(s, 0, i);
        b[i] = rt_sampler_item(s, 1, i);
        same_as_identity &= a[i] == i;
        same_epochs &= a[i] == b[i];
    }
    OK(!same_as_identity);
    OK(!same_epochs);
    /* a pure function of (seed, epoch): a fresh sampler, asked in another order, agrees */
    rt_sampler *t = make(103, 8, 1, 0, 1000, TRUE, FALSE, &error);
    int agree = 1;
    for (int i = 0; i < 103; i++)
        agree &= rt_sampler_item(t, 1, i) == b[i];
    for (int i = 0; i < 103; i++)
        agree &= rt_sampler_item(t, 0, i) == a[i];
    OK(agree);
    rt_sampler_free(t);
    /* another seed, another order */
    t = make(103, 8, 1, 0, 1001, TRUE, FALSE, &error);
    int differs = 0;
    for (int i = 0; i < 103; i++)
        differs |= rt_sampler_item(t, 0, i) != a[i];
    OK(differs);
    rt_sampler_free(t);
    rt_sampler_free(s);
    /* without shuffle: 0, 1, 2, ... */
    s = make(10, 4, 1, 0, 1000, FALSE, FALSE, &error);
    int64_t items[4];
    EXPECT_EQ_INT(4, rt_sampler_batch(s, 3, 1, items));
    EXPECT_EQ_INT(4, items[0]);
    EXPECT_EQ_INT(7, items[3]);
    EXPECT_EQ_INT(2, rt_sampler_batch(s, 3, 2, items));
    EXPECT_EQ_INT(9, items[1]);
    rt_sampler_free(s);
    return 0;
}

DEF_TEST(pinned_order)
{
    /* "rt-sampler v1" for seed 1000, epoch 0, 10 items: resumed runs rely on this never changing */
    GError *error = NULL;
    rt_sampler *s = make(10, 10, 1, 0, 1000, TRUE, FALSE, &error);
    EXPECT_NO_ERROR(error);
    int64_t items[10];
    EXPECT_EQ_INT(10, rt_sampler_batch(s, 0, 0, items));
    static const int64_t expect[10] = {1, 3, 9, 6, 2, 7, 8, 0, 5, 4};
    int same = 1;
    printf("# order:");
    for (int i = 0; i < 10; i++) {
        printf(" %" G_GINT64_FORMAT, items[i]);
        same &= items[i] == expect[i];
    }
    printf("\n");
    OK(same);
    rt_sampler_free(s);
    return 0;
}

DEF_TEST(roughly_uniform)
{
    /* the first position of 4000 epochs of 4 items: each item about 1000 times (a biased
     * shuffle, e.g. swapping with any position, would skew this) */
    GError *error = NULL;
    rt_sampler *s = make(4, 4, 1, 0, 7, TRUE, FALSE, &error);
    int counts[4][4] = {{0}};
    for (int64_t e = 0; e < 4000; e++)
        for (int p = 0; p < 4; p++)
            counts[p][rt_sampler_item(s, e, p)]++;
    int bad = 0;
    for (int p = 0; p < 4; p++)
        for (int i = 0; i < 4; i++)
            bad += counts[p][i] < 880 || counts[p][i] > 1120; /* about 8 standard deviations */
    EXPECT_EQ_INT(0, bad);
    rt_sampler_free(s);
    return 0;
}

/* accelerate's BatchSamplerShard._iter_with_no_split (split_batches false, even_batches true,
 * drop_last false), simulated on the global batches of a permutation: the batches rank `rank`
 * yields, concatenated into out; returns how many items. */
static int64_t accelerate_shard(const int64_t *perm, int64_t n, int64_t bs, int world, int rank, int64_t *out)
{
    int64_t got = 0;
    GArray *initial = g_array_new(FALSE, FALSE, sizeof(int64_t));
    GArray *to_yield = g_array_new(FALSE, FALSE, sizeof(int64_t));
    GArray *batch = g_array_new(FALSE, FALSE, sizeof(int64_t));
    int64_t idx = 0, n_batches = (n + bs - 1) / bs;
    for (idx = 0; idx < n_batches; idx++) {
        g_array_set_size(batch, 0);
        for (int64_t k = idx * bs; k < MIN(n, (idx + 1) * bs); k++)
            g_array_append_val(batch, perm[k]);
        if (idx < world)
            g_array_append_vals(initial, batch->data, batch->len);
        if (idx % world == rank) {
            g_array_set_size(to_yield, 0);
            g_array_append_vals(to_yield, batch->data, batch->len);
        }
        if (idx % world == world - 1 && (int64_t)batch->len == bs) {
            for (guint k = 0; k < to_yield->len; k++)
                out[got++] = g_array_index(to_yield, int64_t, k);
            g_array_set_size(to_yield, 0);
        }
    }
    idx = n_batches - 1; /* Python's loop variable keeps its last value */
    if ((int64_t)to_yield->len == bs)
        for (guint k = 0; k < to_yield->len; k++)
            out[got++] = g_array_index(to_yield, int64_t, k);
    while ((int64_t)initial->len < world * bs) { /* initial += initial (a copy: appending may move it) */
        gpointer copy = g_memdup2(initial->data, initial->len * sizeof(int64_t));
        g_array_append_vals(initial, copy, initial->len);
        g_free(copy);
    }
    if ((int64_t)batch->len == bs) {
        g_array_set_size(batch, 0);
        idx++;
    }
    int64_t cycle = 0;
    while (idx % world != 0 || batch->len > 0) {
        int64_t end = cycle + bs - batch->len;
        for (int64_t k = cycle; k < end; k++)
            g_array_append_val(batch, g_array_index(initial, int64_t, k));
        if (idx % world == rank)
            for (guint k = 0; k < batch->len; k++)
                out[got++] = g_array_index(batch, int64_t, k);
        cycle = end;
        g_array_set_size(batch, 0);
        idx++;
    }
    g_array_free(initial, TRUE);
    g_array_free(to_yield, TRUE);
    g_array_free(batch, TRUE);
    return got;
}

static int shards_match_accelerate(int64_t n, int64_t bs, int world)
{
    GError *error = NULL;
    int ok = 1;
    int64_t *perm = g_new(int64_t, n);
    int64_t *want = g_new(int64_t, (n + 2 * world * bs) * 2);
    int64_t *items = g_new(int64_t, bs);
    int *seen = g_new0(int, n);
    int64_t per_rank = -1;
    for (int r = 0; r < world; r++) {
        rt_sampler *s = make(n, bs, world, r, 42, TRUE, FALSE, &error);
        if (!s)
            return 0;
        for (int64_t i = 0; i < n; i++)
            perm[i] = rt_sampler_item(s, 3, i);
        int64_t expect = accelerate_shard(perm, n, bs, world, r, want);
        if (per_rank < 0)
            per_rank = rt_sampler_batches_per_epoch(s);
        ok &= rt_sampler_batches_per_epoch(s) == per_rank && expect == per_rank * bs;
        for (int64_t k = 0; k < rt_sampler_batches_per_epoch(s) && ok; k++) {
            ok &= rt_sampler_batch(s, 3, k, items) == bs;
            for (int64_t i = 0; i < bs; i++) {
                ok &= items[i] == want[k * bs + i];
                /* positions inside the permutation are disjoint across ranks */
                int64_t pos = (k * world + r) * bs + i;
                if (pos < n)
                    ok &= seen[items[i]]++ == 0;
            }
        }
        rt_sampler_free(s);
    }
    for (int64_t i = 0; i < n; i++)
        ok &= seen[i] == 1; /* and cover it */
    if (!ok)
        printf("# n %" G_GINT64_FORMAT " batch %" G_GINT64_FORMAT " world %d differs\n", n, bs, world);
    g_free(perm);
    g_free(want);
    g_free(items);
    g_free(seen);
    return ok;
}

DEF_TEST(shards_like_accelerate)
{
    /* a multiple, a short last round, a short last batch, fewer items than one round */
    OK(shards_match_accelerate(96, 8, 2));
    OK(shards_match_accelerate(103, 8, 3));
    OK(shards_match_accelerate(100, 8, 2));
    OK(shards_match_accelerate(10, 8, 4));
    OK(shards_match_accelerate(40, 5, 8));
    OK(shards_match_accelerate(1, 1, 2));
    GError *error = NULL;
    rt_sampler *s = make(103, 8, 3, 2, 42, TRUE, FALSE, &error);
    EXPECT_EQ_INT(5, rt_sampler_batches_per_epoch(s)); /* ceil(ceil(103 / 8) / 3) */
    rt_sampler_free(s);
    return 0;
}

DEF_TEST(resume_continues_the_sequence)
{
    GError *error = NULL;
    rt_sampler *a = make(37, 4, 2, 1, 1000, TRUE, FALSE, &error);
    int64_t bpe = rt_sampler_batches_per_epoch(a);
    EXPECT_EQ_INT(5, bpe);
    /* the uninterrupted run: steps 0..23, across epochs */
    int64_t run[24][4];
    for (int64_t step = 0; step < 24; step++) {
        int64_t e, b;
        rt_sampler_position(a, step, &e, &b);
        EXPECT_EQ_INT(step / bpe, e);
        rt_sampler_batch(a, e, b, run[step]);
    }
    /* resumed after 13 steps by a new sampler (a new process) */
    rt_sampler *r = make(37, 4, 2, 1, 1000, TRUE, FALSE, &error);
    int same = 1;
    for (int64_t step = 13; step < 24; step++) {
        int64_t e, b, items[4];
        rt_sampler_position(r, step, &e, &b);
        rt_sampler_batch(r, e, b, items);
        for (int i = 0; i < 4; i++)
            same &= items[i] == run[step][i];
    }
    OK(same);
    rt_sampler_free(a);
    rt_sampler_free(r);
    return 0;
}

DEF_TEST(drop_last)
{
    GError *error = NULL;
    rt_sampler *s = make(103, 8, 2, 0, 1, TRUE, TRUE, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(6, rt_sampler_batches_per_epoch(s)); /* 12 full batches, 6 rounds */
    int64_t items[8];
    EXPECT_EQ_INT(8, rt_sampler_batch(s, 0, 5, items));
    rt_sampler_free(s);
    s = make(103, 8, 1, 0, 1, TRUE, TRUE, &error);
    EXPECT_EQ_INT(12, rt_sampler_batches_per_epoch(s));
    EXPECT_EQ_INT(8, rt_sampler_batch(s, 0, 11, items));
    rt_sampler_free(s);
    return 0;
}

DEF_TEST(errors)
{
    GError *error = NULL;
    OK(make(10, 4, 2, 2, 0, TRUE, FALSE, &error) == NULL);
    EXPECT_ERROR(error, "cannot sample 10 items in batches of 4 for rank 2 of 2");
    OK(make(0, 4, 1, 0, 0, TRUE, FALSE, &error) == NULL);
    EXPECT_ERROR(error, "there must be items");
    OK(make(10, 4, 4, 0, 0, TRUE, TRUE, &error) == NULL);
    EXPECT_ERROR(error, "with drop_last, 10 items give no full batch of 4 for each of 4 ranks");
    return 0;
}

int main(void)
{
    RUN_TEST(epochs_are_permutations);
    RUN_TEST(pinned_order);
    RUN_TEST(roughly_uniform);
    RUN_TEST(shards_like_accelerate);
    RUN_TEST(resume_continues_the_sequence);
    RUN_TEST(drop_last);
    RUN_TEST(errors);
    END_TEST;
}
