/* src/data/loader.h: loader threads that decode batches ahead of training.
 *
 * The loader walks the sampler's sequence of this rank's batches, (start epoch, start batch),
 * then the next batch, across epochs without end, and fills each batch on one of num_workers
 * threads (each with its own rt_dataset_reader, so its own video decoders), normalizing it when
 * a normalizer is given. Batches come out in sequence order whatever thread filled them, so a
 * run is reproducible and resumable whatever the thread count.
 *
 * Memory: `depth` batch blocks (default 2 per worker, at least 2) are allocated when the loader
 * starts, with the caller's allocator when one is given (for pinned host memory, so the copy to
 * the GPU can be asynchronous), and recycled: rt_loader_next() hands one out, rt_loader_release()
 * gives it back to be refilled. The steady state allocates nothing.
 *
 * With num_workers 0 the batch is filled in the caller's thread inside rt_loader_next(), like a
 * PyTorch DataLoader with num_workers=0.
 *
 * The time the caller spends waiting inside rt_loader_next() is measured: LeRobot's
 * dataloading_s, the data_s field of the log line. */
#ifndef ROBOTRAIN_DATA_LOADER_H
#define ROBOTRAIN_DATA_LOADER_H

#include <glib.h>

#include "data/dataset.h"
#include "data/normalize.h"
#include "data/sampler.h"

G_BEGIN_DECLS

typedef struct {
    int num_workers;     /* loader threads (LeRobot's --num_workers, default 4); 0: the caller's */
    int depth;           /* batches in flight; 0: 2 x num_workers (at least 2) */
    int decoder_threads; /* threads of each video decoder (0 = 1) */
    int64_t start_epoch; /* where the sequence starts (resume) */
    int64_t start_batch;
    const rt_normalizer *normalizer; /* optional, borrowed */
    /* optional allocator for the batch blocks (rt_batch_layout_bytes() bytes each); NULL: page
     * aligned host memory */
    void *(*alloc)(size_t bytes, void *user);
    void (*free)(void *block, void *user);
    void *alloc_user;
} rt_loader_options;

void rt_loader_options_init(rt_loader_options *options);

typedef struct rt_loader rt_loader;

/* Starts the loader: builds the layout (the dataset's delta indices must be set), allocates the
 * batches and starts the threads, which begin decoding at once. The dataset, sampler and
 * normalizer must outlive it; the sampler is used only by the loader from now on.
 * Returns (transfer full): stop and free with rt_loader_free(). */
rt_loader *rt_loader_new(rt_dataset *ds, rt_sampler *sampler, const rt_loader_options *options,
                         GError **error);

/* Stops the threads (waiting for batches being filled), frees the batches and the loader. */
void rt_loader_free(rt_loader *loader);

const rt_batch_layout *rt_loader_layout(const rt_loader *loader);

/* The next batch of the sequence, waiting until it is filled. Returns (transfer none) a batch
 * that stays valid until rt_loader_release(); or NULL with the error that stopped the loader
 * (a file that cannot be decoded: the message names it, the episode and the frame); every
 * later call fails the same way. At most `depth` batches may be held at once. */
rt_batch *rt_loader_next(rt_loader *loader, GError **error);

/* Gives a batch back for refilling. */
void rt_loader_release(rt_loader *loader, rt_batch *batch);

typedef struct {
    int64_t batches;    /* batches returned by rt_loader_next() */
    double wait_s;      /* total time spent waiting in rt_loader_next() */
    double last_wait_s; /* of the last call */
    double fill_s;      /* total thread time spent filling batches */
} rt_loader_stats;

void rt_loader_get_stats(rt_loader *loader, rt_loader_stats *stats);

G_END_DECLS

#endif
