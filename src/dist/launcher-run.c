/* Starting the workers and supervising them: exits, signals, process groups, output.
 *
 * One thread and poll(2): a self-pipe carries the signals (SIGCHLD, SIGINT, SIGTERM, SIGHUP)
 * into the loop, the workers' output pipes are read there, and the grace period is the poll
 * timeout. Workers are started with posix_spawn(), which is safe in a process with threads (the
 * rendezvous store serves from one), each as the leader of a new process group so that a
 * signal to the group reaches whatever the worker started. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <robotrain/error.h>

#include "dist/launcher.h"

/* How long processes may survive SIGKILL (a process in uninterruptible sleep, a zombie whose
 * parent does not reap it) before the launcher gives up waiting for them. */
#define KILL_WAIT_US (5 * G_USEC_PER_SEC)
/* How often, once every worker has exited, the launcher looks whether their process groups
 * are empty. */
#define GROUP_POLL_MS 50

typedef struct {
    int rank;
    pid_t pid;        /* 0: not started */
    gboolean running; /* started and not reaped */
    int status;       /* wait status, once reaped */
    int fd[2];        /* read ends of its stdout and stderr pipes (-1: none or closed) */
    rt_line_prefixer *prefixer[2];
} worker;

typedef enum {
    PHASE_RUNNING,  /* nothing sent yet */
    PHASE_STOPPING, /* SIGTERM (or the launcher's signal) sent; SIGKILL at deadline */
    PHASE_KILLING,  /* SIGKILL sent; give up at deadline */
} phase;

typedef struct {
    const rt_launch_plan *plan;
    const rt_launch_options *options;
    worker *workers;
    int n;
    phase phase;
    gint64 deadline;
    int failed; /* index of the first failed worker, -1 */
    int signal; /* the signal that stopped the run, 0 */
    gboolean leftovers_noted;
    gboolean gave_up; /* processes survived SIGKILL: wait for the workers only, without deadline */
} supervisor;

/* ---------------------------------------------------------------- signals */

static int signal_pipe[2] = {-1, -1};
static volatile sig_atomic_t pending[NSIG];
static const int caught[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP};

static void on_signal(int signo)
{
    int saved = errno;
    pending[signo] = 1;
    char byte = 1;
    if (write(signal_pipe[1], &byte, 1) < 0) {
        /* full: the loop is awake already */
    }
    errno = saved;
}

typedef struct {
    struct sigaction old[G_N_ELEMENTS(caught)];
    struct sigaction old_pipe;
    int old_subreaper;
} saved_state;

static gboolean install_handlers(saved_state *saved, GError **error)
{
    if (pipe(signal_pipe) < 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_FAILED, "robotrain launch: cannot create a pipe: %s",
                    g_strerror(errno));
        return FALSE;
    }
    for (int i = 0; i < 2; i++) {
        fcntl(signal_pipe[i], F_SETFD, FD_CLOEXEC);
        fcntl(signal_pipe[i], F_SETFL, O_NONBLOCK);
    }
    for (size_t i = 0; i < G_N_ELEMENTS(caught); i++)
        pending[caught[i]] = 0;
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (size_t i = 0; i < G_N_ELEMENTS(caught); i++) {
        sa.sa_flags = SA_RESTART | (caught[i] == SIGCHLD ? SA_NOCLDSTOP : 0);
        sigaction(caught[i], &sa, &saved->old[i]);
    }
    /* A closed terminal or pipe must not kill the launcher while it copies output. */
    struct sigaction ignore = {0};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, &saved->old_pipe);
    saved->old_subreaper = 0;
#ifdef PR_SET_CHILD_SUBREAPER
    /* Orphaned children of workers become ours, so they are reaped and nothing is left. */
    prctl(PR_GET_CHILD_SUBREAPER, &saved->old_subreaper);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
    return TRUE;
}

static void restore_handlers(saved_state *saved)
{
#ifdef PR_SET_CHILD_SUBREAPER
    prctl(PR_SET_CHILD_SUBREAPER, saved->old_subreaper);
#endif
    for (size_t i = 0; i < G_N_ELEMENTS(caught); i++)
        sigaction(caught[i], &saved->old[i], NULL);
    sigaction(SIGPIPE, &saved->old_pipe, NULL);
    for (int i = 0; i < 2; i++) {
        close(signal_pipe[i]);
        signal_pipe[i] = -1;
    }
}

static const char *signal_name(int signo)
{
    switch (signo) {
    case SIGHUP:
        return "SIGHUP";
    case SIGINT:
        return "SIGINT";
    case SIGQUIT:
        return "SIGQUIT";
    case SIGILL:
        return "SIGILL";
    case SIGTRAP:
        return "SIGTRAP";
    case SIGABRT:
        return "SIGABRT";
    case SIGBUS:
        return "SIGBUS";
    case SIGFPE:
        return "SIGFPE";
    case SIGKILL:
        return "SIGKILL";
    case SIGUSR1:
        return "SIGUSR1";
    case SIGSEGV:
        return "SIGSEGV";
    case SIGUSR2:
        return "SIGUSR2";
    case SIGPIPE:
        return "SIGPIPE";
    case SIGALRM:
        return "SIGALRM";
    case SIGTERM:
        return "SIGTERM";
    case SIGXCPU:
        return "SIGXCPU";
    case SIGXFSZ:
        return "SIGXFSZ";
    default:
        return NULL;
    }
}

char *rt_launcher_describe_status(int wait_status)
{
    if (WIFEXITED(wait_status))
        return g_strdup_printf("exited with status %d", WEXITSTATUS(wait_status));
    if (WIFSIGNALED(wait_status)) {
        int signo = WTERMSIG(wait_status);
        const char *name = signal_name(signo);
#ifdef WCOREDUMP
        const char *core = WCOREDUMP(wait_status) ? ", core dumped" : "";
#else
        const char *core = "";
#endif
        if (name)
            return g_strdup_printf("was killed by signal %d (%s%s)", signo, name, core);
        return g_strdup_printf("was killed by signal %d%s", signo, *core ? " (core dumped)" : "");
    }
    return g_strdup_printf("ended with wait status 0x%x", (unsigned)wait_status);
}

/* ---------------------------------------------------------------- messages */

static void say(const supervisor *s, const char *format, ...) G_GNUC_PRINTF(2, 3);
static void say(const supervisor *s, const char *format, ...)
{
    if (!s->options->log)
        return;
    va_list ap;
    va_start(ap, format);
    g_autofree char *text = g_strdup_vprintf(format, ap);
    va_end(ap);
    fprintf(s->options->log, "robotrain launch: %s\n", text);
    fflush(s->options->log);
}

/* ---------------------------------------------------------------- process groups */

/* Sends signo to the process group of every started worker (also of those that exited: their
 * children may still run). */
static void signal_groups(supervisor *s, int signo)
{
    for (int i = 0; i < s->n; i++)
        if (s->workers[i].pid > 0)
            kill(-s->workers[i].pid, signo);
}

static void stop_all(supervisor *s, int signo)
{
    signal_groups(s, signo);
    s->phase = PHASE_STOPPING;
    s->deadline = g_get_monotonic_time() + (gint64)(s->options->grace_period_s * G_USEC_PER_SEC);
}

static void kill_all(supervisor *s)
{
    signal_groups(s, SIGKILL);
    s->phase = PHASE_KILLING;
    s->deadline = g_get_monotonic_time() + KILL_WAIT_US;
}

/* Whether a process of worker w's group still exists. */
static gboolean group_alive(const worker *w)
{
    return w->pid > 0 && (kill(-w->pid, 0) == 0 || errno == EPERM);
}

static gboolean any_running(const supervisor *s)
{
    for (int i = 0; i < s->n; i++)
        if (s->workers[i].running)
            return TRUE;
    return FALSE;
}

static gboolean any_group_alive(const supervisor *s)
{
    for (int i = 0; i < s->n; i++)
        if (group_alive(&s->workers[i]))
            return TRUE;
    return FALSE;
}

/* ---------------------------------------------------------------- events */

static void on_worker_exit(supervisor *s, int index)
{
    worker *w = &s->workers[index];
    gboolean ok = WIFEXITED(w->status) && WEXITSTATUS(w->status) == 0;
    if (ok || s->phase != PHASE_RUNNING || s->failed >= 0)
        return;
    s->failed = index;
    g_autofree char *how = rt_launcher_describe_status(w->status);
    say(s, "rank %d (pid %ld) %s; stopping the other workers (SIGTERM, then SIGKILL after %g s)", w->rank,
        (long)w->pid, how, s->options->grace_period_s);
    stop_all(s, SIGTERM);
}

/* Reaps every child that has exited: workers, and orphans of workers (the launcher is their
 * subreaper). */
static void reap(supervisor *s)
{
    for (;;) {
        int status = 0;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0)
            return;
        for (int i = 0; i < s->n; i++)
            if (s->workers[i].pid == pid && s->workers[i].running) {
                s->workers[i].running = FALSE;
                s->workers[i].status = status;
                on_worker_exit(s, i);
                break;
            }
    }
}

static void on_launcher_signal(supervisor *s, int signo)
{
    if (s->phase == PHASE_RUNNING) {
        s->signal = signo;
        say(s, "%s received: sent to the workers; SIGKILL follows in %g s, or at once on a second signal",
            signal_name(signo), s->options->grace_period_s);
        stop_all(s, signo);
    } else if (s->phase == PHASE_STOPPING) {
        say(s, "%s received %s: killing the workers", signal_name(signo),
            s->signal ? "again" : "while the workers stop");
        if (!s->signal)
            s->signal = signo;
        kill_all(s);
    }
}

static void handle_signals(supervisor *s)
{
    char buf[64];
    while (read(signal_pipe[0], buf, sizeof buf) > 0) {
    }
    for (size_t i = 0; i < G_N_ELEMENTS(caught); i++) {
        int signo = caught[i];
        if (!pending[signo])
            continue;
        pending[signo] = 0;
        if (signo == SIGCHLD)
            reap(s);
        else
            on_launcher_signal(s, signo);
    }
    reap(s); /* also catches an exit whose SIGCHLD raced with the flags above */
}

static void close_output(worker *w, int k)
{
    if (w->fd[k] >= 0)
        close(w->fd[k]);
    w->fd[k] = -1;
    g_clear_pointer(&w->prefixer[k], rt_line_prefixer_free);
}

/* Copies what a worker wrote (one read; with drain, until nothing is left); at EOF closes the
 * pipe. */
static void read_output(worker *w, int k, gboolean drain)
{
    char buf[65536];
    for (;;) {
        ssize_t n = read(w->fd[k], buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
            close_output(w, k);
            return;
        }
        if (n < 0)
            return; /* nothing more for now */
        rt_line_prefixer_feed(w->prefixer[k], buf, (size_t)n);
        if (!drain)
            return;
    }
}

/* ---------------------------------------------------------------- starting */

static gboolean start_worker(supervisor *s, int local_rank, const char *path, char **argv, GError **error)
{
    worker *w = &s->workers[local_rank];
    int pipes[2][2] = {{-1, -1}, {-1, -1}};
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);

    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    int rc = 0;
    if (s->options->prefix_output) {
        for (int k = 0; k < 2 && rc == 0; k++) {
            if (pipe(pipes[k]) < 0) {
                rc = errno;
                break;
            }
            fcntl(pipes[k][0], F_SETFD, FD_CLOEXEC);
            fcntl(pipes[k][1], F_SETFD, FD_CLOEXEC);
            fcntl(pipes[k][0], F_SETFL, O_NONBLOCK);
            posix_spawn_file_actions_adddup2(&actions, pipes[k][1], k == 0 ? STDOUT_FILENO : STDERR_FILENO);
        }
    }
    /* A new process group; no blocked signals; default actions for what the launcher catches or
     * ignores (exec keeps ignored signals ignored). */
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (size_t i = 0; i < G_N_ELEMENTS(caught); i++)
        sigaddset(&defaults, caught[i]);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);

    char **env = rt_launch_plan_worker_environ(s->plan, local_rank, NULL);
    pid_t pid = 0;
    if (rc == 0)
        rc = posix_spawn(&pid, path, &actions, &attr, argv, env);
    g_strfreev(env);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    for (int k = 0; k < 2; k++)
        if (pipes[k][1] >= 0)
            close(pipes[k][1]);

    if (rc != 0) {
        for (int k = 0; k < 2; k++)
            if (pipes[k][0] >= 0)
                close(pipes[k][0]);
        g_set_error(error, RT_ERROR, RT_ERROR_FAILED, "cannot start rank %d (%s): %s", w->rank, path,
                    g_strerror(rc));
        return FALSE;
    }
    w->pid = pid;
    w->running = TRUE;
    if (s->options->prefix_output) {
        g_autofree char *prefix = g_strdup_printf("[rank %d] ", w->rank);
        for (int k = 0; k < 2; k++) {
            w->fd[k] = pipes[k][0];
            w->prefixer[k] = rt_line_prefixer_new(prefix, k == 0 ? STDOUT_FILENO : STDERR_FILENO);
        }
    }
    return TRUE;
}

/* ---------------------------------------------------------------- the loop */

static int poll_timeout(const supervisor *s, gboolean waiting_for_groups)
{
    int timeout = -1;
    if (s->gave_up)
        return -1;
    if (s->phase != PHASE_RUNNING) {
        gint64 left = s->deadline - g_get_monotonic_time();
        timeout = left <= 0 ? 0 : (int)MIN((left + 999) / 1000, G_MAXINT);
    }
    if (waiting_for_groups)
        timeout = timeout < 0 ? GROUP_POLL_MS : MIN(timeout, GROUP_POLL_MS);
    return timeout;
}

static void supervise(supervisor *s)
{
    GArray *fds = g_array_new(FALSE, FALSE, sizeof(struct pollfd));
    GArray *owners = g_array_new(FALSE, FALSE, sizeof(int)); /* worker * 2 + stream, per fd */
    for (;;) {
        gboolean running = any_running(s);
        if (!running) {
            if (s->gave_up || !any_group_alive(s))
                break;
            if (s->phase == PHASE_RUNNING) {
                /* Every worker is done, but processes they started are left. */
                if (!s->leftovers_noted)
                    say(s, "the workers are done, but processes they started remain; stopping them");
                s->leftovers_noted = TRUE;
                stop_all(s, SIGTERM);
            }
        }
        g_array_set_size(fds, 0);
        g_array_set_size(owners, 0);
        struct pollfd p = {signal_pipe[0], POLLIN, 0};
        int owner = -1;
        g_array_append_val(fds, p);
        g_array_append_val(owners, owner);
        for (int i = 0; i < s->n; i++)
            for (int k = 0; k < 2; k++)
                if (s->workers[i].fd[k] >= 0) {
                    p.fd = s->workers[i].fd[k];
                    owner = i * 2 + k;
                    g_array_append_val(fds, p);
                    g_array_append_val(owners, owner);
                }
        int n = poll((struct pollfd *)fds->data, fds->len, poll_timeout(s, !running));
        if (n < 0 && errno != EINTR)
            break; /* cannot happen with valid descriptors */
        for (guint j = 1; n > 0 && j < fds->len; j++) {
            struct pollfd *q = &g_array_index(fds, struct pollfd, j);
            if (q->revents) {
                int o = g_array_index(owners, int, j);
                read_output(&s->workers[o / 2], o % 2, FALSE);
            }
        }
        handle_signals(s);
        if (s->phase != PHASE_RUNNING && !s->gave_up && g_get_monotonic_time() >= s->deadline) {
            if (s->phase == PHASE_STOPPING) {
                if (any_running(s) || any_group_alive(s)) {
                    say(s, "processes are left after the grace period of %g s: sending SIGKILL",
                        s->options->grace_period_s);
                    kill_all(s);
                }
            } else {
                say(s, "processes of the workers' groups survive SIGKILL after %d s; giving up on them",
                    (int)(KILL_WAIT_US / G_USEC_PER_SEC));
                s->gave_up = TRUE; /* a worker still running is waited for: its exit status matters */
            }
        }
    }
    for (int i = 0; i < s->n; i++)
        for (int k = 0; k < 2; k++)
            if (s->workers[i].fd[k] >= 0) {
                read_output(&s->workers[i], k, TRUE);
                close_output(&s->workers[i], k);
            }
    g_array_unref(fds);
    g_array_unref(owners);
}

static void fill_result(const supervisor *s, rt_launch_result *result)
{
    result->failed_rank = -1;
    result->failed_status = 0;
    result->signal = s->signal;
    if (s->failed >= 0) {
        const worker *w = &s->workers[s->failed];
        result->failed_rank = w->rank;
        result->failed_status = w->status;
        result->exit_status = WIFEXITED(w->status) ? WEXITSTATUS(w->status) : 128 + WTERMSIG(w->status);
        g_autofree char *how = rt_launcher_describe_status(w->status);
        result->summary = g_strdup_printf("rank %d (pid %ld) %s", w->rank, (long)w->pid, how);
    } else if (s->signal) {
        result->exit_status = 128 + s->signal;
        result->summary = g_strdup_printf("stopped by %s", signal_name(s->signal));
    } else {
        result->exit_status = 0;
        result->summary = g_strdup_printf("%d worker%s exited with status 0", s->n, s->n == 1 ? "" : "s");
    }
}

gboolean rt_launcher_run(const rt_launch_plan *plan, const char *path, char **argv,
                         const rt_launch_options *options, rt_launch_result *result, GError **error)
{
    g_return_val_if_fail(plan != NULL && path != NULL && argv != NULL && argv[0] != NULL, FALSE);
    g_return_val_if_fail(options != NULL && result != NULL, FALSE);
    memset(result, 0, sizeof *result);
    saved_state saved;
    if (!install_handlers(&saved, error))
        return FALSE;

    supervisor s = {
        .plan = plan,
        .options = options,
        .workers = g_new0(worker, plan->local_world_size),
        .n = plan->local_world_size,
        .phase = PHASE_RUNNING,
        .failed = -1,
    };
    for (int i = 0; i < s.n; i++) {
        s.workers[i].rank = plan->first_rank + i;
        s.workers[i].fd[0] = s.workers[i].fd[1] = -1;
    }
    GError *spawn_error = NULL;
    for (int i = 0; i < s.n && !spawn_error; i++)
        if (!start_worker(&s, i, path, argv, &spawn_error) && i > 0)
            stop_all(&s, SIGTERM); /* the ones started */
    if (!spawn_error || s.phase != PHASE_RUNNING)
        supervise(&s);
    for (int i = 0; i < s.n; i++)
        for (int k = 0; k < 2; k++)
            close_output(&s.workers[i], k);
    restore_handlers(&saved);

    gboolean ok = spawn_error == NULL;
    if (ok)
        fill_result(&s, result);
    else
        g_propagate_error(error, spawn_error);
    g_free(s.workers);
    return ok;
}

/* ---------------------------------------------------------------- the program */

char *rt_launcher_find_program(const char *name, GError **error)
{
    g_return_val_if_fail(name != NULL, NULL);
    if (strchr(name, '/')) {
        if (g_file_test(name, G_FILE_TEST_IS_REGULAR) && access(name, X_OK) == 0)
            return g_strdup(name);
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND, "'%s' %s", name,
                    g_file_test(name, G_FILE_TEST_EXISTS) ? "is not an executable file" : "does not exist");
        return NULL;
    }
    char *path = g_find_program_in_path(name);
    if (!path)
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                    "'%s' was not found in PATH; the program to launch is any executable, looked up in PATH "
                    "(to train: robotrain launch [options] -- robotrain train [options])",
                    name);
    return path;
}
