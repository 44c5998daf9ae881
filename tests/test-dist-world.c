/* tests/test-dist-world.c: the world read from each launcher's environment variables, the
 * derived fields, the precedence between launchers, and the error for each inconsistent or
 * malformed value (the message must name the variable and its value). The environments are
 * blocks passed in, never this process's own. */
#include "config.h"

#include <robotrain/error.h>
#include <robotrain/world.h>

#include "testing.h"

/* Parses a NULL-terminated list of "NAME=value" strings. */
static gboolean parse(rt_world *w, GError **error, ...)
{
    GPtrArray *env = g_ptr_array_new();
    va_list args;
    va_start(args, error);
    for (const char *s = va_arg(args, const char *); s; s = va_arg(args, const char *))
        g_ptr_array_add(env, (gpointer)s);
    va_end(args);
    g_ptr_array_add(env, NULL);
    gboolean ok = rt_world_from_environ(w, (const char *const *)env->pdata, error);
    g_ptr_array_unref(env);
    return ok;
}

DEF_TEST(no_launcher_is_a_single_process)
{
    GError *error = NULL;
    rt_world w;
    memset(&w, 0x55, sizeof w);
    OK(parse(&w, &error, "PATH=/usr/bin", "HOME=/tmp", NULL));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(0, w.rank);
    EXPECT_EQ_INT(1, w.world_size);
    EXPECT_EQ_INT(0, w.local_rank);
    EXPECT_EQ_INT(1, w.local_world_size);
    EXPECT_EQ_INT(0, w.node_rank);
    EXPECT_EQ_INT(1, w.n_nodes);
    EXPECT_EQ_STR("127.0.0.1", w.master_addr);
    EXPECT_EQ_INT(29500, w.master_port);
    EXPECT_EQ_INT(29500, w.store_port);
    EXPECT_EQ_INT(FALSE, w.store_hosted);
    EXPECT_EQ_STR("default", w.run_id);
    EXPECT_EQ_INT(RT_LAUNCHER_NONE, w.launcher);
    char *text = rt_world_describe(&w);
    EXPECT_EQ_STR("rank 0 of 1 (local 0 of 1 on node 0 of 1), master 127.0.0.1:29500, store port 29500, run "
                  "default, single process",
                  text);
    g_free(text);
    return 0;
}

DEF_TEST(torchrun_variables)
{
    GError *error = NULL;
    rt_world w;
    /* What torchrun --nnodes=2 --nproc-per-node=4 gives the second process of node 1. */
    OK(parse(&w, &error, "RANK=5", "WORLD_SIZE=8", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=4", "GROUP_RANK=1",
             "GROUP_WORLD_SIZE=2", "MASTER_ADDR=10.1.2.3", "MASTER_PORT=29400", "TORCHELASTIC_RUN_ID=job-17",
             NULL));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(RT_LAUNCHER_ENV, w.launcher);
    EXPECT_EQ_INT(5, w.rank);
    EXPECT_EQ_INT(8, w.world_size);
    EXPECT_EQ_INT(1, w.local_rank);
    EXPECT_EQ_INT(4, w.local_world_size);
    EXPECT_EQ_INT(1, w.node_rank);
    EXPECT_EQ_INT(2, w.n_nodes);
    EXPECT_EQ_STR("10.1.2.3", w.master_addr);
    EXPECT_EQ_INT(29400, w.master_port);
    EXPECT_EQ_INT(29400, w.store_port);
    EXPECT_EQ_STR("job-17", w.run_id);
    char *text = rt_world_describe(&w);
    EXPECT_EQ_STR("rank 5 of 8 (local 1 of 4 on node 1 of 2), master 10.1.2.3:29400, store port 29400, run "
                  "job-17, from torchrun/robotrain launch variables",
                  text);
    g_free(text);
    return 0;
}

DEF_TEST(torchrun_agent_store_moves_ours_up_one_port)
{
    GError *error = NULL;
    rt_world w;
    OK(parse(&w, &error, "RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
             "MASTER_PORT=29500", "TORCHELASTIC_USE_AGENT_STORE=True", NULL));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(29500, w.master_port);
    EXPECT_EQ_INT(29501, w.store_port);
    /* An explicit store port wins. */
    OK(parse(&w, &error, "RANK=0", "WORLD_SIZE=2", "MASTER_PORT=29500", "TORCHELASTIC_USE_AGENT_STORE=True",
             "ROBOTRAIN_STORE_PORT=40000", NULL));
    EXPECT_EQ_INT(40000, w.store_port);
    OK(!parse(&w, &error, "RANK=0", "WORLD_SIZE=2", "MASTER_PORT=65535", "TORCHELASTIC_USE_AGENT_STORE=True",
              NULL));
    EXPECT_ERROR(error, "MASTER_PORT=65535 is held by torchrun's store");
    return 0;
}

DEF_TEST(robotrain_launch_variables)
{
    GError *error = NULL;
    rt_world w;
    /* No LOCAL_* on a single node: everything is local; no MASTER_ADDR: loopback. */
    OK(parse(&w, &error, "RANK=2", "WORLD_SIZE=3", "ROBOTRAIN_STORE_HOSTED=1", "ROBOTRAIN_RUN_ID=run.2024:a_b",
             "MASTER_PORT=31000", NULL));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(2, w.local_rank);
    EXPECT_EQ_INT(3, w.local_world_size);
    EXPECT_EQ_INT(0, w.node_rank);
    EXPECT_EQ_INT(1, w.n_nodes);
    EXPECT_EQ_STR("127.0.0.1", w.master_addr);
    EXPECT_EQ_INT(31000, w.store_port);
    EXPECT_EQ_INT(TRUE, w.store_hosted);
    EXPECT_EQ_STR("run.2024:a_b", w.run_id);
    /* ROBOTRAIN_RUN_ID wins over torchrun's. */
    OK(parse(&w, &error, "RANK=0", "WORLD_SIZE=1", "TORCHELASTIC_RUN_ID=t", "ROBOTRAIN_RUN_ID=r", NULL));
    EXPECT_EQ_STR("r", w.run_id);
    return 0;
}

DEF_TEST(node_rank_is_derived)
{
    GError *error = NULL;
    rt_world w;
    OK(parse(&w, &error, "RANK=7", "WORLD_SIZE=8", "LOCAL_RANK=3", "LOCAL_WORLD_SIZE=4", "MASTER_ADDR=node0",
             NULL));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(1, w.node_rank);
    EXPECT_EQ_INT(2, w.n_nodes);
    EXPECT_EQ_STR("node0", w.master_addr);
    return 0;
}

DEF_TEST(mpirun_variables)
{
    GError *error = NULL;
    rt_world w;
    OK(parse(&w, &error, "OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_RANK=1",
             "OMPI_COMM_WORLD_LOCAL_SIZE=2", "MASTER_ADDR=host-a", "MASTER_PORT=12345", NULL));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(RT_LAUNCHER_MPI, w.launcher);
    EXPECT_EQ_INT(3, w.rank);
    EXPECT_EQ_INT(4, w.world_size);
    EXPECT_EQ_INT(1, w.local_rank);
    EXPECT_EQ_INT(2, w.local_world_size);
    EXPECT_EQ_INT(1, w.node_rank);
    EXPECT_EQ_INT(2, w.n_nodes);
    EXPECT_EQ_STR("host-a", w.master_addr);
    EXPECT_EQ_INT(12345, w.master_port);
    /* One node: the master defaults to loopback. */
    OK(parse(&w, &error, "OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=1",
             "OMPI_COMM_WORLD_LOCAL_SIZE=2", NULL));
    EXPECT_EQ_STR("127.0.0.1", w.master_addr);
    /* Two nodes and no MASTER_ADDR: mpirun does not say where rank 0 is. */
    OK(!parse(&w, &error, "OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_RANK=1",
              "OMPI_COMM_WORLD_LOCAL_SIZE=2", NULL));
    EXPECT_ERROR(error, "MASTER_ADDR is not set, and the 4 processes run on 2 nodes");
    return 0;
}

DEF_TEST(srun_variables)
{
    GError *error = NULL;
    rt_world w;
    /* srun -N3 -n7 (3, 2, 2 tasks): task 4 is the second one of node 1. */
    OK(parse(&w, &error, "SLURM_JOB_ID=991", "SLURM_STEP_ID=0", "SLURM_PROCID=4", "SLURM_NTASKS=7",
             "SLURM_LOCALID=1", "SLURM_NODEID=1", "SLURM_NNODES=3", "SLURM_STEP_TASKS_PER_NODE=3,2(x2)",
             "SLURM_TASKS_PER_NODE=9(x9)", "MASTER_ADDR=gpu-001", NULL));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(RT_LAUNCHER_SLURM, w.launcher);
    EXPECT_EQ_INT(4, w.rank);
    EXPECT_EQ_INT(7, w.world_size);
    EXPECT_EQ_INT(1, w.local_rank);
    EXPECT_EQ_INT(2, w.local_world_size);
    EXPECT_EQ_INT(1, w.node_rank);
    EXPECT_EQ_INT(3, w.n_nodes);
    EXPECT_EQ_STR("gpu-001", w.master_addr);
    EXPECT_EQ_STR("slurm-991.0", w.run_id);
    /* Without the step's list the job's is used; the node count comes from the list. */
    OK(parse(&w, &error, "SLURM_STEP_ID=3", "SLURM_PROCID=5", "SLURM_NTASKS=6", "SLURM_LOCALID=2",
             "SLURM_NODEID=1", "SLURM_TASKS_PER_NODE=3(x2)", "MASTER_ADDR=gpu-001", NULL));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(3, w.local_world_size);
    EXPECT_EQ_INT(2, w.n_nodes);
    /* srun on one node needs no MASTER_ADDR. */
    OK(parse(&w, &error, "SLURM_STEP_ID=0", "SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=1", "SLURM_NODEID=0",
             "SLURM_NNODES=1", "SLURM_TASKS_PER_NODE=2", NULL));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("127.0.0.1", w.master_addr);
    return 0;
}

DEF_TEST(sbatch_script_outside_srun_is_a_single_process)
{
    GError *error = NULL;
    rt_world w;
    /* The batch script sees the allocation's variables but is one process. */
    OK(parse(&w, &error, "SLURM_JOB_ID=5", "SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_LOCALID=0",
             "SLURM_NODEID=0", "SLURM_TASKS_PER_NODE=4", NULL));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(RT_LAUNCHER_NONE, w.launcher);
    EXPECT_EQ_INT(1, w.world_size);
    /* Slurm's batch step id (0xfffffffe) is not a task step either. */
    OK(parse(&w, &error, "SLURM_STEP_ID=4294967294", "SLURM_PROCID=0", "SLURM_NTASKS=4", NULL));
    EXPECT_EQ_INT(RT_LAUNCHER_NONE, w.launcher);
    return 0;
}

DEF_TEST(launcher_precedence)
{
    GError *error = NULL;
    rt_world w;
    /* robotrain launch inside an srun step: the launcher's variables win. */
    OK(parse(&w, &error, "RANK=1", "WORLD_SIZE=2", "SLURM_STEP_ID=0", "SLURM_PROCID=0", "SLURM_NTASKS=1",
             "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=1", NULL));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(RT_LAUNCHER_ENV, w.launcher);
    EXPECT_EQ_INT(1, w.rank);
    OK(parse(&w, &error, "SLURM_STEP_ID=0", "SLURM_PROCID=0", "SLURM_NTASKS=1", "OMPI_COMM_WORLD_RANK=1",
             "OMPI_COMM_WORLD_SIZE=2", NULL));
    EXPECT_EQ_INT(RT_LAUNCHER_MPI, w.launcher);
    return 0;
}

/* Each malformed or inconsistent environment, and the text its error must contain. */
DEF_TEST(errors_name_the_variable)
{
    static const struct {
        const char *env[8];
        const char *message;
    } cases[] = {
        { { "RANK=abc", "WORLD_SIZE=2" }, "RANK='abc' is not valid: the launcher must set it to a whole number" },
        { { "RANK=-1", "WORLD_SIZE=2" }, "RANK='-1' is not valid" },
        { { "RANK=1", "WORLD_SIZE=2x" }, "WORLD_SIZE='2x' is not valid" },
        { { "RANK=0", "WORLD_SIZE=0" }, "WORLD_SIZE='0' is not valid: the launcher must set it to a whole number "
                                        "from 1 to" },
        { { "RANK=", "WORLD_SIZE=2" }, "RANK='' is not valid" },
        { { "RANK=4", "WORLD_SIZE=4" }, "RANK=4 is not below WORLD_SIZE=4: every rank must lie in 0..3" },
        { { "RANK=1" }, "RANK is set but WORLD_SIZE is not" },
        { { "WORLD_SIZE=2" }, "WORLD_SIZE is set but RANK is not" },
        { { "LOCAL_RANK=1" }, "LOCAL_RANK='1' is set but RANK and WORLD_SIZE are not" },
        { { "RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1" }, "LOCAL_RANK is set but LOCAL_WORLD_SIZE is not" },
        { { "RANK=3", "WORLD_SIZE=4", "LOCAL_RANK=2", "LOCAL_WORLD_SIZE=2" },
          "LOCAL_RANK=2 is not below LOCAL_WORLD_SIZE=2" },
        { { "RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=4" }, "LOCAL_WORLD_SIZE=4 exceeds WORLD_SIZE=2" },
        { { "RANK=0", "WORLD_SIZE=4", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=a" },
          "LOCAL_RANK=1 exceeds RANK=0" },
        { { "RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2", "GROUP_RANK=2", "GROUP_WORLD_SIZE=2",
            "MASTER_ADDR=a" },
          "GROUP_RANK=2 is not below the number of nodes, 2 (GROUP_WORLD_SIZE)" },
        { { "RANK=0", "WORLD_SIZE=2", "GROUP_WORLD_SIZE=3" }, "GROUP_WORLD_SIZE=3 nodes exceed WORLD_SIZE=2 processes" },
        { { "RANK=1", "WORLD_SIZE=2", "MASTER_PORT=70000" }, "MASTER_PORT='70000' is not valid" },
        { { "RANK=1", "WORLD_SIZE=2", "MASTER_PORT=0" }, "MASTER_PORT='0' is not valid: the launcher must set it to "
                                                         "a whole number from 1 to 65535" },
        { { "RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=" }, "MASTER_ADDR='' is not valid" },
        { { "RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=a b" }, "MASTER_ADDR='a b' is not valid" },
        { { "RANK=1", "WORLD_SIZE=2", "ROBOTRAIN_STORE_PORT=x" }, "ROBOTRAIN_STORE_PORT='x' is not valid" },
        { { "RANK=1", "WORLD_SIZE=2", "ROBOTRAIN_STORE_HOSTED=maybe" }, "ROBOTRAIN_STORE_HOSTED='maybe' is not valid: "
                                                                        "use 1 or 0" },
        { { "RANK=1", "WORLD_SIZE=2", "ROBOTRAIN_RUN_ID=a/b" }, "ROBOTRAIN_RUN_ID='a/b' is not valid: a run id is" },
        { { "RANK=1", "WORLD_SIZE=2", "TORCHELASTIC_RUN_ID=" }, "TORCHELASTIC_RUN_ID='' is not valid" },
        { { "RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2" },
          "MASTER_ADDR is not set, and the 4 processes run on 2 nodes: set MASTER_ADDR" },
        { { "OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=2" },
          "OMPI_COMM_WORLD_RANK=2 is not below OMPI_COMM_WORLD_SIZE=2" },
        { { "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=two" }, "OMPI_COMM_WORLD_SIZE='two' is not valid" },
        { { "OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=1" },
          "OMPI_COMM_WORLD_LOCAL_RANK is set but OMPI_COMM_WORLD_LOCAL_SIZE is not" },
        { { "SLURM_STEP_ID=0", "SLURM_PROCID=1" }, "SLURM_PROCID is set but SLURM_NTASKS is not" },
        { { "SLURM_STEP_ID=0", "SLURM_PROCID=x", "SLURM_NTASKS=2" }, "SLURM_PROCID='x' is not valid" },
        { { "SLURM_STEP_ID=0", "SLURM_PROCID=3", "SLURM_NTASKS=2" }, "SLURM_PROCID=3 is not below SLURM_NTASKS=2" },
        { { "SLURM_STEP_ID=0", "SLURM_PROCID=1", "SLURM_NTASKS=4", "SLURM_LOCALID=1", "SLURM_NODEID=0",
            "SLURM_TASKS_PER_NODE=2(x" },
          "SLURM_TASKS_PER_NODE='2(x' is not valid: expected task counts per node such as '2(x3),1'" },
        { { "SLURM_STEP_ID=0", "SLURM_PROCID=1", "SLURM_NTASKS=4", "SLURM_LOCALID=1", "SLURM_NODEID=0",
            "SLURM_STEP_TASKS_PER_NODE=2,,2" },
          "SLURM_STEP_TASKS_PER_NODE='2,,2' is not valid" },
        { { "SLURM_STEP_ID=0", "SLURM_PROCID=3", "SLURM_NTASKS=4", "SLURM_LOCALID=1", "SLURM_NODEID=2",
            "SLURM_TASKS_PER_NODE=2(x2)", "MASTER_ADDR=a" },
          "SLURM_TASKS_PER_NODE='2(x2)' lists 2 node(s), but SLURM_NODEID=2 is not among them" },
        { { "SLURM_STEP_ID=0", "SLURM_PROCID=1", "SLURM_NTASKS=4", "SLURM_LOCALID=1", "SLURM_NNODES=2" },
          "SLURM_LOCALID is set but neither SLURM_STEP_TASKS_PER_NODE nor SLURM_TASKS_PER_NODE is" },
        { { "SLURM_STEP_ID=0", "SLURM_PROCID=1", "SLURM_NTASKS=4", "SLURM_LOCALID=1", "SLURM_NODEID=0",
            "SLURM_TASKS_PER_NODE=1,3" },
          "SLURM_LOCALID=1 is not below SLURM_TASKS_PER_NODE=1" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        GError *error = NULL;
        rt_world w;
        rt_world_init_single(&w);
        w.rank = 42; /* must survive a failed parse */
        OK(!rt_world_from_environ(&w, cases[i].env, &error));
        OK(error && error->domain == RT_ERROR && error->code == RT_ERROR_INVALID_ARG);
        EXPECT_ERROR(error, cases[i].message);
        EXPECT_EQ_INT(42, w.rank);
    }
    return 0;
}

DEF_TEST(process_environment)
{
    GError *error = NULL;
    rt_world w;
    g_setenv("RANK", "1", TRUE);
    g_setenv("WORLD_SIZE", "3", TRUE);
    g_setenv("MASTER_PORT", "23456", TRUE);
    OK(rt_world_from_env(&w, &error));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(1, w.rank);
    EXPECT_EQ_INT(3, w.world_size);
    EXPECT_EQ_INT(23456, w.master_port);
    g_unsetenv("RANK");
    g_unsetenv("WORLD_SIZE");
    g_unsetenv("MASTER_PORT");
    EXPECT_EQ_STR("srun", rt_launcher_name(RT_LAUNCHER_SLURM));
    EXPECT_EQ_STR("mpirun", rt_launcher_name(RT_LAUNCHER_MPI));
    return 0;
}

int main(void)
{
    /* The test's own environment must not leak into the "no launcher" case. */
    static const char *const launcher_vars[] = { "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE" };
    for (size_t i = 0; i < G_N_ELEMENTS(launcher_vars); i++)
        g_unsetenv(launcher_vars[i]);
    RUN_TEST(no_launcher_is_a_single_process);
    RUN_TEST(torchrun_variables);
    RUN_TEST(torchrun_agent_store_moves_ours_up_one_port);
    RUN_TEST(robotrain_launch_variables);
    RUN_TEST(node_rank_is_derived);
    RUN_TEST(mpirun_variables);
    RUN_TEST(srun_variables);
    RUN_TEST(sbatch_script_outside_srun_is_a_single_process);
    RUN_TEST(launcher_precedence);
    RUN_TEST(errors_name_the_variable);
    RUN_TEST(process_environment);
    END_TEST;
}
