/* src/train/amp.h: mixed precision for robotrain train (../shared/spec/lerobot.md §4.1;
 * ../shared/docs/DESIGN.md §3).
 *
 * Which precision a run trains in:
 *   - ROBOTRAIN_MIXED_PRECISION (set by robotrain launch --mixed_precision; accelerate's
 *     ACCELERATE_MIXED_PRECISION): no, fp16 or bf16 decides;
 *   - without it, --policy.use_amp=true is LeRobot v0.6.1's autocast at the device's default
 *     dtype, as torch.autocast picks it: fp16 (with loss scaling) on CUDA, bf16 on the CPU;
 *     --policy.use_amp=false is float32;
 *   - --policy.use_amp given on the command line and a variable that says otherwise (true with
 *     "no", false with fp16/bf16) is an error naming both, not a silent choice;
 *   - resuming, a checkpoint's precision (training_state/mixed_precision.json) is kept when
 *     use_amp alone asked for mixed precision; the loss scaler continues from its saved state.
 *
 * What it does to the graph: matmul, linear, conv2d and attention round their inputs to
 * bf16/f16 and accumulate in f32 (rt_graph_set_compute_dtype); parameters, optimizer state,
 * reductions, softmax, layer norm and losses stay f32. fp16 adds dynamic loss scaling with
 * GradScaler's defaults (robotrain/loss-scale.h). ROBOTRAIN_AMP_INIT_SCALE overrides the
 * initial scale (65536), for tests and debugging. */
#ifndef ROBOTRAIN_TRAIN_AMP_H
#define ROBOTRAIN_TRAIN_AMP_H

#include <glib.h>

#include <robotrain/graph.h>
#include <robotrain/loss-scale.h>
#include <robotrain/option.h>

#include "train/checkpoint.h"
#include "train/metrics.h"

G_BEGIN_DECLS

#define RT_AMP_ENV "ROBOTRAIN_MIXED_PRECISION"
#define RT_AMP_INIT_SCALE_ENV "ROBOTRAIN_AMP_INIT_SCALE"

typedef enum {
    RT_PRECISION_NO,
    RT_PRECISION_FP16,
    RT_PRECISION_BF16,
} rt_precision;

/* "no", "fp16", "bf16". */
const char *rt_precision_name(rt_precision p);
/* Parses those names; FALSE for anything else. */
gboolean rt_precision_from_name(const char *name, rt_precision *p);

/* The environment the decision reads (the variables' values, NULL when unset). */
typedef struct rt_amp_env {
    const char *mixed_precision; /* ROBOTRAIN_MIXED_PRECISION */
    const char *init_scale;      /* ROBOTRAIN_AMP_INIT_SCALE */
} rt_amp_env;

/* The process's environment. */
void rt_amp_env_from_process(rt_amp_env *env);

/* The checks that need no device, for validation (exit status 2): the variables' values, and
 * an explicit --policy.use_amp against ROBOTRAIN_MIXED_PRECISION. */
gboolean rt_train_amp_check(const rt_config *cfg, const rt_amp_env *env, GError **error);

typedef struct rt_train_amp {
    rt_precision mode;
    gboolean scaling;            /* fp16: dynamic loss scaling */
    rt_loss_scale_config scaler; /* its constructor arguments */
    gboolean restore;            /* continue from restored_state after planning */
    rt_loss_scale_state restored_state;
    rt_loss_scale_state state;  /* after the last step */
    int64_t skipped_at_log;     /* state.skipped at the last log line */
    char *mixed_precision_name; /* for checkpoints */
} rt_train_amp;

/* Whether backend runs dynamic loss scaling: the amp_unscale and amp_update ops, and step_inc
 * and adamw with the scaler's state (asked through supports_op with sample nodes). */
gboolean rt_train_amp_backend_scales(const rt_backend_i *backend, rt_backend_device *dev);

/* Decides the precision (see above) for a run on CUDA or the CPU (on_cuda), whose backend can
 * or cannot scale losses (rt_train_amp_backend_scales), with saved the checkpoint's precision
 * when resuming (NULL otherwise). Appends what was decided, and why, to notes (log lines,
 * g_free); sets policy.use_amp in cfg to whether mixed precision runs, so that
 * train_config.json records it. Fails on what rt_train_amp_check refuses, and for fp16 when
 * the backend cannot scale losses (CUDA's, for now). Clear amp with rt_train_amp_clear. */
gboolean rt_train_amp_resolve(rt_train_amp *amp, rt_config *cfg, const rt_amp_env *env, gboolean on_cuda,
                              gboolean backend_scales, const rt_ckpt_precision *saved, GPtrArray *notes,
                              GError **error);
void rt_train_amp_clear(rt_train_amp *amp);

/* On a new training graph, before the policy builds it: the compute dtype. */
void rt_train_amp_begin_graph(const rt_train_amp *amp, rt_graph *g);
/* After the policy set the loss, before rt_graph_backward: loss scaling (fp16). */
gboolean rt_train_amp_before_backward(const rt_train_amp *amp, rt_graph *g, GError **error);
/* After planning: the restored scaler state (resume). */
gboolean rt_train_amp_after_plan(rt_train_amp *amp, rt_graph *g, GError **error);
/* After each step: reads the scaler (fp16). */
gboolean rt_train_amp_after_step(rt_train_amp *amp, rt_graph *g, GError **error);
/* Before a log line is printed: meters loss_scale ("lscale") and skipped_steps ("skip", the
 * steps skipped since the previous line). */
void rt_train_amp_log(rt_train_amp *amp, rt_metrics *m);
/* For a checkpoint: the precision record, and the optimizer's step count (which skipped steps
 * did not advance). Returns NULL for a float32 run. (transfer none: valid while amp is) */
const rt_ckpt_precision *rt_train_amp_checkpoint(const rt_train_amp *amp, rt_ckpt_precision *storage);

G_END_DECLS

#endif
