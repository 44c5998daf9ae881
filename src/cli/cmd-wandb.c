/* robotrain wandb sync: send W&B runs written offline (or left over after an outage) to the
 * server, robotrain-wandb(1). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <glib.h>

#include <robotrain/robotrain.h>
#include <robotrain/wandb.h>

#include "cli/commands.h"

static const char usage[] =
    "usage: robotrain wandb sync DIR\n\n"
    "Sends the W&B runs kept in DIR (a run folder OUTPUT_DIR/wandb/run-ID, OUTPUT_DIR/wandb, or a\n"
    "training output folder) to the server: what the server already has is not sent again, and a\n"
    "finished run is marked finished. The server is WANDB_BASE_URL (default https://api.wandb.ai), the\n"
    "key WANDB_API_KEY or the ~/.netrc entry of the server's host.";

static void print_error(const char *message)
{
    g_auto(GStrv) lines = g_strsplit(message, "\n", -1);
    for (size_t i = 0; lines[i]; i++)
        fprintf(stderr, "robotrain wandb: %s\n", lines[i]);
}

int rt_cmd_wandb(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "%s\n", usage);
        return RT_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        printf("%s\n", usage);
        return RT_EXIT_OK;
    }
    if (strcmp(argv[1], "sync") != 0) {
        fprintf(stderr,
                "robotrain wandb: '%s' is not a subcommand of wandb (there is: sync).\n"
                "See 'robotrain wandb --help'.\n",
                argv[1]);
        return RT_EXIT_USAGE;
    }
    g_autoptr(rt_config) flags = rt_config_new("robotrain wandb sync");
    GError *error = NULL;
    g_auto(GStrv) rest = NULL;
    if (!rt_config_parse_args(flags, argc - 1, argv + 1, &rest, &error)) {
        print_error(error->message);
        g_error_free(error);
        return RT_EXIT_USAGE;
    }
    if (rt_config_handle_help(flags, usage, stdout))
        return RT_EXIT_OK;
    if (!rest || !rest[0] || rest[1]) {
        fprintf(stderr, "robotrain wandb sync: give one folder (DIR).\nSee 'robotrain wandb --help'.\n");
        return RT_EXIT_USAGE;
    }
    if (!g_file_test(rest[0], G_FILE_TEST_IS_DIR)) {
        fprintf(stderr,
                "robotrain wandb sync: %s is not a folder (give OUTPUT_DIR, OUTPUT_DIR/wandb or a run "
                "folder)\n",
                rest[0]);
        return RT_EXIT_FAILURE;
    }
    guint n = 0;
    if (!rt_wandb_sync(rest[0], NULL, &n, &error)) {
        print_error(error->message);
        g_error_free(error);
        return RT_EXIT_FAILURE;
    }
    if (n == 0)
        printf("Nothing to send: the server has every run in %s\n", rest[0]);
    else
        printf("Sent %u run%s from %s\n", n, n == 1 ? "" : "s", rest[0]);
    return RT_EXIT_OK;
}
