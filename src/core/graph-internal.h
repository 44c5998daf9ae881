/* src/core/graph-internal.h: what the graph, op table, autodiff, planner and CPU executor
 * share inside librobotrain. */
#ifndef ROBOTRAIN_GRAPH_INTERNAL_H
#define ROBOTRAIN_GRAPH_INTERNAL_H

#include <stdbool.h>

#include <robotrain/error.h>
#include <robotrain/graph.h>
#include <robotrain/loss-scale.h>
#include <robotrain/ops.h>
#include <robotrain/tensor.h>

/* Alignment of every tensor in every storage: enough for AVX-512 and CUDA's 256-byte rule. */
#define RT_ALIGN 256

/* A tensor as the core stores it; the public part comes first. */
typedef struct rt_tensor_impl {
    rt_tensor pub;
    rt_init init;           /* parameters and buffers (RT_INIT_DATA: init.data is init_data) */
    void *init_data;        /* RT_INIT_DATA: host copy of the values, freed with the graph */
    int group;              /* optimizer group of a parameter */
    void *const_data;       /* rt_const: host copy, freed with the graph */
    rt_tensor *grad;        /* a parameter's gradient (after rt_graph_backward) */
    rt_tensor *grad_of;     /* a gradient tensor: its parameter */
    bool fixed;             /* storage/offset set by the layout, not by the arena planner */
    rt_tensor *shared;      /* in a graph sharing another's weights: the source's tensor */
} rt_tensor_impl;

#define RT_IMPL(t) ((rt_tensor_impl *)(t))

struct rt_graph {
    uint32_t flags;
    rt_graph *share_src;    /* parameters and buffers are this graph's (rt_graph_new_sharing) */
    rt_dtype compute_dtype;
    GError *error;          /* first construction error */
    GPtrArray *tensors;     /* rt_tensor_impl *, owned, index = id */
    GPtrArray *nodes;       /* rt_node *, owned, creation order (a topological order) */
    GPtrArray *params;      /* trainable parameters (transfer none) */
    GPtrArray *buffers;
    GPtrArray *inputs;
    GPtrArray *outputs;     /* named outputs */
    GHashTable *by_name;    /* name -> rt_tensor * */
    GStringChunk *names;    /* storage of every name */
    rt_tensor *loss;
    rt_tensor *rng;         /* i64[4]: seed, step, sample offset, 0 (created on demand) */
    int32_t next_rng_id;
    uint64_t init_seed;
    int n_forward_nodes;    /* nodes before rt_graph_backward */
    bool backward_done;
    bool layout_done;
    bool optimizer_done;
    bool planned;
    bool prepared;          /* the backend's graph_prepare succeeded: call graph_release */
    /* optimizer */
    int n_groups;
    rt_adamw_group *groups; /* initial values written at allocation */
    double max_grad_norm;
    rt_tensor *hyper;       /* f64 [n_groups * RT_HYPER_PER_GROUP + 1] (STATE) */
    rt_tensor *step;        /* f64 [1] (STATE) */
    rt_tensor *grad_norm;   /* f32 scalar (STATE) */
    /* dynamic loss scaling (loss-scale.c), NULL/unused without */
    rt_tensor *amp_state;   /* f64 [RT_AMP_STATE_LEN] (STATE) */
    rt_loss_scale_config amp_config;
    /* gradient averaging (grad-sync.c) */
    int n_grad_buckets;     /* allreduce nodes added by rt_graph_add_grad_sync */
    rt_graph_collective_fn collective;
    void *collective_data;
    GError *collective_error; /* the hook's error during the last step, or NULL */
    /* layout and plan */
    size_t storage_size[RT_STORAGE_COUNT];
    GPtrArray *exec;        /* rt_node *, execution order */
    const rt_backend_i *backend;
    rt_backend_device *dev;
    rt_backend_buffer buf[RT_STORAGE_COUNT];
};

/* hyper layout per group, then the global max_grad_norm at index n_groups * 5 */
enum { RT_HYPER_LR, RT_HYPER_BETA1, RT_HYPER_BETA2, RT_HYPER_EPS, RT_HYPER_WD, RT_HYPER_PER_GROUP };

/* ---- op table */
typedef struct rt_autodiff rt_autodiff;
typedef struct rt_cpu_ctx rt_cpu_ctx;

/* Checks a node's inputs and parameters and creates its outputs (rt_node_output); on failure
 * records the error (rt_graph_fail) and returns false. */
typedef bool (*rt_infer_fn)(rt_graph *g, rt_node *node);
/* Builds the gradient of node's inputs from dout[k], the gradient of out[k] (NULL when none),
 * calling rt_ad_add for each input that rt_ad_needs. */
typedef void (*rt_backward_fn)(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout);
/* Runs a node on the CPU; returns false with ctx->message set when the data is bad. */
typedef bool (*rt_cpu_kernel_fn)(rt_cpu_ctx *ctx, const rt_node *node);
/* Scratch bytes the CPU kernel of node needs. */
typedef size_t (*rt_workspace_fn)(const rt_node *node);

enum {
    RT_OPF_VIEW = 1u << 0,        /* output aliases input 0 */
    RT_OPF_STRIDED = 1u << 1,     /* the kernel reads strided inputs (others get contiguous ones) */
    RT_OPF_SIDE_EFFECT = 1u << 2, /* writes into its inputs: never pruned */
    RT_OPF_RANDOM = 1u << 3,      /* reads the graph's RNG state */
};

typedef struct rt_op_row {
    rt_op op;
    const char *name;
    int8_t min_src, max_src;
    uint32_t flags;
    uint32_t diff_src;            /* bit i: gradients flow to input i */
    rt_infer_fn infer;
    rt_backward_fn backward;      /* NULL for non-differentiable ops */
    rt_cpu_kernel_fn cpu;
    rt_workspace_fn cpu_workspace; /* NULL: none */
} rt_op_row;

extern const rt_op_row rt_op_table[RT_OP_COUNT];

/* ---- graph helpers (graph.c) */
void rt_graph_fail(rt_graph *g, const rt_node *node, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
/* Records a node of op with inputs src (NULL entries allowed for optional ones), runs its shape
 * inference and returns it; NULL when g already failed or inference fails. */
/* The collective's error of the last step (grad-sync.c), or NULL; transfer full. */
GError *rt_graph_take_collective_error(rt_graph *g);

rt_node *rt_node_make(rt_graph *g, rt_op op, rt_tensor *const *src, int n_src, const int64_t *ip,
                      int n_ip, const double *fp, int n_fp);
/* rt_node_make and return out[0]. */
rt_tensor *rt_node_make1(rt_graph *g, rt_op op, rt_tensor *const *src, int n_src,
                         const int64_t *ip, int n_ip, const double *fp, int n_fp);
/* A new contiguous output k of node. */
rt_tensor *rt_node_output(rt_graph *g, rt_node *node, int k, rt_dtype dtype, int ndim,
                          const int64_t *shape);
/* A new output k of node that views base's memory with the given shape, strides (elements)
 * and element offset from base's element 0. */
rt_tensor *rt_node_view(rt_graph *g, rt_node *node, rt_tensor *base, int ndim,
                        const int64_t *shape, const int64_t *stride, int64_t elem_offset);
/* A tensor with no producer (parameter, input, ...). */
rt_tensor *rt_tensor_new_leaf(rt_graph *g, const char *name, rt_dtype dtype, int ndim,
                              const int64_t *shape, uint32_t flags);
/* Whether storage s of g is its source's (a sharing graph's parameters and buffers). */
bool rt_graph_borrows(const rt_graph *g, rt_storage s);
/* The graph's RNG-state input, created on first use. */
rt_tensor *rt_graph_rng_tensor(rt_graph *g);
/* Whether the graph is in a failed state. */
static inline bool rt_graph_failed(const rt_graph *g) { return g->error != NULL; }
/* Lays out parameters (sorted by group, those with a gradient first), buffers, inputs, state
 * and constants. Idempotent. */
bool rt_graph_layout(rt_graph *g, GError **error);

/* ---- tensor helpers (tensor.c) */
void rt_shape_strides(int ndim, const int64_t *shape, int64_t *stride);
int64_t rt_shape_numel(int ndim, const int64_t *shape);
bool rt_shape_equal(const rt_tensor *a, const rt_tensor *b);
/* Normalises a possibly negative axis; -1 when out of range. */
int rt_axis(int axis, int ndim);
/* NumPy broadcast of two shapes; false when they do not broadcast. */
bool rt_broadcast_shape(const rt_tensor *a, const rt_tensor *b, int *ndim, int64_t *shape);
/* Strides (elements) that read t as if it had out_shape (stride 0 on broadcast axes). */
void rt_broadcast_strides(const rt_tensor *t, int out_ndim, const int64_t *out_shape,
                          int64_t *stride);
/* Writes "[2,3]" into buf. */
char *rt_shape_describe(int ndim, const int64_t *shape, char *buf, size_t size);

/* ---- autodiff (autodiff.c), for backward builders */
bool rt_ad_needs(const rt_autodiff *ad, const rt_tensor *x);
/* Adds grad to the gradient of x (grad has x's shape and dtype). */
void rt_ad_add(rt_autodiff *ad, rt_tensor *x, rt_tensor *grad);
/* Adds grad as the gradient of the slice [start, start + len) of x along axis. */
void rt_ad_add_slice(rt_autodiff *ad, rt_tensor *x, int axis, int64_t start, rt_tensor *grad);
/* Sums grad over the axes along which x was broadcast to grad's shape. */
rt_tensor *rt_ad_unbroadcast(rt_graph *g, rt_tensor *grad, const rt_tensor *x);

/* ---- planning (planner.c) */
/* Execution order, arena offsets and workspaces. workspace(dev, node) may be NULL. */
bool rt_graph_plan_memory(rt_graph *g, size_t (*workspace)(rt_backend_device *, const rt_node *),
                          rt_backend_device *dev, GError **error);

/* ---- optimizer (optim.c): writes the hyper-parameters once the storages exist */
gboolean rt_optim_write_initial_state(rt_graph *g, GError **error);

/* ---- randomness (philox.c) */
void rt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

#endif
