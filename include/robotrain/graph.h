/* robotrain/graph.h: define-then-run compute graphs.
 *
 * A policy builds a graph once per phase (training or inference) and batch shape:
 *
 *     rt_graph *g = rt_graph_new(RT_GRAPH_TRAIN);
 *     rt_tensor *x = rt_input(g, "observation.state", RT_F32, 2, (int64_t[]){B, 14}, 0);
 *     rt_tensor *w = rt_param(g, "model.head.weight", RT_F32, 2, (int64_t[]){14, 14},
 *                             rt_init_uniform(-0.27, 0.27));
 *     rt_set_loss(g, rt_mean(g, rt_mul(g, y, y), RT_ALL_AXES, FALSE));   (ops in robotrain/ops.h)
 *
 * Op constructors only record nodes. When one fails (bad shapes, dtypes) it returns NULL and
 * keeps the first error in the graph; later constructors given NULL return NULL too, and
 * rt_graph_backward()/rt_graph_plan() report that error (rt_graph_check() reads it earlier).
 * The trainer then appends the backward pass (rt_graph_backward), the optimizer
 * (rt_graph_add_adamw), plans memory once for a backend (rt_graph_plan) and runs the same
 * planned graph every step (rt_graph_compute), which allocates nothing.
 *
 * Parameters, their gradients and the AdamW moments each live in one contiguous blob with
 * tensors as views (same offsets in all four), so all-reduce, clipping and checkpoints work on
 * whole blobs. Not thread-safe: one thread builds and runs a graph. */
#ifndef ROBOTRAIN_GRAPH_H
#define ROBOTRAIN_GRAPH_H

#include <stdint.h>

#include <glib.h>

#include <robotrain/backend.h>
#include <robotrain/tensor.h>

G_BEGIN_DECLS

typedef struct rt_graph rt_graph;

#define RT_MAX_SRC 8
#define RT_MAX_OUT 3
#define RT_MAX_IPARAMS 12
#define RT_MAX_FPARAMS 4

/* One recorded operation. A backend runs the nodes of rt_graph_exec_node() in order; every
 * input and output is an rt_tensor whose storage and offset the planner has fixed. Small
 * parameters are inline (their meaning per op is listed in robotrain/ops.h). Ops flagged as
 * views (rt_op_is_view) compute nothing: their output aliases their input. */
typedef struct rt_node {
    int32_t op;                     /* rt_op (robotrain/ops.h) */
    int32_t id;                     /* creation index, stable for the graph's life */
    int32_t n_src;
    int32_t n_out;
    rt_tensor *src[RT_MAX_SRC];     /* an optional input that is absent is NULL */
    rt_tensor *out[RT_MAX_OUT];     /* an optional output that is absent is NULL */
    int64_t ip[RT_MAX_IPARAMS];
    double fp[RT_MAX_FPARAMS];
    size_t workspace_offset;        /* scratch bytes in the arena, live during this node only */
    size_t workspace_size;
} rt_node;

/* rt_graph_new flags */
enum {
    RT_GRAPH_TRAIN = 1u << 0, /* training phase: dropout is active */
    RT_GRAPH_TF32 = 1u << 1,  /* f32 matmul, linear, conv2d and attention may round their inputs
                                 to TF32 (10-bit mantissa) on backends with TF32 units (CUDA);
                                 the CPU computes them in full f32 either way */
};

/* Returns (transfer full) an empty graph: free with rt_graph_free(). */
rt_graph *rt_graph_new(uint32_t flags);
void rt_graph_free(rt_graph *g);
/* Returns (transfer full) an empty graph whose parameters and buffers are source's: rt_param
 * and rt_buffer find them by name (same dtype and shape) instead of creating new ones, so an
 * inference graph reads the weights the training graph updates, without copies. source must
 * be planned before this graph, on the same device, and outlive it; the sharing graph cannot
 * be trained (no rt_graph_backward). */
rt_graph *rt_graph_new_sharing(rt_graph *source, uint32_t flags);
gboolean rt_graph_is_training(const rt_graph *g);
/* The flags given to rt_graph_new (RT_GRAPH_*). */
uint32_t rt_graph_flags(const rt_graph *g);

/* Mixed precision: matmul, linear, conv2d and attention nodes created afterwards round their
 * inputs to dtype (RT_F32, RT_BF16 or RT_F16) and accumulate in f32. Parameters stay f32. */
void rt_graph_set_compute_dtype(rt_graph *g, rt_dtype dtype);
rt_dtype rt_graph_compute_dtype(const rt_graph *g);

/* The first op-construction error, or NULL. (transfer none) */
const GError *rt_graph_error(const rt_graph *g);
/* FALSE with a copy of that error when there is one. */
gboolean rt_graph_check(const rt_graph *g, GError **error);

/* How a parameter or buffer is filled when the graph is allocated. Random fills are a pure
 * function of (seed given to rt_graph_set_init_seed, tensor name). */
typedef enum {
    RT_INIT_CONSTANT, /* every element = a */
    RT_INIT_UNIFORM,  /* U(a, b) */
    RT_INIT_NORMAL,   /* N(mean a, std b) */
    RT_INIT_DATA,     /* the values at data (computed tables such as positional encodings) */
} rt_init_kind;

typedef struct rt_init {
    rt_init_kind kind;
    double a, b;
    /* RT_INIT_DATA: numel x dtype-size bytes in the tensor's dtype, row-major; rt_param and
     * rt_buffer copy them, so the caller's memory may go once they return. */
    const void *data;
} rt_init;

static inline rt_init rt_init_constant(double value) { return (rt_init){RT_INIT_CONSTANT, value, 0, NULL}; }
static inline rt_init rt_init_uniform(double lo, double hi) { return (rt_init){RT_INIT_UNIFORM, lo, hi, NULL}; }
static inline rt_init rt_init_normal(double mean, double std) { return (rt_init){RT_INIT_NORMAL, mean, std, NULL}; }
static inline rt_init rt_init_data(const void *data) { return (rt_init){RT_INIT_DATA, 0, 0, data}; }

/* A trainable parameter named with its state-dict key. All trainable parameters of a graph
 * share one dtype (f32 masters, or f64 in tests). */
rt_tensor *rt_param(rt_graph *g, const char *name, rt_dtype dtype, int ndim, const int64_t *shape,
                    rt_init init);
/* A persistent tensor that is not trained (batch-norm statistics, fixed tables): saved in
 * checkpoints, no gradient. */
rt_tensor *rt_buffer(rt_graph *g, const char *name, rt_dtype dtype, int ndim,
                     const int64_t *shape, rt_init init);
/* A tensor filled from the host before each step (rt_graph_write). batch_axis is the axis that
 * indexes samples (-1: none); random ops use it so that a batch split across processes draws
 * the numbers the whole batch would draw (see rt_graph_set_rng). */
rt_tensor *rt_input(rt_graph *g, const char *name, rt_dtype dtype, int ndim,
                    const int64_t *shape, int batch_axis);
/* A constant; data (numel * dtype size bytes) is copied. */
rt_tensor *rt_const(rt_graph *g, rt_dtype dtype, int ndim, const int64_t *shape,
                    const void *data);

/* Sets the scalar loss that rt_graph_backward differentiates; calling it again adds. */
void rt_set_loss(rt_graph *g, rt_tensor *loss);
rt_tensor *rt_graph_loss(const rt_graph *g);
/* Names a tensor the host reads after a step (sub-losses such as "l1_loss", predictions);
 * the planner keeps it alive. */
void rt_graph_output(rt_graph *g, const char *name, rt_tensor *t);
/* A parameter, buffer, input or output by name; NULL when there is none. (transfer none) */
rt_tensor *rt_graph_find(const rt_graph *g, const char *name);

/* Trainable parameters in creation order; buffers likewise. (transfer none) */
int rt_graph_n_params(const rt_graph *g);
rt_tensor *rt_graph_param(const rt_graph *g, int i);
int rt_graph_n_buffers(const rt_graph *g);
rt_tensor *rt_graph_buffer(const rt_graph *g, int i);
/* Puts a parameter (or every parameter whose name starts with prefix; returns how many) in
 * optimizer group `group` (default 0). Only before rt_graph_add_adamw. */
void rt_param_set_group(rt_graph *g, rt_tensor *param, int group);
int rt_graph_set_group_by_prefix(rt_graph *g, const char *prefix, int group);
/* The optimizer group of a parameter (0 until set). */
int rt_param_group(const rt_tensor *param);
/* Seed of the parameter initialisers (default 0). */
void rt_graph_set_init_seed(rt_graph *g, uint64_t seed);

/* Reverse-mode autodiff: appends the nodes that compute the gradient of the loss with respect
 * to every trainable parameter it depends on, writing each into the gradient blob. Parameters
 * the loss does not depend on get no gradient (PyTorch's None) and are skipped by AdamW.
 * Integer, boolean and other non-differentiable inputs get none. Call once. */
gboolean rt_graph_backward(rt_graph *g, GError **error);
/* The gradient of param after rt_graph_backward, or NULL when it has none. (transfer none) */
rt_tensor *rt_graph_grad(const rt_graph *g, const rt_tensor *param);

/* One optimizer parameter group (torch.optim.AdamW's). */
typedef struct rt_adamw_group {
    double lr, beta1, beta2, eps, weight_decay;
} rt_adamw_group;

/* Appends, after the backward pass: the step count increment, the total gradient L2 norm
 * (kept as output "grad_norm": the pre-clip norm), clipping by max_grad_norm as PyTorch's
 * clip_grad_norm_ does (coefficient max/(norm + 1e-6), applied when < 1; max <= 0 or
 * infinite: no clipping) and one AdamW update per group, exactly as torch.optim.AdamW.
 * Hyper-parameters live in a small state tensor: change them with rt_graph_set_lr. */
gboolean rt_graph_add_adamw(rt_graph *g, const rt_adamw_group *groups, int n_groups,
                            double max_grad_norm, GError **error);
/* After rt_graph_plan: sets group's learning rate / the clipping threshold / the step count
 * (the number of optimizer steps done, as torch's state["step"]; for resume). */
gboolean rt_graph_set_lr(rt_graph *g, int group, double lr, GError **error);
gboolean rt_graph_set_max_grad_norm(rt_graph *g, double max_norm, GError **error);
gboolean rt_graph_set_step(rt_graph *g, double step, GError **error);
/* The step count now: the optimizer steps done (less than the training steps when loss
 * scaling skipped some, robotrain/loss-scale.h). */
gboolean rt_graph_get_step(rt_graph *g, double *step, GError **error);

/* Data-parallel gradient averaging, as nodes of the graph (RT_OP_ALLREDUCE), so that a backend
 * runs them in order with the rest of the step (on a GPU, on its stream).
 *
 * rt_graph_add_grad_sync cuts the gradient blob into buckets of about bucket_bytes (whole
 * parameters; a parameter larger than a bucket is a bucket of its own), walking the parameters
 * in reverse order, as the backward pass produces their gradients (PyTorch DDP's order), and
 * appends one allreduce node per bucket. Call it after rt_graph_backward and before
 * rt_graph_add_adamw, so that clipping and AdamW see the averaged gradients. The nodes run after
 * the whole backward pass for now (no overlap on the CPU, where communication blocks anyway).
 * Returns the number of buckets (>= 1), or -1 with error. */
int rt_graph_add_grad_sync(rt_graph *g, size_t bucket_bytes, GError **error);
/* Buckets added by rt_graph_add_grad_sync (0 without). */
int rt_graph_n_grad_buckets(const rt_graph *g);

/* The collective an allreduce node calls: average the count elements of dtype at data (a
 * device address of the graph's backend: host memory on the CPU) over every process, in place.
 * stream is the backend's stream the node runs on (a cudaStream_t), NULL on the CPU. Returns
 * FALSE with error set on failure, which fails the step with that error. */
typedef gboolean (*rt_graph_collective_fn)(void *user_data, void *data, size_t count, rt_dtype dtype,
                                           void *stream, GError **error);
/* Sets the collective (NULL: allreduce nodes do nothing, as in a world of one process).
 * user_data must outlive the graph's steps. */
void rt_graph_set_collective(rt_graph *g, rt_graph_collective_fn fn, void *user_data);
/* For backends: runs an allreduce node's collective on the tensor at data. */
gboolean rt_graph_run_collective(rt_graph *g, const rt_node *node, void *data, void *stream,
                                 GError **error);

/* Counter-based randomness (Philox 4x32-10): the value drawn for an element depends only on
 * (seed, step, the random node's id, the element's index), so runs are reproducible and
 * resumable. For tensors with a batch axis the element index counts from sample_offset, the
 * global index of this process's first sample. Call before each step (after rt_graph_plan). */
gboolean rt_graph_set_rng(rt_graph *g, uint64_t seed, uint64_t step, int64_t sample_offset,
                          GError **error);

/* Plans memory for backend and allocates every storage on dev (which must outlive the graph),
 * then fills parameters, buffers and constants. Fails naming the node a backend cannot run.
 * Call once, after the backward pass and optimizer. */
gboolean rt_graph_plan(rt_graph *g, const rt_backend_i *backend, rt_backend_device *dev,
                       GError **error);
/* Runs one step: every planned node in order. */
gboolean rt_graph_compute(rt_graph *g, GError **error);

/* Host copies of a planned tensor (contiguous; nbytes must equal its size). Inputs are written
 * before a step; parameters, buffers, outputs, gradients and the loss are read after one. */
gboolean rt_graph_write(rt_graph *g, const rt_tensor *t, const void *data, size_t nbytes,
                        GError **error);
gboolean rt_graph_read(rt_graph *g, const rt_tensor *t, void *data, size_t nbytes,
                       GError **error);
/* Reads a one-element float tensor (the loss, a sub-loss, "grad_norm") as a double. */
gboolean rt_graph_read_scalar(rt_graph *g, const rt_tensor *t, double *value, GError **error);

/* For backends: the planned nodes in execution order, and the storages. */
int rt_graph_n_exec_nodes(const rt_graph *g);
const rt_node *rt_graph_exec_node(const rt_graph *g, int i);
size_t rt_graph_storage_size(const rt_graph *g, rt_storage storage);
/* The buffer holding storage (size 0 when the graph uses none). (transfer none) */
const rt_backend_buffer *rt_graph_storage_buffer(const rt_graph *g, rt_storage storage);
/* Device address of a planned tensor's element 0. */
void *rt_graph_tensor_address(const rt_graph *g, const rt_tensor *t);
int rt_graph_n_tensors(const rt_graph *g);
rt_tensor *rt_graph_tensor(const rt_graph *g, int i);

/* The CPU backend, built into librobotrain. (transfer none) */
const rt_backend_i *rt_backend_cpu(void);

G_END_DECLS

#endif
