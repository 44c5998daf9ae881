/* The memory planner: activations share the arena when their lifetimes do not overlap (peak
 * bytes measured and bounded), outputs the host reads stay intact, views take no memory,
 * workspaces are reserved, unused nodes are pruned, and the planned graph is inspectable the
 * way a backend reads it. */
#include "config.h"

#include "graph-test.h"

enum { ROWS = 256, COLS = 256 };
static const size_t TENSOR_BYTES = ROWS * COLS * sizeof(float);

/* y = x; 40 times y = 0.5 * relu(y) + 1: a chain whose intermediates die at once */
DEF_TEST(chain_reuses_two_buffers)
{
    rt_graph *g = rt_graph_new(0);
    rt_tensor *x = rt_input(g, "x", RT_F32, 2, (int64_t[]){ROWS, COLS}, -1);
    rt_tensor *y = x, *kept = NULL;
    for (int i = 0; i < 40; i++) {
        y = rt_scale(g, rt_relu(g, y), 0.5, 1.0);
        if (i == 9)
            kept = y;
    }
    rt_graph_output(g, "mid", kept); /* read by the host: must survive the later ops */
    rt_graph_output(g, "y", y);
    OK(rt_test_plan(g));
    size_t arena = rt_graph_storage_size(g, RT_STORAGE_ARENA);
    printf("# arena %zu bytes for 80 tensors of %zu\n", arena, TENSOR_BYTES);
    OK(arena <= 3 * TENSOR_BYTES);                 /* two live + the kept output */
    OK(arena >= 2 * TENSOR_BYTES);
    float *xv = g_new(float, ROWS * COLS), *yv = g_new(float, ROWS * COLS);
    float *mv = g_new(float, ROWS * COLS);
    for (int i = 0; i < ROWS * COLS; i++)
        xv[i] = (float)(i % 17) - 8.0f;
    OK(rt_graph_write(g, x, xv, TENSOR_BYTES, NULL) && rt_test_run(g));
    OK(rt_graph_read(g, y, yv, TENSOR_BYTES, NULL) && rt_graph_read(g, kept, mv, TENSOR_BYTES, NULL));
    for (int i = 0; i < ROWS * COLS; i += 97) {
        float r = xv[i];
        for (int k = 0; k < 40; k++) {
            r = 0.5f * (r > 0 ? r : 0.0f) + 1.0f;
            if (k == 9)
                EXPECT_NEAR(r, mv[i], 0);
        }
        EXPECT_NEAR(r, yv[i], 0);
    }
    g_free(xv);
    g_free(yv);
    g_free(mv);
    rt_graph_free(g);
    return 0;
}

/* a training step's activations: the arena is well below the sum of all of them */
DEF_TEST(training_graph_peak)
{
    GError *error = NULL;
    rt_graph *g = rt_graph_new(RT_GRAPH_TRAIN);
    rt_tensor *x = rt_input(g, "x", RT_F32, 2, (int64_t[]){64, 128}, 0);
    rt_tensor *h = x;
    for (int i = 0; i < 6; i++) {
        char name[32];
        snprintf(name, sizeof name, "l%d.weight", i);
        rt_tensor *w = rt_param(g, name, RT_F32, 2, (int64_t[]){128, 128}, rt_init_uniform(-0.1, 0.1));
        h = rt_gelu(g, rt_linear(g, h, w, NULL));
    }
    rt_set_loss(g, rt_mean(g, rt_mul(g, h, h), RT_ALL_AXES, FALSE));
    rt_adamw_group grp = {1e-3, 0.9, 0.999, 1e-8, 0};
    OK(rt_graph_backward(g, &error) && rt_graph_add_adamw(g, &grp, 1, 1.0, &error));
    OK(rt_test_plan(g));
    size_t total = 0;
    for (int i = 0; i < rt_graph_n_tensors(g); i++) {
        rt_tensor *t = rt_graph_tensor(g, i);
        if (t->storage == RT_STORAGE_ARENA && !t->view_of)
            total += rt_tensor_nbytes(t);
    }
    size_t arena = rt_graph_storage_size(g, RT_STORAGE_ARENA);
    printf("# arena %zu bytes, activations %zu bytes\n", arena, total);
    OK(arena < total * 6 / 10);
    /* the forward activations the backward pass needs stay: at least 12 of 32 KiB each */
    OK(arena >= 12 * 64 * 128 * sizeof(float));
    /* two tensors that share bytes are never live at once: check by execution intervals */
    int n = rt_graph_n_exec_nodes(g), n_t = rt_graph_n_tensors(g);
    int *first = g_new(int, n_t), *last = g_new(int, n_t);
    for (int i = 0; i < n_t; i++)
        first[i] = last[i] = -1;
    for (int i = 0; i < n; i++) {
        const rt_node *node = rt_graph_exec_node(g, i);
        for (int k = 0; k < node->n_out; k++)
            if (node->out[k] && first[node->out[k]->id] < 0)
                first[node->out[k]->id] = last[node->out[k]->id] = i;
        for (int s = 0; s < node->n_src; s++) {
            rt_tensor *t = node->src[s];
            if (t) {
                rt_tensor *root = t->view_of ? t->view_of : t;
                last[root->id] = MAX(last[root->id], i);
            }
        }
    }
    int overlaps = 0;
    for (int a = 0; a < n_t; a++)
        for (int b = a + 1; b < n_t; b++) {
            rt_tensor *ta = rt_graph_tensor(g, a), *tb = rt_graph_tensor(g, b);
            if (ta->storage != RT_STORAGE_ARENA || tb->storage != RT_STORAGE_ARENA || ta->view_of ||
                tb->view_of || first[a] < 0 || first[b] < 0)
                continue;
            bool bytes = ta->offset < tb->offset + rt_tensor_nbytes(tb) &&
                         tb->offset < ta->offset + rt_tensor_nbytes(ta);
            bool time = first[a] <= last[b] && first[b] <= last[a];
            overlaps += bytes && time;
        }
    EXPECT_EQ_INT(0, overlaps);
    g_free(first);
    g_free(last);
    rt_graph_free(g);
    return 0;
}

DEF_TEST(views_pruning_workspace_and_inspection)
{
    rt_graph *g = rt_graph_new(0);
    rt_graph_set_compute_dtype(g, RT_BF16);
    rt_tensor *x = rt_input(g, "x", RT_F32, 3, (int64_t[]){4, 6, 8}, 0);
    rt_tensor *w = rt_param(g, "w", RT_F32, 2, (int64_t[]){5, 8}, rt_init_uniform(-1, 1));
    rt_tensor *unused = rt_exp(g, x); /* nothing reads it: pruned */
    rt_tensor *v = rt_reshape(g, x, 2, (int64_t[]){24, 8});
    rt_tensor *t = rt_transpose(g, x, 0, 1);
    rt_tensor *y = rt_linear(g, v, w, NULL);
    rt_tensor *z = rt_sum(g, t, RT_AXIS(0), FALSE);
    rt_graph_output(g, "y", y);
    rt_graph_output(g, "z", z);
    OK(rt_test_plan(g));
    /* views: the input's bytes, at offsets into it */
    EXPECT_EQ_INT(RT_STORAGE_INPUT, v->storage);
    EXPECT_EQ_INT(x->offset, v->offset);
    EXPECT_EQ_INT(RT_STORAGE_INPUT, t->storage);
    EXPECT_EQ_INT(6 * 8, t->stride[1]);
    EXPECT_EQ_INT(RT_STORAGE_NONE, unused->storage);
    bool saw_exp = false, saw_linear = false;
    for (int i = 0; i < rt_graph_n_exec_nodes(g); i++) {
        const rt_node *node = rt_graph_exec_node(g, i);
        saw_exp = saw_exp || node->op == RT_OP_EXP;
        if (node->op == RT_OP_LINEAR) {
            saw_linear = true;
            EXPECT_EQ_INT(RT_BF16, node->ip[2]);            /* inline op params */
            OK(node->workspace_size >= (24 * 8 + 5 * 8) * sizeof(float)); /* rounded copies */
            OK(node->workspace_offset + node->workspace_size <=
               rt_graph_storage_size(g, RT_STORAGE_ARENA));
            EXPECT_EQ_INT(RT_STORAGE_PARAM, node->src[1]->storage);
            OK(rt_graph_tensor_address(g, node->out[0]) != NULL);
        }
        for (int k = 0; k < node->n_out; k++)      /* every output is placed */
            OK(!node->out[k] || node->out[k]->storage != RT_STORAGE_NONE);
    }
    OK(!saw_exp);
    OK(saw_linear);
    rt_graph_free(g);
    return 0;
}

int main(void)
{
    RUN_TEST(chain_reuses_two_buffers);
    RUN_TEST(training_graph_peak);
    RUN_TEST(views_pruning_workspace_and_inspection);
    END_TEST;
}
