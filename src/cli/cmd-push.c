/* robotrain push: upload a trained policy (a checkpoint's pretrained_model) to the Hugging Face
 * Hub as LeRobot's --policy.push_to_hub does, robotrain-push(1). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <glib.h>

#include <robotrain/robotrain.h>

#include "cli/commands.h"
#include "train/train-hub.h"

static const rt_option push_options[] = {
    {.key = "private",
     .type = RT_OPT_BOOL,
     .flags = RT_OPT_NULLABLE,
     .help = "Create the repository private (an existing one keeps its visibility); null: the checkpoint's "
             "policy.private, else public."},
    {.key = "tags",
     .type = RT_OPT_LIST,
     .item_type = RT_OPT_STRING,
     .flags = RT_OPT_NULLABLE,
     .help = "Tags of the model card, added to robotics, lerobot and the policy type; null: the checkpoint's "
             "policy.tags."},
    {.key = "license",
     .type = RT_OPT_STRING,
     .flags = RT_OPT_NULLABLE,
     .help = "License of the model card; null: the checkpoint's policy.license, else apache-2.0."},
    {.key = "revision",
     .type = RT_OPT_STRING,
     .flags = RT_OPT_NULLABLE,
     .null_text = "main",
     .help = "The branch to commit to."},
    {.key = "commit_message",
     .type = RT_OPT_STRING,
     .flags = RT_OPT_NULLABLE,
     .help = "The commit's summary; null: LeRobot's \"Upload policy weights, train config and readme\"."},
};

static const char usage[] =
    "usage: robotrain push DIR REPO_ID [--private=BOOL] [--tags=TAG,...] [--license=TEXT] "
    "[--revision=BRANCH]\n\n"
    "Uploads the policy in DIR (a pretrained_model folder, a checkpoint folder or a training output\n"
    "folder, whose checkpoints/last is taken) to the Hub model repository REPO_ID (owner/name), as\n"
    "lerobot-train --policy.push_to_hub does: config.json, model.safetensors, train_config.json, the\n"
    "processor files and a model card, in one commit. The token comes from HF_TOKEN or the token file.";

static void print_error(const char *message)
{
    g_auto(GStrv) lines = g_strsplit(message, "\n", -1);
    for (size_t i = 0; lines[i]; i++)
        fprintf(stderr, "robotrain push: %s\n", lines[i]);
}

int rt_cmd_push(int argc, char **argv)
{
    g_autoptr(rt_config) flags = rt_config_new("robotrain push");
    GError *error = NULL;
    if (!rt_config_add_options(flags, NULL, push_options, G_N_ELEMENTS(push_options), &error))
        g_error("robotrain push: the option table is malformed: %s", error->message); /* a bug */
    g_auto(GStrv) rest = NULL;
    if (!rt_config_parse_args(flags, argc, argv, &rest, &error)) {
        print_error(error->message);
        g_error_free(error);
        return RT_EXIT_USAGE;
    }
    if (rt_config_handle_help(flags, usage, stdout))
        return RT_EXIT_OK;
    if (!rest || !rest[0] || !rest[1] || rest[2]) {
        fprintf(stderr,
                "robotrain push: give the policy folder and the repository: robotrain push DIR REPO_ID%s%s\n"
                "See 'robotrain push --help'.\n",
                rest && rest[0] && rest[1] && rest[2] ? "; unexpected " : "",
                rest && rest[0] && rest[1] && rest[2] ? rest[2] : "");
        return RT_EXIT_USAGE;
    }
    if (!rt_hub_check_repo_id(rest[1], &error)) {
        print_error(error->message);
        g_error_free(error);
        return RT_EXIT_USAGE;
    }
    g_autofree char *folder = rt_train_hub_find_pretrained(rest[0], &error);
    if (!folder) {
        print_error(error->message);
        g_error_free(error);
        return RT_EXIT_FAILURE;
    }
    gboolean private_repo = FALSE;
    if (!rt_config_is_null(flags, "private"))
        private_repo = rt_config_get_bool(flags, "private");
    g_auto(GStrv) tags = rt_config_is_null(flags, "tags") ? NULL : rt_config_get_string_list(flags, "tags");
    rt_train_push_args a = {
        .folder = folder,
        .repo_id = rest[1],
        .private_repo = rt_config_is_null(flags, "private") ? NULL : &private_repo,
        .tags = (const char *const *)tags,
        .license = rt_config_is_null(flags, "license") ? NULL : rt_config_get_string(flags, "license"),
        .revision = rt_config_is_null(flags, "revision") ? NULL : rt_config_get_string(flags, "revision"),
        .commit_message =
            rt_config_is_null(flags, "commit_message") ? NULL : rt_config_get_string(flags, "commit_message"),
        .progress = stderr,
    };
    rt_hub_commit *commit = rt_train_hub_push(&a, NULL, &error);
    if (!commit) {
        print_error(error->message);
        g_error_free(error);
        return RT_EXIT_FAILURE;
    }
    if (commit->commit_url)
        printf("Pushed %s to %s: %u files (%u through LFS, %u uploaded, %u unchanged)\n%s\n", folder,
               commit->repo_url, commit->n_files, commit->n_lfs, commit->n_uploaded, commit->n_unchanged,
               commit->commit_url);
    else
        printf("%s is already on the Hub as it is (%s): nothing to commit\n", folder, commit->repo_url);
    rt_hub_commit_free(commit);
    return RT_EXIT_OK;
}
