/* LeRobot's rng_state.safetensors (see rng-state.h): the MT19937 seedings of CPython (init_by_array
 * of the seed's 32-bit words), NumPy's legacy seed (init_genrand) and PyTorch's CPU generator
 * (init_genrand, with its state struct laid out as torch.get_rng_state() returns it). */
#include "config.h"

#include <string.h>

#include "train/rng-state.h"

/* Matsumoto and Nishimura's init_genrand. */
static void mt_init_genrand(uint32_t mt[RT_MT19937_N], uint32_t seed)
{
    mt[0] = seed;
    for (uint32_t i = 1; i < RT_MT19937_N; i++)
        mt[i] = 1812433253u * (mt[i - 1] ^ (mt[i - 1] >> 30)) + i;
}

/* Matsumoto and Nishimura's init_by_array, which CPython's random.seed(int) applies to the
 * absolute value's 32-bit words, least significant first (one word, 0, for seed 0). */
static void mt_init_by_array(uint32_t mt[RT_MT19937_N], const uint32_t *key, uint32_t key_length)
{
    mt_init_genrand(mt, 19650218u);
    uint32_t i = 1, j = 0;
    for (uint32_t k = RT_MT19937_N > key_length ? RT_MT19937_N : key_length; k; k--) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525u)) + key[j] + j;
        if (++i >= RT_MT19937_N) {
            mt[0] = mt[RT_MT19937_N - 1];
            i = 1;
        }
        if (++j >= key_length)
            j = 0;
    }
    for (uint32_t k = RT_MT19937_N - 1; k; k--) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941u)) - i;
        if (++i >= RT_MT19937_N) {
            mt[0] = mt[RT_MT19937_N - 1];
            i = 1;
        }
    }
    mt[0] = 0x80000000u; /* a non-zero initial array */
}

static void put_u64(uint8_t *at, uint64_t v)
{
    for (int b = 0; b < 8; b++)
        at[b] = (uint8_t)(v >> (8 * b));
}

static void put_i32(uint8_t *at, int32_t v)
{
    uint32_t u = (uint32_t)v;
    for (int b = 0; b < 4; b++)
        at[b] = (uint8_t)(u >> (8 * b));
}

void rt_lerobot_rng_state_seed(rt_lerobot_rng_state *state, uint32_t seed)
{
    memset(state, 0, sizeof *state);
    uint32_t mt[RT_MT19937_N];

    mt_init_by_array(mt, &seed, 1);
    state->py_version = 3;
    for (int i = 0; i < RT_MT19937_N; i++)
        state->py_state[i] = mt[i];
    state->py_state[RT_MT19937_N] = RT_MT19937_N; /* the next draw regenerates the array */

    mt_init_genrand(mt, seed);
    for (int i = 0; i < RT_MT19937_N; i++)
        state->np_values[i] = mt[i];
    state->np_index = RT_MT19937_N;
    state->np_has_gauss = 0;
    state->np_cached_gaussian = 0.0f;

    /* little-endian x86-64 layout: uint64 the_initial_seed, int left = 1, int seeded = 1,
     * uint64 next = 0, uint64 state[624], the normal caches zero and invalid */
    uint8_t *t = state->torch_cpu;
    put_u64(t, seed);
    put_i32(t + 8, 1);
    put_i32(t + 12, 1);
    put_u64(t + 16, 0);
    for (int i = 0; i < RT_MT19937_N; i++)
        put_u64(t + 24 + 8 * i, mt[i]);

    put_u64(state->torch_cuda, seed); /* offset 0 */
}

gboolean rt_lerobot_rng_state_add(const rt_lerobot_rng_state *state, gboolean with_cuda, rt_safetensors_writer *w,
                                  GError **error)
{
    const int64_t one = 1, py_n = RT_MT19937_N + 1, np_n = RT_MT19937_N, cpu_n = RT_TORCH_CPU_RNG_STATE_BYTES,
                  cuda_n = RT_TORCH_CUDA_RNG_STATE_BYTES;
    return rt_safetensors_writer_add(w, "py_rng_version", RT_ST_I64, 1, &one, &state->py_version, error) &&
           rt_safetensors_writer_add(w, "py_rng_state", RT_ST_I64, 1, &py_n, state->py_state, error) &&
           rt_safetensors_writer_add(w, "np_rng_state_values", RT_ST_I64, 1, &np_n, state->np_values, error) &&
           rt_safetensors_writer_add(w, "np_rng_state_index", RT_ST_I64, 1, &one, &state->np_index, error) &&
           rt_safetensors_writer_add(w, "np_rng_has_gauss", RT_ST_I64, 1, &one, &state->np_has_gauss, error) &&
           rt_safetensors_writer_add(w, "np_rng_cached_gaussian", RT_ST_F32, 1, &one, &state->np_cached_gaussian,
                                     error) &&
           rt_safetensors_writer_add(w, "torch_rng_state", RT_ST_U8, 1, &cpu_n, state->torch_cpu, error) &&
           (!with_cuda ||
            rt_safetensors_writer_add(w, "torch_cuda_rng_state", RT_ST_U8, 1, &cuda_n, state->torch_cuda, error));
}
