/* src/dist/launcher.h: the library side of `robotrain launch` (robotrain-launch(1)); not installed.
 *
 * The launcher turns a launch configuration (robotrain/launch-config.h: the key file with the
 * flags applied on top) into a plan: this machine's share of the run, the rendezvous address,
 * the GPUs and the environment of each worker. It then hosts the rendezvous store (machine rank
 * 0), starts one worker per local process, each in its own process group, and supervises them:
 *
 *     rt_launch_plan *plan = rt_launch_plan_new(lc, use_cpu, rt_launcher_probe_gpus, NULL, NULL, &error);
 *     rt_store_server *store = NULL;
 *     rt_launcher_host_store(plan, &store, &error);
 *     rt_launcher_run(plan, path, argv, &options, &result, &error);  ... exit(result.exit_status)
 *     rt_store_server_free(store);
 *
 * The functions are exported (rt_ prefix) for the robotrain program and the tests; they are not
 * part of the installed API. */
#ifndef ROBOTRAIN_DIST_LAUNCHER_H
#define ROBOTRAIN_DIST_LAUNCHER_H

#include <stdint.h>
#include <stdio.h>

#include <glib.h>

#include <robotrain/option.h>
#include <robotrain/store.h>

G_BEGIN_DECLS

/* ---------------------------------------------------------------- GPUs */

/* What a probe found out about this machine's GPUs. */
typedef struct rt_launch_gpus {
    int machine;    /* GPUs of the machine, numbered 0 .. machine - 1 as gpu_ids number them */
    int visible;    /* of those, the ones CUDA_VISIBLE_DEVICES leaves visible (machine without it) */
    char *why_none; /* machine == 0: why, for messages ("this robotrain has no CUDA backend"); owned */
} rt_launch_gpus;

/* Fills gpus (zeroed by the caller). The plan calls it at most once, and only when the
 * configuration asks for GPUs or a choice depends on them. */
typedef void (*rt_launch_gpu_probe)(rt_launch_gpus *gpus, gpointer data);

/* The probe of this machine: the CUDA backend module (found in the plugin search path, with
 * data, when not NULL, the key-file plugin_path folders as a NULL-terminated char **) counts the devices with
 * CUDA_VISIBLE_DEVICES removed from the environment for the call, so that machine counts every
 * GPU; visible is then the number of CUDA_VISIBLE_DEVICES entries before the first one that is
 * invalid or names no GPU of the machine (CUDA's rule). Without the module, or when CUDA
 * reports no device, machine is 0 and why_none says why. Call it before threads start: it
 * changes the environment for a moment. */
void rt_launcher_probe_gpus(rt_launch_gpus *gpus, gpointer data);

/* Frees what gpus owns (not gpus itself). */
void rt_launch_gpus_clear(rt_launch_gpus *gpus);

/* ---------------------------------------------------------------- the plan */

typedef struct rt_launch_plan {
    char *distributed_type; /* "no", "multi-cpu" or "multi-gpu" */
    gboolean use_cpu;       /* the workers must not use GPUs (--cpu, or multi-cpu) */
    int num_machines;
    int machine_rank;
    int world_size;       /* processes over all machines */
    int local_world_size; /* processes on this machine */
    int first_rank;       /* the global rank of local rank 0: machine_rank * local_world_size */
    char *master_addr;    /* machine rank 0's address; "127.0.0.1" on one machine */
    uint16_t master_port; /* the rendezvous port; 0 until rt_launcher_host_store() picks one */
    gboolean host_store;  /* this machine hosts the rendezvous store (machine 0, two or more processes) */
    char *run_id;         /* ROBOTRAIN_RUN_ID of the workers */
    char *cuda_visible_devices; /* every worker's CUDA_VISIBLE_DEVICES: NULL leaves the launcher's,
                                 * "" hides every GPU, "0,1" the GPUs of gpu_ids */
    char *mixed_precision;      /* "no", "fp16" or "bf16" */
    char *cpu_threads;          /* every worker's OMP_NUM_THREADS */
    char **notes; /* what was inferred, one line each, for the launcher's log (NULL-terminated) */
} rt_launch_plan;

/* Resolves lc (a launch configuration with the key file and the flags applied; see
 * rt_launch_config_set_flag()) into a plan, in this order:
 *   1. use_cpu (--cpu) makes distributed_type multi-cpu, or no for a single process;
 *   2. a distributed_type that no flag set follows num_processes and num_machines when a flag
 *      changed them: no for one process on one machine; for more, multi-gpu when two or more
 *      GPUs are visible, else multi-cpu (a note says so);
 *   3. multi-gpu with num_processes at its default runs one process per GPU of each machine
 *      (those of gpu_ids, else the visible ones);
 *   4. rt_launch_config_validate(), and main_process_port is not 0 over several machines (the
 *      other machines could not know the port picked);
 *   5. the GPUs exist: every id of gpu_ids is a GPU of this machine, multi-gpu has a visible GPU
 *      for each local process; gpu_ids given as a flag is refused with --cpu and multi-cpu.
 * probe (with data) is called when a step needs the GPUs; envp (NULL: this process's) supplies
 * OMP_NUM_THREADS and ROBOTRAIN_RUN_ID. lc may be changed by steps 1-3.
 * Returns (transfer full) a plan to free with rt_launch_plan_free(), or NULL with error
 * (RT_ERROR_INVALID_ARG, RT_ERROR_NOT_FOUND for missing GPUs): every message names the flag or
 * the key (and its file) that asks for the impossible, and what to do. */
rt_launch_plan *rt_launch_plan_new(rt_config *lc, gboolean use_cpu, rt_launch_gpu_probe probe, gpointer data,
                                   const char *const *envp, GError **error);

void rt_launch_plan_free(rt_launch_plan *plan);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(rt_launch_plan, rt_launch_plan_free)

/* The environment of the worker with local rank local_rank: base (NULL: this process's) with
 * RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, MASTER_ADDR,
 * MASTER_PORT, ROBOTRAIN_STORE_PORT, ROBOTRAIN_STORE_HOSTED, ROBOTRAIN_RUN_ID,
 * ROBOTRAIN_MIXED_PRECISION, OMP_NUM_THREADS and CUDA_VISIBLE_DEVICES set (or removed) as the
 * plan says. Returns (transfer full) a NULL-terminated vector to g_strfreev(). */
char **rt_launch_plan_worker_environ(const rt_launch_plan *plan, int local_rank, const char *const *base);

/* One line describing the plan for the log: "2 workers (ranks 0-1 of 2) on machine 0 of 1,
 * multi-cpu, rendezvous at 127.0.0.1:29500, mixed precision no". Returns (transfer full). */
char *rt_launch_plan_describe(const rt_launch_plan *plan);

/* ---------------------------------------------------------------- the rendezvous */

/* Starts what this machine hosts for the run. When plan->host_store, the rendezvous store
 * (robotrain/store.h) on master_addr:master_port, listening on that address when it is a
 * loopback one and on every interface otherwise; a port of 0 becomes the one the store got.
 * A single process needs no store: a port of 0 then becomes a free one. *server (transfer
 * full, NULL when nothing is hosted) is to be freed with rt_store_server_free() once the workers
 * are done. Fails with RT_ERROR_NETWORK when the port cannot be had (taken by another run),
 * saying how to choose another. */
gboolean rt_launcher_host_store(rt_launch_plan *plan, rt_store_server **server, GError **error);

/* ---------------------------------------------------------------- output */

/* Copies a worker's output to a file descriptor, each line prefixed (with "[rank 3] "). A line
 * longer than RT_LINE_PREFIXER_MAX is cut into pieces, each prefixed; a last line without a
 * newline gets one at the end. Each piece is written with one write(2), so lines of different
 * workers do not mix. Write errors (a closed terminal or pipe) drop the output. */
#define RT_LINE_PREFIXER_MAX 65536

typedef struct rt_line_prefixer rt_line_prefixer;

/* Returns (transfer full): free with rt_line_prefixer_free(). prefix is copied. */
rt_line_prefixer *rt_line_prefixer_new(const char *prefix, int out_fd);
void rt_line_prefixer_feed(rt_line_prefixer *p, const char *data, size_t size);
/* Writes a pending partial line (with a newline). */
void rt_line_prefixer_flush(rt_line_prefixer *p);
/* Flushes and frees. NULL is a no-op. */
void rt_line_prefixer_free(rt_line_prefixer *p);

/* ---------------------------------------------------------------- running */

typedef struct rt_launch_options {
    double grace_period_s;  /* from SIGTERM to SIGKILL when workers are stopped */
    gboolean prefix_output; /* prefix each line of the workers' stdout and stderr with "[rank N] " */
    FILE *log;              /* the launcher's own messages ("robotrain launch: ..."), or NULL */
} rt_launch_options;

typedef struct rt_launch_result {
    int exit_status;   /* for the launcher: 0, the first failed worker's status (128 + signal for a
                        * signal), or 128 + the signal the launcher received */
    int failed_rank;   /* the first worker that failed, or -1 */
    int failed_status; /* its wait status (waitpid) */
    int signal;        /* the signal that stopped the run (SIGINT, SIGTERM, SIGHUP), or 0 */
    char *summary;     /* one line saying how the run ended; to g_free() */
} rt_launch_result;

/* The executable to run for name: name itself when it contains a '/', else the first match in
 * PATH. Returns (transfer full) a path to g_free(), or NULL with error (RT_ERROR_NOT_FOUND)
 * saying that the program is looked up in PATH and how to launch robotrain train. */
char *rt_launcher_find_program(const char *name, GError **error);

/* Starts plan->local_world_size workers running the executable path with argv (argv[0] as the
 * user wrote it; see rt_launcher_find_program()), each with rt_launch_plan_worker_environ(), stdin from
 * /dev/null, in its own process group, and supervises them until every one has exited:
 *   - a worker that exits non-zero or is killed by a signal fails the run: every worker's
 *     process group gets SIGTERM, and SIGKILL grace_period_s later if some process is left;
 *   - SIGINT, SIGTERM or SIGHUP sent to the launcher is sent on to every worker's process
 *     group, with SIGKILL grace_period_s later; a second such signal sends SIGKILL at once;
 *   - when the workers are done, what is left in their process groups is stopped the same way.
 * On Linux the launcher becomes a child subreaper while it runs, so the orphaned children of
 * workers are reaped and nothing is left behind; it reaps every child of the process meanwhile.
 * The signal handlers (SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGPIPE) and the subreaper state are
 * restored before it returns. Not reentrant: one run per process at a time.
 * Returns TRUE with *result filled (free its summary), or FALSE with error when a worker could
 * not be started (the ones already started are stopped first). */
gboolean rt_launcher_run(const rt_launch_plan *plan, const char *path, char **argv,
                         const rt_launch_options *options, rt_launch_result *result, GError **error);

/* "exited with status 3", "was killed by signal 9 (SIGKILL)". Returns (transfer full). */
char *rt_launcher_describe_status(int wait_status);

G_END_DECLS

#endif
