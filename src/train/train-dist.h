/* src/train/train-dist.h: the data-parallel side of robotrain train (../shared/docs/DESIGN.md §5,
 * ../shared/spec/lerobot.md §4.4-4.5).
 *
 * A worker started by robotrain launch (or torchrun, mpirun, srun: robotrain/world.h) with a
 * world of N > 1 processes joins the run's rendezvous store and a communicator of the comm
 * module its device needs (robotrain/comm.h: Gloo for the CPU, NCCL for CUDA; nothing here
 * depends on which). Then:
 *   - rank 0's parameters and buffers are broadcast before the first step;
 *   - the graph averages the gradients in buckets (rt_graph_add_grad_sync), through this
 *     file's collective, before clipping and AdamW;
 *   - every step the ranks agree on a stop request (a signal seen by any rank stops all at the
 *     same step) and sum the counts that count-averaged losses need (RT_POLICY_BUILD_GLOBAL_COUNTS);
 *   - at a log step the loss and sub-losses are averaged over the ranks and the timings
 *     max-reduced;
 *   - only rank 0 prints (other ranks too with ROBOTRAIN_VERBOSE=1), writes metrics.jsonl and
 *     checkpoints; the others wait at a barrier.
 *
 * Environment: ROBOTRAIN_DDP_BUCKET_MB (gradient bucket size in MiB, default 25, PyTorch DDP's
 * bucket_cap_mb), ROBOTRAIN_DDP_TIMEOUT (seconds for the store connection and each collective,
 * default 1800, PyTorch's), ROBOTRAIN_VERBOSE (1: every rank prints its log lines, prefixed with
 * its rank). A process alone (world size 1) gets a context that does nothing. */
#ifndef ROBOTRAIN_TRAIN_TRAIN_DIST_H
#define ROBOTRAIN_TRAIN_TRAIN_DIST_H

#include <stdint.h>

#include <robotrain/graph.h>
#include <robotrain/plugin-loader.h>
#include <robotrain/policy.h>
#include <robotrain/world.h>

#include "data/loader.h"
#include "train/metrics.h"

G_BEGIN_DECLS

typedef struct rt_train_dist rt_train_dist;

/* Reads the world and the ROBOTRAIN_DDP_* settings from the environment; connects nothing yet.
 * Returns (transfer full) a context to free with rt_train_dist_free(), or NULL with error
 * (RT_ERROR_INVALID_ARG naming the variable). */
rt_train_dist *rt_train_dist_new(GError **error);
void rt_train_dist_free(rt_train_dist *d);

/* Whether this process is rank 0 (or alone) by the launcher's environment, without a context;
 * an environment that cannot be read counts as rank 0 (rt_train_dist_new reports it). */
gboolean rt_train_dist_env_is_main(void);

const rt_world *rt_train_dist_world(const rt_train_dist *d);
gboolean rt_train_dist_active(const rt_train_dist *d);  /* world size > 1 */
gboolean rt_train_dist_is_main(const rt_train_dist *d); /* rank 0 */
/* Whether this rank's log lines are printed (rank 0, or ROBOTRAIN_VERBOSE=1). */
gboolean rt_train_dist_prints(const rt_train_dist *d);
size_t rt_train_dist_bucket_bytes(const rt_train_dist *d);

/* The CUDA device this rank uses when --policy.device is cuda without an index: its local
 * rank (the launcher gives every local worker the same visible devices); `given` (>= 0) when
 * the flag names one. */
int rt_train_dist_cuda_index(const rt_train_dist *d, int given);

/* Joins the run's rendezvous store (rank 0 of a launch hosts it or connects to the launcher's),
 * once; nothing for a process alone. Errors name the store's address and the timeout. */
gboolean rt_train_dist_join(rt_train_dist *d, GError **error);

/* Gives every rank rank 0's *value (the others' is replaced), through the store under name
 * (one use per name and run): a random seed drawn by rank 0. */
gboolean rt_train_dist_share_u64(rt_train_dist *d, const char *name, uint64_t *value, GError **error);

/* A barrier where rank 0 goes first (train-hub.h's rt_train_wait_func; user_data is the
 * rt_train_dist): rank 0 posts main_ok and goes on; the others wait for it (up to
 * ROBOTRAIN_DDP_TIMEOUT) and fail when rank 0 did. Every rank calls it the same number of
 * times. */
gboolean rt_train_dist_wait_main(void *user_data, gboolean main_ok, GError **error);

/* Joins the store and the communicator for buffers on cuda_device (-1: host memory). Nothing
 * for a process alone. Errors name the store's address, the module and the timeout. */
gboolean rt_train_dist_connect(rt_train_dist *d, rt_plugin_registry *registry, int cuda_device,
                               GError **error);

/* Makes g's allreduce nodes average through the communicator, and broadcasts rank 0's
 * parameters and buffers to every rank. */
gboolean rt_train_dist_attach(rt_train_dist *d, rt_graph *g, GError **error);

/* Sums n values over the ranks in place (exact for integers below 2^24: the counts and stop
 * flags of a step). */
gboolean rt_train_dist_sum(rt_train_dist *d, double *values, int n, GError **error);
/* Averages mean[0..n_mean) and takes the maximum of max[0..n_max) over the ranks, in place. */
gboolean rt_train_dist_reduce_log(rt_train_dist *d, double *mean, int n_mean, double *max, int n_max,
                                  GError **error);
gboolean rt_train_dist_barrier(rt_train_dist *d, GError **error);

/* ---- the trainer's steps (train-dist-step.c); each does nothing for a process alone */

/* Writes the weight inputs of losses->counts for batch b: this rank's count of valid entries
 * (FALSE in the mask field) and the sum over the ranks, weight = max(1, own) x N / max(1, sum). */
gboolean rt_train_dist_count_weights(rt_train_dist *d, rt_graph *g, const rt_policy_losses *losses,
                                     const rt_batch *b, GError **error);
/* *sig: the stop signal every rank acts on (SIGINT or SIGTERM when any rank got one, else 0);
 * for a process alone its own rt_train_stop_requested(). */
gboolean rt_train_dist_agree_on_stop(rt_train_dist *d, int *sig, GError **error);
/* Before a log line: the window's loss and sub-losses averaged over the ranks, update_s and
 * dataloading_s their maximum (LeRobot v0.6); grad_norm and lr are the same on every rank. */
gboolean rt_train_dist_reduce_metrics(rt_train_dist *d, rt_metrics *m, const rt_policy_losses *losses,
                                      GError **error);
/* What to log when a checkpoint of saved_batch x saved_processes resumes with batch x this
 * world, or NULL when nothing changed. The sampler's order is a function of the global sample
 * position, so an unchanged global batch continues sample for sample (and so do the random
 * numbers, keyed by global sample); another one gets a WARNING. Returns (transfer full). */
char *rt_train_dist_resume_note(const rt_train_dist *d, int64_t saved_batch, int saved_processes,
                                int64_t batch);

/* One line on the time this rank spent in collectives over `steps` steps (gradient buckets;
 * the small per-step sums), or NULL for a process alone. Returns (transfer full) a string to
 * g_free. */
char *rt_train_dist_summary(const rt_train_dist *d, int64_t steps);

G_END_DECLS

#endif
