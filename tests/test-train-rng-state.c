/* training_state/rng_state.safetensors against the states of the real generators:
 * tests/data/train/rng-state-S.safetensors were written by make-rng-state.py beside them from
 * CPython's random, NumPy and PyTorch right after LeRobot's set_seed(S). Ours must hold the same
 * tensors, names, dtypes, shapes and bytes; and a checkpoint must carry the file. */
#include "config.h"

#include <string.h>

#include <glib/gstdio.h>

#include <robotrain/safetensors.h>

#include "testing.h"
#include "train/rng-state.h"

static char *tmpdir;

/* 0 when the file written for seed holds exactly the reference's tensors. */
static int same_as_reference(uint32_t seed)
{
    g_autofree char *name = g_strdup_printf("data/train/rng-state-%u.safetensors", seed);
    g_autofree char *ref_path = rt_test_srcfile(name);
    g_autofree char *our_path = g_build_filename(tmpdir, "rng_state.safetensors", NULL);
    GError *err = NULL;
    rt_lerobot_rng_state state;
    rt_lerobot_rng_state_seed(&state, seed);
    rt_safetensors_writer *w = rt_safetensors_writer_new();
    OK(rt_lerobot_rng_state_add(&state, FALSE, w, &err) && rt_safetensors_writer_write(w, our_path, &err));
    rt_safetensors_writer_free(w);
    EXPECT_NO_ERROR(err);
    rt_safetensors *ref = rt_safetensors_open(ref_path, &err), *ours = rt_safetensors_open(our_path, &err);
    EXPECT_NO_ERROR(err);
    OK(ref && ours);
    EXPECT_EQ_INT(7, (int)rt_safetensors_n_tensors(ref));
    EXPECT_EQ_INT((int)rt_safetensors_n_tensors(ref), (int)rt_safetensors_n_tensors(ours));
    for (size_t i = 0; i < rt_safetensors_n_tensors(ref); i++) {
        const rt_st_tensor *r = rt_safetensors_tensor_at(ref, i);
        const rt_st_tensor *o = rt_safetensors_find(ours, r->name);
        OK1(o != NULL, r->name);
        OK1(o->dtype == r->dtype && o->rank == r->rank && o->n_elements == r->n_elements, r->name);
        OK1(o->n_bytes == r->n_bytes && memcmp(o->data, r->data, r->n_bytes) == 0, r->name);
    }
    rt_safetensors_close(ref);
    rt_safetensors_close(ours);
    return 0;
}

DEF_TEST(seed_1005)
{
    return same_as_reference(1005);
}

DEF_TEST(seed_2_to_the_32_minus_1)
{
    return same_as_reference(4294967295u);
}

/* torch.cuda.get_rng_state() after manual_seed_all(S): the seed, then offset 0. */
DEF_TEST(cuda_state)
{
    rt_lerobot_rng_state state;
    rt_lerobot_rng_state_seed(&state, 1005);
    g_autofree char *path = g_build_filename(tmpdir, "cuda.safetensors", NULL);
    GError *err = NULL;
    rt_safetensors_writer *w = rt_safetensors_writer_new();
    OK(rt_lerobot_rng_state_add(&state, TRUE, w, &err) && rt_safetensors_writer_write(w, path, &err));
    rt_safetensors_writer_free(w);
    EXPECT_NO_ERROR(err);
    rt_safetensors *st = rt_safetensors_open(path, &err);
    EXPECT_NO_ERROR(err);
    const rt_st_tensor *t = rt_safetensors_find(st, "torch_cuda_rng_state");
    OK(t && t->dtype == RT_ST_U8 && t->n_elements == 16);
    static const uint8_t want[16] = {0xed, 0x03};
    OK(memcmp(t->data, want, 16) == 0);
    EXPECT_EQ_INT(8, (int)rt_safetensors_n_tensors(st));
    rt_safetensors_close(st);
    return 0;
}

int main(void)
{
    tmpdir = g_dir_make_tmp("test-train-rng-state-XXXXXX", NULL);
    RUN_TEST(seed_1005);
    RUN_TEST(seed_2_to_the_32_minus_1);
    RUN_TEST(cuda_state);
    g_autofree char *a = g_build_filename(tmpdir, "rng_state.safetensors", NULL);
    g_autofree char *b = g_build_filename(tmpdir, "cuda.safetensors", NULL);
    g_remove(a);
    g_remove(b);
    g_rmdir(tmpdir);
    g_free(tmpdir);
    END_TEST;
}
