/* The graph API's error paths: every message names what was wrong (op, tensor, shapes) and
 * the first construction error is the one reported; plus small API behaviours (names, losses
 * adding up, outputs, the CPU device). */
#include "config.h"

#include "graph-test.h"

/* builds with a sticky error: the first failed constructor's message */
#define EXPECT_BUILD_ERROR(g, substring)                                                      \
    do {                                                                                      \
        GError *e_ = NULL;                                                                    \
        OK(!rt_graph_check((g), &e_));                                                        \
        EXPECT_ERROR(e_, (substring));                                                        \
    } while (0)

static rt_graph *graph_with_x(rt_tensor **x)
{
    rt_graph *g = rt_graph_new(RT_GRAPH_TRAIN);
    *x = rt_input(g, "x", RT_F32, 2, (int64_t[]){3, 4}, 0);
    return g;
}

DEF_TEST(shape_errors)
{
    rt_tensor *x;
    rt_graph *g = graph_with_x(&x);
    rt_tensor *b = rt_input(g, "b", RT_F32, 1, (int64_t[]){5}, -1);
    OK(rt_add(g, x, b) == NULL);
    EXPECT_BUILD_ERROR(g, "op add: shapes f32[3,4] and f32[5] do not broadcast");
    rt_graph_free(g);

    g = graph_with_x(&x);
    rt_tensor *w = rt_param(g, "w", RT_F32, 2, (int64_t[]){2, 5}, rt_init_constant(0));
    OK(rt_linear(g, x, w, NULL) == NULL);
    EXPECT_BUILD_ERROR(g, "op linear: x is f32[3,4] and weight is f32[2,5]: weight must be [out, in]");
    rt_graph_free(g);

    g = graph_with_x(&x);
    OK(rt_reshape(g, x, 2, (int64_t[]){5, 3}) == NULL);
    EXPECT_BUILD_ERROR(g, "cannot view f32[3,4] as [5,3]: the element counts differ");
    rt_graph_free(g);

    g = graph_with_x(&x);
    OK(rt_permute(g, x, (int[]){0, 0}) == NULL);
    EXPECT_BUILD_ERROR(g, "are not a permutation of 0..1");
    rt_graph_free(g);

    g = graph_with_x(&x);
    OK(rt_slice(g, x, 1, 2, 3) == NULL);
    EXPECT_BUILD_ERROR(g, "elements 2..4 of axis 1 are not inside f32[3,4]");
    rt_graph_free(g);

    g = graph_with_x(&x);
    rt_tensor *img = rt_input(g, "img", RT_F32, 4, (int64_t[]){1, 3, 2, 2}, 0);
    rt_tensor *k = rt_param(g, "k", RT_F32, 4, (int64_t[]){4, 3, 5, 5}, rt_init_constant(0));
    OK(rt_conv2d(g, img, k, NULL, 1, 1, 0, 0, 1, 1) == NULL);
    EXPECT_BUILD_ERROR(g, "the output would be empty");
    rt_graph_free(g);

    g = graph_with_x(&x);
    OK(rt_conv2d(g, x, x, NULL, 1, 1, 0, 0, 1, 1) == NULL);
    EXPECT_BUILD_ERROR(g, "x is f32[3,4]; expected 4 dimensions (N, C, H, W)");
    rt_graph_free(g);

    g = graph_with_x(&x);
    rt_tensor *q = rt_input(g, "q", RT_F32, 3, (int64_t[]){2, 1, 6}, 1);
    OK(rt_attention(g, q, q, q, NULL, 4, 0.0, FALSE) == NULL);
    EXPECT_BUILD_ERROR(g, "4 heads do not divide the embedding size 6");
    rt_graph_free(g);

    g = graph_with_x(&x);
    OK(rt_dropout(g, x, 1.0) == NULL);
    EXPECT_BUILD_ERROR(g, "op dropout: p = 1; it must lie in [0, 1)");
    rt_graph_free(g);

    g = graph_with_x(&x);
    rt_tensor *idx = rt_input(g, "idx", RT_F32, 1, (int64_t[]){2}, -1);
    OK(rt_embedding(g, x, idx) == NULL);
    EXPECT_BUILD_ERROR(g, "i64 indices");
    rt_graph_free(g);

    g = graph_with_x(&x);
    rt_tensor *i64 = rt_input(g, "n", RT_I64, 2, (int64_t[]){3, 4}, 0);
    OK(rt_relu(g, i64) == NULL);
    EXPECT_BUILD_ERROR(g, "x is i64[3,4]; this op computes in f32 or f64 (cast it first)");
    rt_graph_free(g);

    g = graph_with_x(&x);
    rt_tensor *pad = rt_input(g, "pad", RT_BOOL, 1, (int64_t[]){4}, -1);
    OK(rt_masked_l1_loss(g, x, x, pad, RT_L1_MEAN_VALID) == NULL);
    EXPECT_BUILD_ERROR(g, "pad_mask is bool[4] and pred f32[3,4]");
    rt_graph_free(g);
    return 0;
}

DEF_TEST(first_error_wins)
{
    rt_tensor *x;
    rt_graph *g = graph_with_x(&x);
    rt_tensor *bad = rt_sum(g, x, RT_AXIS(3), FALSE);
    OK(bad == NULL);
    /* later ops get NULL and keep the first message */
    rt_tensor *y = rt_relu(g, rt_scale(g, bad, 2, 0));
    OK(y == NULL);
    OK(rt_linear(g, x, NULL, NULL) == NULL);
    EXPECT_BUILD_ERROR(g, "op sum: the axis mask 0x8 names an axis that f32[3,4] does not have");
    GError *error = NULL;
    OK(!rt_graph_backward(g, &error));
    EXPECT_ERROR(error, "the axis mask 0x8");
    OK(!rt_graph_plan(g, rt_backend_cpu(), rt_test_cpu(), &error));
    EXPECT_ERROR(error, "the axis mask 0x8");
    rt_graph_free(g);

    /* a NULL the user passes (no failed op before) is named */
    g = rt_graph_new(0);
    OK(rt_exp(g, NULL) == NULL);
    EXPECT_BUILD_ERROR(g, "op exp: x is missing");
    rt_graph_free(g);
    return 0;
}

DEF_TEST(leaf_errors)
{
    rt_graph *g = rt_graph_new(0);
    rt_param(g, "w", RT_F32, 1, (int64_t[]){3}, rt_init_constant(0));
    OK(rt_param(g, "w", RT_F32, 1, (int64_t[]){3}, rt_init_constant(0)) == NULL);
    EXPECT_BUILD_ERROR(g, "the name 'w' is used twice in one graph");
    rt_graph_free(g);

    g = rt_graph_new(0);
    OK(rt_param(g, "h", RT_BF16, 1, (int64_t[]){3}, rt_init_constant(0)) == NULL);
    EXPECT_BUILD_ERROR(g, "parameter 'h' has dtype bf16: trainable parameters are f32");
    rt_graph_free(g);

    g = rt_graph_new(0);
    rt_param(g, "a", RT_F32, 1, (int64_t[]){3}, rt_init_constant(0));
    OK(rt_param(g, "b", RT_F64, 1, (int64_t[]){3}, rt_init_constant(0)) == NULL);
    EXPECT_BUILD_ERROR(g, "parameter 'b' is f64 but 'a' is f32");
    rt_graph_free(g);

    g = rt_graph_new(0);
    OK(rt_input(g, "x", RT_F32, 6, (int64_t[]){1, 1, 1, 1, 1, 1}, -1) == NULL);
    EXPECT_BUILD_ERROR(g, "tensor 'x': 6 dimensions; robotrain tensors have 0 to 5");
    rt_graph_free(g);

    g = rt_graph_new(0);
    OK(rt_input(g, "x", RT_F32, 2, (int64_t[]){3, 0}, -1) == NULL);
    EXPECT_BUILD_ERROR(g, "size 0 of axis 1 is not a positive size");
    rt_graph_free(g);

    g = rt_graph_new(0);
    OK(rt_input(g, "x", RT_F32, 2, (int64_t[]){3, 2}, 2) == NULL);
    EXPECT_BUILD_ERROR(g, "input 'x': batch_axis 2 is not -1 or one of its 2 axes");
    rt_graph_free(g);

    rt_graph *g1 = rt_graph_new(0), *g2 = rt_graph_new(0);
    rt_tensor *x1 = rt_input(g1, "x", RT_F32, 1, (int64_t[]){3}, -1);
    rt_input(g2, "y", RT_F32, 1, (int64_t[]){3}, -1);
    OK(rt_relu(g2, x1) == NULL);
    EXPECT_BUILD_ERROR(g2, "op relu: input 0 belongs to another graph");
    rt_graph_free(g1);
    rt_graph_free(g2);
    return 0;
}

DEF_TEST(autodiff_and_optimizer_errors)
{
    GError *error = NULL;
    rt_tensor *x;
    rt_graph *g = graph_with_x(&x);
    OK(!rt_graph_backward(g, &error));
    EXPECT_ERROR(error, "the graph has no loss; call rt_set_loss first");
    rt_set_loss(g, x);
    EXPECT_BUILD_ERROR(g, "rt_set_loss: the loss is f32[3,4]; it must be a float scalar");
    rt_graph_free(g);

    g = graph_with_x(&x);
    rt_set_loss(g, rt_sum(g, x, RT_ALL_AXES, FALSE));
    OK(!rt_graph_backward(g, &error));
    EXPECT_ERROR(error, "the loss does not depend on any trainable parameter");
    rt_graph_free(g);

    g = graph_with_x(&x);
    rt_tensor *w = rt_param(g, "w", RT_F32, 1, (int64_t[]){4}, rt_init_constant(1));
    rt_set_loss(g, rt_sum(g, rt_mul(g, x, w), RT_ALL_AXES, FALSE));
    rt_adamw_group grp = {1e-3, 0.9, 0.999, 1e-8, 0};
    OK(!rt_graph_add_adamw(g, &grp, 1, 1.0, &error));
    EXPECT_ERROR(error, "after rt_graph_backward");
    OK(rt_graph_backward(g, &error));
    OK(!rt_graph_backward(g, &error));
    EXPECT_ERROR(error, "rt_graph_backward: call it once");
    EXPECT_EQ_INT(0, rt_param_group(w));
    rt_param_set_group(g, w, 3);
    EXPECT_EQ_INT(3, rt_param_group(w));
    OK(!rt_graph_add_adamw(g, &grp, 1, 1.0, &error));
    EXPECT_ERROR(error, "parameter 'w' is in optimizer group 3 but only 1 groups were given");
    rt_param_set_group(g, w, 0);
    rt_adamw_group bad = {1e-3, 1.0, 0.999, 1e-8, 0};
    OK(!rt_graph_add_adamw(g, &bad, 1, 1.0, &error));
    EXPECT_ERROR(error, "the betas in [0, 1)");
    OK(!rt_graph_set_lr(g, 0, 1e-3, &error));
    EXPECT_ERROR(error, "the graph has no optimizer");
    OK(rt_graph_add_adamw(g, &grp, 1, 1.0, &error));
    OK(!rt_graph_set_lr(g, 0, 1e-3, &error));
    EXPECT_ERROR(error, "the graph is not planned yet");
    OK(rt_param(g, "late", RT_F32, 1, (int64_t[]){1}, rt_init_constant(0)) == NULL);
    EXPECT_BUILD_ERROR(g, "parameter 'late' is created after rt_graph_backward");
    rt_graph_free(g);
    return 0;
}

DEF_TEST(run_errors)
{
    GError *error = NULL;
    rt_graph *g = rt_graph_new(0);
    rt_tensor *w = rt_param(g, "table", RT_F32, 2, (int64_t[]){5, 2}, rt_init_uniform(-1, 1));
    rt_tensor *idx = rt_input(g, "idx", RT_I64, 1, (int64_t[]){3}, 0);
    rt_tensor *unused = rt_exp(g, w);
    rt_tensor *y = rt_embedding(g, w, idx);
    rt_graph_output(g, "y", y);
    OK(!rt_graph_compute(g, &error));
    EXPECT_ERROR(error, "rt_graph_compute: the graph is not planned; call rt_graph_plan first");
    OK(!rt_graph_write(g, idx, NULL, 0, &error));
    EXPECT_ERROR(error, "the graph is not planned");
    OK(rt_test_plan(g));
    OK(!rt_graph_plan(g, rt_backend_cpu(), rt_test_cpu(), &error));
    EXPECT_ERROR(error, "the graph is already planned");
    int64_t iv[3] = {0, 7, 2};
    OK(!rt_graph_write(g, idx, iv, 16, &error));
    EXPECT_ERROR(error, "tensor 'idx' (i64[3]) has 24 bytes, but 16 bytes were given");
    OK(rt_graph_write(g, idx, iv, sizeof iv, &error));
    OK(!rt_graph_compute(g, &error));
    EXPECT_ERROR(error, "op embedding) failed: index 7 (element 1 of the indices) is outside 0..4 "
                        "of the embedding table");
    float buf[10];
    OK(!rt_graph_read(g, unused, buf, sizeof buf, &error));
    EXPECT_ERROR(error, "tensor an unnamed f32[5,2] has no memory of its own the host can access");
    double v;
    OK(!rt_graph_read_scalar(g, y, &v, &error));
    EXPECT_ERROR(error, "tensor 'y' (f32[3,2]) is not one f32 or f64 element");
    OK(!rt_graph_set_rng(g, 1, 1, -5, &error));
    EXPECT_ERROR(error, "sample offset -5 is outside 0..2^32-1");
    rt_graph_free(g);
    return 0;
}

DEF_TEST(names_losses_outputs)
{
    GError *error = NULL;
    rt_graph *g = rt_graph_new(RT_GRAPH_TRAIN);
    rt_tensor *w = rt_param(g, "model.w", RT_F32, 1, (int64_t[]){2}, rt_init_constant(2));
    rt_tensor *l1 = rt_sum(g, w, RT_ALL_AXES, FALSE);
    rt_tensor *l2 = rt_scale(g, rt_sum(g, rt_mul(g, w, w), RT_ALL_AXES, FALSE), 10, 0);
    rt_graph_output(g, "l1_loss", l1);
    rt_graph_output(g, "kld_loss", l2);
    rt_set_loss(g, l1);
    rt_set_loss(g, l2);
    OK(rt_graph_find(g, "model.w") == w);
    OK(rt_graph_find(g, "l1_loss") == l1);
    OK(rt_graph_find(g, "nothing") == NULL);
    EXPECT_EQ_INT(1, rt_graph_n_params(g));
    OK(rt_graph_backward(g, &error));
    OK(rt_test_plan(g) && rt_test_run(g));
    double loss, a, b;
    OK(rt_graph_read_scalar(g, rt_graph_loss(g), &loss, &error));
    OK(rt_graph_read_scalar(g, l1, &a, &error) && rt_graph_read_scalar(g, l2, &b, &error));
    EXPECT_NEAR(4.0, a, 0);
    EXPECT_NEAR(80.0, b, 0);
    EXPECT_NEAR(84.0, loss, 0);
    float grad[2];
    OK(rt_graph_read(g, rt_graph_grad(g, w), grad, sizeof grad, &error));
    EXPECT_NEAR(1 + 10 * 2 * 2, grad[0], 0); /* d/dw (sum w + 10 sum w^2) */
    rt_graph_free(g);

    /* an inference graph: dropout is the identity */
    g = rt_graph_new(0);
    rt_tensor *x = rt_input(g, "x", RT_F32, 1, (int64_t[]){3}, -1);
    OK(rt_dropout(g, x, 0.5) == x);
    rt_graph_free(g);

    rt_device_info info;
    OK(rt_backend_cpu()->device_info(0, &info, &error));
    OK(info.name[0] != '\0' && info.multiprocessors >= 1 && info.total_bytes > 0);
    OK(!rt_backend_cpu()->open(1, &error));
    EXPECT_ERROR(error, "there is one CPU device (cpu:0); cpu:1 does not exist");
    EXPECT_EQ_STR("layer_norm", rt_op_name(RT_OP_LAYER_NORM));
    OK(rt_op_name(RT_OP_COUNT) == NULL);
    OK(rt_op_is_view(RT_OP_PERMUTE) && !rt_op_is_view(RT_OP_ADD));
    char d[32];
    EXPECT_EQ_STR("i64[2,3]", rt_tensor_describe(&(rt_tensor){.dtype = RT_I64, .ndim = 2, .shape = {2, 3}}, d, sizeof d));
    rt_dtype dt;
    OK(rt_dtype_from_name("bf16", &dt) && dt == RT_BF16);
    OK(!rt_dtype_from_name("f8", &dt));
    return 0;
}

/* an inference graph sharing the training graph's weights sees every update */
DEF_TEST(sharing_weights)
{
    GError *error = NULL;
    rt_graph *train = rt_graph_new(RT_GRAPH_TRAIN);
    rt_tensor *x = rt_input(train, "x", RT_F32, 2, (int64_t[]){2, 3}, 0);
    rt_tensor *w = rt_param(train, "w", RT_F32, 2, (int64_t[]){1, 3}, rt_init_constant(1));
    rt_tensor *s = rt_buffer(train, "shift", RT_F32, 1, (int64_t[]){1}, rt_init_constant(0.5));
    rt_tensor *y = rt_add(train, rt_linear(train, x, w, NULL), s);
    rt_set_loss(train, rt_mean(train, rt_mul(train, y, y), RT_ALL_AXES, FALSE));
    rt_adamw_group grp = {0.1, 0.9, 0.999, 1e-8, 0};
    OK(rt_graph_backward(train, &error) && rt_graph_add_adamw(train, &grp, 1, 0, &error));

    rt_graph *eval = rt_graph_new_sharing(train, 0);
    rt_tensor *ex = rt_input(eval, "x", RT_F32, 2, (int64_t[]){1, 3}, 0);
    rt_tensor *ew = rt_param(eval, "w", RT_F32, 2, (int64_t[]){1, 3}, rt_init_constant(7));
    rt_tensor *es = rt_buffer(eval, "shift", RT_F32, 1, (int64_t[]){1}, rt_init_constant(7));
    rt_tensor *ey = rt_add(eval, rt_linear(eval, ex, ew, NULL), es);
    rt_graph_output(eval, "y", ey);
    OK(!rt_graph_plan(eval, rt_backend_cpu(), rt_test_cpu(), &error));
    EXPECT_ERROR(error, "the graph whose weights this one shares is not planned yet");
    OK(rt_test_plan(train));
    rt_graph_free(eval);

    eval = rt_graph_new_sharing(train, 0);
    OK(rt_param(eval, "nope", RT_F32, 1, (int64_t[]){1}, rt_init_constant(0)) == NULL);
    EXPECT_BUILD_ERROR(eval, "parameter 'nope' is not a parameter of the graph this one shares");
    rt_graph_free(eval);
    eval = rt_graph_new_sharing(train, 0);
    OK(rt_param(eval, "w", RT_F32, 1, (int64_t[]){3}, rt_init_constant(0)) == NULL);
    EXPECT_BUILD_ERROR(eval, "parameter 'w' is f32[3] here but f32[1,3] in the graph");
    rt_graph_free(eval);

    eval = rt_graph_new_sharing(train, 0);
    ex = rt_input(eval, "x", RT_F32, 2, (int64_t[]){1, 3}, 0);
    ew = rt_param(eval, "w", RT_F32, 2, (int64_t[]){1, 3}, rt_init_constant(7));
    es = rt_buffer(eval, "shift", RT_F32, 1, (int64_t[]){1}, rt_init_constant(7));
    ey = rt_add(eval, rt_linear(eval, ex, ew, NULL), es);
    rt_graph_output(eval, "y", ey);
    rt_set_loss(eval, rt_sum(eval, ey, RT_ALL_AXES, FALSE));
    OK(!rt_graph_backward(eval, &error));
    EXPECT_ERROR(error, "cannot be trained");
    OK(rt_test_plan(eval));
    float ones[3] = {1, 1, 1}, xs[6] = {1, 2, 3, 4, 5, 6}, out, wv[3];
    OK(rt_graph_write(eval, ex, ones, sizeof ones, &error) && rt_test_run(eval));
    OK(rt_graph_read(eval, ey, &out, sizeof out, &error));
    EXPECT_NEAR(3.5, out, 0); /* the source's initial values, not the 7s */
    OK(rt_graph_write(train, x, xs, sizeof xs, &error) && rt_test_run(train));
    OK(rt_graph_read(train, w, wv, sizeof wv, &error));
    OK(wv[0] < 1.0f);
    OK(rt_test_run(eval) && rt_graph_read(eval, ey, &out, sizeof out, &error));
    EXPECT_NEAR(wv[0] + wv[1] + wv[2] + 0.5, out, 1e-6);
    rt_graph_free(eval);
    rt_graph_free(train);
    return 0;
}

/* rt_init_data: the values are copied when the tensor is declared and land in the storage */
DEF_TEST(init_from_data)
{
    GError *error = NULL;
    rt_graph *g = rt_graph_new(0);
    float table[6] = {0.5f, -1.25f, 3, 4, 5, 6};
    double wide[2] = {1e-300, -2.5};
    rt_tensor *b = rt_buffer(g, "table", RT_F32, 2, (int64_t[]){2, 3}, rt_init_data(table));
    rt_tensor *p = rt_param(g, "p", RT_F32, 1, (int64_t[]){3}, rt_init_data(table + 3));
    rt_tensor *x = rt_input(g, "x", RT_F32, 2, (int64_t[]){2, 3}, 0);
    rt_graph_output(g, "y", rt_add(g, rt_mul(g, x, b), p));
    memset(table, 0, sizeof table); /* copied at declaration */
    OK(rt_test_plan(g));
    float got[6], ones[6] = {1, 1, 1, 1, 1, 1};
    OK(rt_graph_read(g, b, got, sizeof got, &error));
    EXPECT_NEAR(0.5, got[0], 0);
    EXPECT_NEAR(-1.25, got[1], 0);
    EXPECT_NEAR(6, got[5], 0);
    OK(rt_graph_write(g, x, ones, sizeof ones, &error) && rt_test_run(g));
    OK(rt_graph_read(g, rt_graph_find(g, "y"), got, sizeof got, &error));
    EXPECT_NEAR(0.5 + 4, got[0], 0);
    EXPECT_NEAR(6 + 6, got[5], 0);
    rt_graph_free(g);

    g = rt_graph_new(0);
    rt_tensor *d = rt_buffer(g, "wide", RT_F64, 1, (int64_t[]){2}, rt_init_data(wide));
    rt_graph_output(g, "d", rt_scale(g, d, 1, 0));
    OK(rt_test_plan(g));
    double back[2];
    OK(rt_graph_read(g, d, back, sizeof back, &error));
    OK(back[0] == 1e-300 && back[1] == -2.5);
    rt_graph_free(g);

    g = rt_graph_new(0);
    OK(rt_buffer(g, "none", RT_F32, 1, (int64_t[]){2}, rt_init_data(NULL)) == NULL);
    EXPECT_BUILD_ERROR(g, "buffer 'none': rt_init_data needs the values (data is NULL)");
    rt_graph_free(g);
    return 0;
}

int main(void)
{
    RUN_TEST(shape_errors);
    RUN_TEST(first_error_wins);
    RUN_TEST(leaf_errors);
    RUN_TEST(autodiff_and_optimizer_errors);
    RUN_TEST(run_errors);
    RUN_TEST(names_losses_outputs);
    RUN_TEST(sharing_weights);
    RUN_TEST(init_from_data);
    END_TEST;
}
