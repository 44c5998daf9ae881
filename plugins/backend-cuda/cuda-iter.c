/* plugins/backend-cuda/cuda-iter.c: strided walks (rt_cuda_iter), built on the host: axes of
 * size 1 are dropped and neighbours that are contiguous in every operand merged, as the CPU's
 * ew_setup does, so that most element-wise kernels walk one flat range. tests/test-cuda-host.cu
 * checks the merged walk against the plain one. */
#include "config.h"

#include <string.h>

#include <glib.h>

#include "cuda-kernels.h"

void rt_cuda_iter_init(rt_cuda_iter *it, int ndim, const int64_t *shape, int n_ops,
                       const int64_t *const *strides)
{
    int nd = 0;
    int64_t sh[RT_CUDA_MAX_DIMS], st[3][RT_CUDA_MAX_DIMS];
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 1)
            continue;
        gboolean merge = nd > 0;
        for (int k = 0; merge && k < n_ops; k++)
            merge = st[k][nd - 1] == strides[k][i] * shape[i];
        if (merge) {
            sh[nd - 1] *= shape[i];
            for (int k = 0; k < n_ops; k++)
                st[k][nd - 1] = strides[k][i];
            continue;
        }
        sh[nd] = shape[i];
        for (int k = 0; k < n_ops; k++)
            st[k][nd] = strides[k][i];
        nd++;
    }
    if (nd == 0) {
        sh[0] = 1;
        for (int k = 0; k < 3; k++)
            st[k][0] = 1;
        nd = 1;
    }
    memset(it, 0, sizeof *it);
    it->nd = nd;
    it->n = 1;
    for (int i = 0; i < nd; i++) {
        it->shape[i] = sh[i];
        it->n *= sh[i];
        for (int k = 0; k < 3; k++)
            it->st[k][i] = k < n_ops ? st[k][i] : 0;
    }
}
