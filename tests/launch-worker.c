/* tests/launch-worker.c: a worker for the tests of robotrain launch (tests/launch-*.sh).
 *
 *   launch-worker --dir=DIR [--sleep=S] [--exit=N] [--fail-rank=R --fail-after=S
 *                 (--fail-status=N | --fail-signal=N)] [--ignore-signals] [--child] [--print=TEXT]
 *
 * It writes, atomically (temporary file + rename), in DIR:
 *   env.RANK      the launcher variables, one "NAME=value" (or "NAME unset") per line, then
 *                 "pgid=self" when it leads its own process group and "stdin=/dev/null" when its
 *                 stdin is /dev/null (else "pgid=other", "stdin=other");
 *   pid.RANK      its process id;
 *   child.RANK    with --child, the id of a child it started, which sleeps in the same process
 *                 group until a signal ends it;
 *   signal.RANK   when SIGTERM, SIGINT or SIGHUP arrives: the signal's number. The worker then
 *                 exits with 128 + that number, unless --ignore-signals (it, and its child,
 *                 then go on).
 * Then it prints TEXT lines (--print: "TEXT from rank R" on stdout, "TEXT on stderr" on stderr,
 * then a last line without newline), and either fails (the rank given by --fail-rank, after
 * --fail-after seconds: exit status --fail-status, or killed by signal --fail-signal) or sleeps
 * --sleep seconds (negative: until a signal) and exits with --exit (0).
 * It uses only libc, so its pid is that of the process the launcher started. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *dir;
static int rank = -1;
static int ignore_signals;
static char signal_path[4096];

static void write_file(const char *name, const char *text)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s.%d", dir, name, rank);
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "launch-worker: cannot write %s: %s\n", path, strerror(errno));
        exit(99);
    }
}

/* Only async-signal-safe calls. */
static void on_signal(int signo)
{
    char text[16];
    int n = 0, v = signo;
    char digits[8];
    int k = 0;
    do {
        digits[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v && k < 8);
    while (k)
        text[n++] = digits[--k];
    text[n++] = '\n';
    int fd = open(signal_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        if (write(fd, text, (size_t)n) < 0) {
            /* nothing to do in a handler */
        }
        close(fd);
    }
    if (!ignore_signals)
        _exit(128 + signo);
}

static void sleep_seconds(double s)
{
    if (s < 0) {
        for (;;)
            pause();
    }
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

static int is_dev_null(int fd)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat("/dev/null", &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
           a.st_rdev == b.st_rdev;
}

static const char *value_of(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && arg[n] == '=' ? arg + n + 1 : NULL;
}

int main(int argc, char **argv)
{
    double sleep_s = 0, fail_after = 0;
    int exit_status = 0, fail_rank = -1, fail_status = 1, fail_signal = 0, child = 0;
    const char *print = NULL, *v;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((v = value_of(a, "--dir")))
            dir = v;
        else if ((v = value_of(a, "--sleep")))
            sleep_s = atof(v);
        else if ((v = value_of(a, "--exit")))
            exit_status = atoi(v);
        else if ((v = value_of(a, "--fail-rank")))
            fail_rank = atoi(v);
        else if ((v = value_of(a, "--fail-after")))
            fail_after = atof(v);
        else if ((v = value_of(a, "--fail-status")))
            fail_status = atoi(v);
        else if ((v = value_of(a, "--fail-signal")))
            fail_signal = atoi(v);
        else if ((v = value_of(a, "--print")))
            print = v;
        else if (strcmp(a, "--ignore-signals") == 0)
            ignore_signals = 1;
        else if (strcmp(a, "--child") == 0)
            child = 1;
        else {
            fprintf(stderr, "launch-worker: unknown argument '%s'\n", a);
            return 99;
        }
    }
    const char *r = getenv("RANK");
    if (!dir || !r) {
        fprintf(stderr, "launch-worker: needs --dir=DIR and RANK in the environment\n");
        return 99;
    }
    rank = atoi(r);
    snprintf(signal_path, sizeof signal_path, "%s/signal.%d", dir, rank);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    static const char *const names[] = {
        "RANK",
        "LOCAL_RANK",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "GROUP_RANK",
        "GROUP_WORLD_SIZE",
        "MASTER_ADDR",
        "MASTER_PORT",
        "ROBOTRAIN_STORE_PORT",
        "ROBOTRAIN_STORE_HOSTED",
        "ROBOTRAIN_RUN_ID",
        "ROBOTRAIN_MIXED_PRECISION",
        "OMP_NUM_THREADS",
        "CUDA_VISIBLE_DEVICES",
    };
    char env[8192];
    size_t used = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *value = getenv(names[i]);
        used += (size_t)snprintf(env + used, sizeof env - used, value ? "%s=%s\n" : "%s unset\n", names[i],
                                 value ? value : "");
    }
    snprintf(env + used, sizeof env - used, "pgid=%s\nstdin=%s\n", getpgrp() == getpid() ? "self" : "other",
             is_dev_null(0) ? "/dev/null" : "other");

    if (child) {
        pid_t pid = fork();
        if (pid < 0)
            return 99;
        if (pid == 0) {
            if (!ignore_signals) {
                signal(SIGTERM, SIG_DFL);
                signal(SIGINT, SIG_DFL);
                signal(SIGHUP, SIG_DFL);
            } else {
                signal(SIGTERM, SIG_IGN);
                signal(SIGINT, SIG_IGN);
                signal(SIGHUP, SIG_IGN);
            }
            for (;;)
                pause();
        }
        char text[32];
        snprintf(text, sizeof text, "%ld\n", (long)pid);
        write_file("child", text);
    }
    char text[32];
    snprintf(text, sizeof text, "%ld\n", (long)getpid());
    write_file("env", env);
    write_file("pid", text);

    if (print) {
        printf("%s from rank %d\n", print, rank);
        fflush(stdout);
        fprintf(stderr, "%s on stderr\n", print);
        printf("%s without newline", print);
        fflush(stdout);
    }
    if (rank == fail_rank) {
        sleep_seconds(fail_after);
        if (fail_signal) {
            signal(fail_signal, SIG_DFL);
            kill(getpid(), fail_signal);
        }
        return fail_status;
    }
    sleep_seconds(sleep_s);
    return exit_status;
}
