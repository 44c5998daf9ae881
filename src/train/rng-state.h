/* training_state/rng_state.safetensors: the generator states LeRobot saves with a checkpoint
 * (utils/random_utils.py save_rng_state: CPython's random, NumPy's legacy global generator and
 * PyTorch's CPU and CUDA generators) and restores when it resumes. robotrain draws its random
 * numbers from Philox keyed by (seed, step, node, element) and needs none of this, but LeRobot
 * must be able to resume a robotrain checkpoint, so the file is written with valid states: those
 * the four generators have right after LeRobot's set_seed(S), S = (seed + step) mod 2^32, so
 * that a run LeRobot resumes does not replay the random numbers its start drew. */
#ifndef ROBOTRAIN_TRAIN_RNG_STATE_H
#define ROBOTRAIN_TRAIN_RNG_STATE_H

#include <stdint.h>

#include <glib.h>

#include <robotrain/safetensors.h>

G_BEGIN_DECLS

#define RT_RNG_STATE_FILE "rng_state.safetensors"

enum {
    RT_MT19937_N = 624,
    /* sizeof(THGeneratorStateNew) in PyTorch's CPUGeneratorImpl.cpp: the legacy POD (seed,
     * left, seeded, next, state[624] as uint64, the double normal cache) + the float cache */
    RT_TORCH_CPU_RNG_STATE_BYTES = 5056,
    RT_TORCH_CUDA_RNG_STATE_BYTES = 16, /* Philox seed and offset, two uint64 */
};

typedef struct rt_lerobot_rng_state {
    int64_t py_version;                   /* random.getstate()[0]: 3 */
    int64_t py_state[RT_MT19937_N + 1];   /* random.getstate()[1]: the words, then the index */
    int64_t np_values[RT_MT19937_N];      /* np.random.get_state()[1] */
    int64_t np_index, np_has_gauss;       /* [2], [3] */
    float np_cached_gaussian;             /* [4] */
    uint8_t torch_cpu[RT_TORCH_CPU_RNG_STATE_BYTES]; /* torch.get_rng_state() */
    uint8_t torch_cuda[RT_TORCH_CUDA_RNG_STATE_BYTES]; /* torch.cuda.get_rng_state() */
} rt_lerobot_rng_state;

/* Fills *state with what random.seed(seed), np.random.seed(seed), torch.manual_seed(seed) and
 * torch.cuda.manual_seed_all(seed) leave. */
void rt_lerobot_rng_state_seed(rt_lerobot_rng_state *state, uint32_t seed);

/* Adds LeRobot's tensors (py_rng_version, py_rng_state, np_rng_state_values, np_rng_state_index,
 * np_rng_has_gauss, np_rng_cached_gaussian, torch_rng_state, and torch_cuda_rng_state when
 * with_cuda, as LeRobot writes it only where CUDA is available) to w, which borrows *state's
 * arrays until it has written. */
gboolean rt_lerobot_rng_state_add(const rt_lerobot_rng_state *state, gboolean with_cuda, rt_safetensors_writer *w,
                                  GError **error);

G_END_DECLS

#endif
