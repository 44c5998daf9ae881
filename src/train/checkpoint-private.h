/* src/train/checkpoint-private.h: what the checkpoint writer and reader share (not exported:
 * the library exports ^rt_ only). */
#ifndef ROBOTRAIN_TRAIN_CHECKPOINT_PRIVATE_H
#define ROBOTRAIN_TRAIN_CHECKPOINT_PRIVATE_H

#include <robotrain/graph.h>
#include <robotrain/safetensors.h>

#include "train/checkpoint.h"

/* The safetensors dtype of a tensor dtype; FALSE when there is none. */
gboolean ckpt_st_dtype(rt_dtype dtype, rt_st_dtype *out);

/* A copy of a parameter's tensor that addresses the same offset of another parameter-shaped
 * storage (RT_STORAGE_GRAD, RT_STORAGE_ADAM_M, RT_STORAGE_ADAM_V): robotrain/tensor.h documents
 * that the four share one layout, so rt_graph_read/rt_graph_write reach the moments this way. */
rt_tensor ckpt_param_view(const rt_tensor *param, rt_storage storage);

/* Removes a file, or a folder and everything in it (symlinks are removed, not followed). */
gboolean ckpt_remove_tree(const char *path, GError **error);

#endif
