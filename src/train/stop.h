/* src/train/stop.h: stopping a run cleanly on SIGINT and SIGTERM.
 *
 * The handler only records the signal; the training loop checks rt_train_stop_requested() after
 * each step, writes a checkpoint at the current step and exits. A second signal while the first
 * is being handled ends the process at once with the default action (Ctrl-C twice to give up
 * on the checkpoint). Under robotrain launch every worker gets the signal: the loop must agree
 * on stopping across ranks (an all-reduce of the flag) so that all of them stop at the same step. */
#ifndef ROBOTRAIN_TRAIN_STOP_H
#define ROBOTRAIN_TRAIN_STOP_H

#include <glib.h>

G_BEGIN_DECLS

/* Installs the handlers for SIGINT and SIGTERM (saving the previous ones) and clears the flag.
 * Fails (RT_ERROR_FAILED) when sigaction does. */
gboolean rt_train_stop_install(GError **error);

/* Restores the handlers rt_train_stop_install() replaced. */
void rt_train_stop_uninstall(void);

/* The signal that asked to stop (SIGINT, SIGTERM), or 0. Async-signal-safe to read. */
int rt_train_stop_requested(void);

/* Clears the flag (after a stop was handled, or in tests). */
void rt_train_stop_clear(void);

G_END_DECLS

#endif
