/* robotrain/tensor.h: tensors of the compute graph.
 *
 * A tensor is a node's result, a parameter, a batch input or a constant of a graph
 * (robotrain/graph.h). It has a runtime dtype, up to RT_MAX_DIMS dimensions and strides in
 * elements, and lives at a byte offset in one of the graph's storages, which the memory
 * planner fixes (rt_graph_plan). A policy holds rt_tensor pointers only to pass them to op
 * constructors (robotrain/ops.h); backends read the fields below to run a planned graph and
 * never change them. Tensors belong to their graph: rt_graph_free() releases them. */
#ifndef ROBOTRAIN_TENSOR_H
#define ROBOTRAIN_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

G_BEGIN_DECLS

#define RT_MAX_DIMS 5

typedef enum {
    RT_F32,
    RT_F64, /* tests and gradient checks */
    RT_BF16,
    RT_F16,
    RT_I64,
    RT_I32, /* internal: arg-max indices of max-pooling */
    RT_U8,
    RT_BOOL, /* one byte, 0 or 1 */
    RT_DTYPE_COUNT
} rt_dtype;

/* Where a tensor's bytes live. PARAM, GRAD, ADAM_M and ADAM_V share one layout: a trainable
 * parameter, its gradient and its AdamW moments sit at the same offset of four blobs. */
typedef enum {
    RT_STORAGE_NONE,   /* not planned yet, or a view (see view_of) */
    RT_STORAGE_ARENA,  /* activations: reused between tensors by the memory planner */
    RT_STORAGE_PARAM,  /* trainable parameters */
    RT_STORAGE_GRAD,   /* their gradients */
    RT_STORAGE_ADAM_M, /* AdamW first moments */
    RT_STORAGE_ADAM_V, /* AdamW second moments */
    RT_STORAGE_BUFFER, /* persistent, not trained (frozen batch-norm statistics, fixed tables) */
    RT_STORAGE_INPUT,  /* filled from the host before each step (batch, RNG counters) */
    RT_STORAGE_STATE,  /* small persistent state: hyper-parameters, step count, grad norm */
    RT_STORAGE_CONST,  /* written once when the graph is allocated */
    RT_STORAGE_COUNT
} rt_storage;

/* rt_tensor.flags */
enum {
    RT_TENSOR_PARAM = 1u << 0,    /* rt_param: trainable */
    RT_TENSOR_BUFFER = 1u << 1,   /* rt_buffer: persistent, not trained */
    RT_TENSOR_INPUT = 1u << 2,    /* rt_input */
    RT_TENSOR_CONST = 1u << 3,    /* rt_const */
    RT_TENSOR_OUTPUT = 1u << 4,   /* read by the host after a step: kept alive by the planner */
    RT_TENSOR_LOSS = 1u << 5,     /* the graph's loss */
    RT_TENSOR_GRAD = 1u << 6,     /* the gradient of a parameter (lives in RT_STORAGE_GRAD) */
    RT_TENSOR_NEEDS_GRAD = 1u << 7, /* depends on a trainable parameter (set by rt_graph_backward) */
};

struct rt_node;

typedef struct rt_tensor {
    rt_dtype dtype;
    int32_t ndim;                 /* 0 (a scalar) to RT_MAX_DIMS */
    int64_t shape[RT_MAX_DIMS];
    int64_t stride[RT_MAX_DIMS];  /* in elements; 0 for a broadcast dimension */
    uint32_t flags;               /* RT_TENSOR_* */
    int32_t id;                   /* index among the graph's tensors */
    int32_t batch_axis;           /* the axis that indexes samples, or -1 (see rt_input) */
    rt_storage storage;           /* after planning: where the bytes are */
    size_t offset;                /* after planning: byte offset of element 0 in that storage */
    struct rt_node *node;         /* the node that computes it, NULL for leaves */
    int32_t out_index;            /* which output of node */
    struct rt_tensor *view_of;    /* a view shares the memory of this tensor (NULL otherwise) */
    size_t view_offset;           /* byte offset of element 0 from view_of's element 0 */
    const char *name;             /* parameters, inputs, outputs; may be NULL */
} rt_tensor;

/* Bytes per element of dtype. */
size_t rt_dtype_size(rt_dtype dtype);
/* "f32", "f64", "bf16", "f16", "i64", "i32", "u8", "bool"; NULL for a bad value. */
const char *rt_dtype_name(rt_dtype dtype);
/* Parses the names above; FALSE when name is not one of them. */
gboolean rt_dtype_from_name(const char *name, rt_dtype *dtype);
/* f32, f64, bf16 and f16. */
gboolean rt_dtype_is_float(rt_dtype dtype);

/* Number of elements (1 for a scalar). */
int64_t rt_tensor_numel(const rt_tensor *t);
/* TRUE when the elements are dense in row-major order. */
gboolean rt_tensor_is_contiguous(const rt_tensor *t);
/* Bytes of a contiguous tensor: numel * dtype size. */
size_t rt_tensor_nbytes(const rt_tensor *t);
/* Writes "f32[2,3,4]" into buf (always terminated); returns buf. */
char *rt_tensor_describe(const rt_tensor *t, char *buf, size_t size);

G_END_DECLS

#endif
