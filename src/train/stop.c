/* Stopping a run cleanly on SIGINT and SIGTERM (see stop.h). */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

#include <robotrain/error.h>

#include "train/stop.h"

static volatile sig_atomic_t stop_signal;
static struct sigaction previous[2];
static gboolean installed;
static const int signals[2] = {SIGINT, SIGTERM};

static void on_signal(int sig)
{
    if (stop_signal) {
        /* the second one: give up on the checkpoint, die of the signal as usual */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    stop_signal = sig;
}

gboolean rt_train_stop_install(GError **error)
{
    stop_signal = 0;
    if (installed)
        return TRUE;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* a read or write in progress goes on; the loop checks the flag */
    for (int i = 0; i < 2; i++) {
        if (sigaction(signals[i], &sa, &previous[i]) != 0) {
            int e = errno;
            for (int k = 0; k < i; k++)
                sigaction(signals[k], &previous[k], NULL);
            g_set_error(error, RT_ERROR, RT_ERROR_FAILED, "cannot handle %s: %s", strsignal(signals[i]),
                        g_strerror(e));
            return FALSE;
        }
    }
    installed = TRUE;
    return TRUE;
}

void rt_train_stop_uninstall(void)
{
    if (!installed)
        return;
    for (int i = 0; i < 2; i++)
        sigaction(signals[i], &previous[i], NULL);
    installed = FALSE;
}

int rt_train_stop_requested(void)
{
    return stop_signal;
}

void rt_train_stop_clear(void)
{
    stop_signal = 0;
}
