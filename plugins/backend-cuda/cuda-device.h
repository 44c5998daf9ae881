/* plugins/backend-cuda/cuda-device.h: one opened GPU (struct rt_backend_device), shared by the
 * device code (cuda-backend.c) and the graph executor (cuda-exec.c). */
#ifndef RT_CUDA_DEVICE_H
#define RT_CUDA_DEVICE_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <glib.h>
#ifdef HAVE_CUDNN
#include <cudnn.h>
#endif

#include <robotrain/backend.h>

struct rt_backend_device {
    int index;
    cudaStream_t stream; /* non-blocking: every copy, kernel and step runs on it */
    cublasLtHandle_t blaslt;
    cublasHandle_t blas;
#ifdef HAVE_CUDNN
    cudnnHandle_t dnn;
#endif
    gboolean use_graphs;      /* capture each planned graph's step once and replay it */
    gboolean sync_each_node;  /* debugging: wait for and check every node (eager) */
    GHashTable *graphs;       /* rt_graph * -> the executor's state for it (cuda-exec.c) */
    GHashTable *conv_choices; /* convolution shape -> cuDNN algorithm (cuda-ops-conv.c) */
};

/* Makes dev's GPU current on the calling thread (the runtime keeps it per thread). */
gboolean rt_cuda_make_current(const rt_backend_device *dev, GError **error);

#endif
