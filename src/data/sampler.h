/* src/data/sampler.h: which dataset items go into which batch, on which rank, in which epoch.
 *
 * The order is a pure function of (seed, epoch) (LeRobot v0.6's EpisodeAwareSampler idea: no
 * RNG state to save or synchronize), so every rank computes the same permutation on its own,
 * and a run resumes at any (epoch, batch) by asking for that batch.
 *
 * Sharding follows accelerate's BatchSamplerShard (split_batches false, even_batches true),
 * which is what LeRobot's multi-GPU runs use (../shared/spec/lerobot.md §4.4): the epoch's
 * permutation is cut into global batches of batch_size, and rank r of N takes global batches
 * r, r + N, r + 2N, ... With N > 1 every rank gets ceil(ceil(items / batch_size) / N) full
 * batches: positions past the end of the permutation wrap around to its start (the "even
 * batches" completion). With N = 1 (accelerate does not shard then) the last batch is short.
 * With drop_last, incomplete batches and incomplete rounds are dropped instead.
 *
 * The permutation ("rt-sampler v1"): a 64-bit key = splitmix64(splitmix64(seed) ^ epoch), a
 * xoshiro256** stream seeded from the key by splitmix64, and a Fisher-Yates shuffle from the
 * last position down (position i swaps with a uniform j in [0, i], drawn by Lemire's
 * multiply-and-reject). Without shuffle the order is 0, 1, 2, ... */
#ifndef ROBOTRAIN_DATA_SAMPLER_H
#define ROBOTRAIN_DATA_SAMPLER_H

#include <stdint.h>

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
    int64_t num_items;  /* dataset items (rt_dataset_num_frames()) */
    int64_t batch_size; /* per rank (LeRobot's --batch_size) */
    int world_size;     /* ranks (1) */
    int rank;           /* this rank, 0 .. world_size - 1 */
    gboolean shuffle;   /* TRUE */
    uint64_t seed;      /* LeRobot's --seed (1000) */
    gboolean drop_last; /* FALSE, as LeRobot's DataLoader */
} rt_sampler_options;

void rt_sampler_options_init(rt_sampler_options *options);

typedef struct rt_sampler rt_sampler;

/* Fails (RT_ERROR_INVALID_ARG) for no items, batch_size < 1, a rank outside the world, or
 * drop_last leaving no batch. Returns (transfer full): free with rt_sampler_free(). */
rt_sampler *rt_sampler_new(const rt_sampler_options *options, GError **error);
void rt_sampler_free(rt_sampler *sampler);

const rt_sampler_options *rt_sampler_get_options(const rt_sampler *sampler);

/* Batches this rank takes per epoch (the same on every rank). */
int64_t rt_sampler_batches_per_epoch(const rt_sampler *sampler);

/* Writes the items of this rank's batch `batch` (0 .. batches_per_epoch - 1) of `epoch` to
 * items[0 .. batch_size) and returns how many there are: batch_size, or fewer for the last
 * batch of a single rank without drop_last. Not thread-safe (the epoch's permutation is cached
 * in the sampler). */
int64_t rt_sampler_batch(rt_sampler *sampler, int64_t epoch, int64_t batch, int64_t *items);

/* The item at `position` (0 .. num_items - 1) of epoch's permutation. Not thread-safe. */
int64_t rt_sampler_item(rt_sampler *sampler, int64_t epoch, int64_t position);

/* The (epoch, batch) of this rank's step-th batch since the start: what a run resumed after
 * `step` optimizer steps asks for next. */
void rt_sampler_position(const rt_sampler *sampler, int64_t step, int64_t *epoch, int64_t *batch);

G_END_DECLS

#endif
