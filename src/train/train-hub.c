/* robotrain train and robotrain push on the Hub: the dataset by repo id, the policy push
 * (see train-hub.h). */
#include "config.h"

#include <string.h>

#include <json-glib/json-glib.h>

#include <robotrain/error.h>
#include <robotrain/world.h>

#include "data/dataset-private.h" /* the episodes' file indices, to download only their files */

#include "train/train-hub.h"
#include "train/train-run.h"

gboolean rt_train_is_main_process(void)
{
    rt_world world; /* RANK, OMPI_COMM_WORLD_RANK or SLURM_PROCID; unreadable: a process alone */
    return !rt_world_from_env(&world, NULL) || world.rank == 0;
}

static gboolean has_info(const char *folder)
{
    g_autofree char *info = g_build_filename(folder, "meta", "info.json", NULL);
    return g_file_test(info, G_FILE_TEST_IS_REGULAR);
}

/* The data and video files of the selected episodes of the dataset whose metadata is in folder,
 * relative to it, each once, as LeRobot's get_episodes_file_paths() lists them. */
static GPtrArray *episode_files(const char *folder, const int64_t *episodes, size_t n, GError **error)
{
    rt_dataset_options o;
    rt_dataset_options_init(&o);
    o.episodes = episodes;
    o.n_episodes = n;
    o.load_frames = FALSE;
    rt_dataset *ds = rt_dataset_open(folder, &o, error);
    if (!ds)
        return NULL;
    GPtrArray *files = g_ptr_array_new_with_free_func(g_free);
    GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
    gboolean v3 = ds->info->version_major >= 3;
    for (int64_t k = 0; k < ds->n_selected; k++) {
        const rt_episode *e = &ds->episodes[ds->selected[k]];
        const rt_meta_episode *m = &g_array_index(ds->meta_eps->episodes, rt_meta_episode, ds->selected[k]);
        static const char *const v3_names[] = {"chunk_index", "file_index"};
        static const char *const v2_names[] = {"episode_chunk", "episode_index"};
        for (int c = -1; c < (ds->info->video_path ? ds->n_cameras : 0); c++) {
            int64_t ints[2] = {e->data_chunk, v3 ? e->data_file : e->episode_index};
            if (c >= 0 && v3) {
                ints[0] = m->video_chunk[c];
                ints[1] = m->video_file[c];
            }
            const char *camera = c >= 0 ? rt_dataset_feature(ds, ds->camera_feature[c])->name : NULL;
            char *path = rt_dataset_expand_template(c >= 0 ? ds->info->video_path : ds->info->data_path,
                                                    v3 ? v3_names : v2_names, ints, 2, camera, NULL);
            if (path && !g_hash_table_contains(seen, path)) {
                g_hash_table_add(seen, path);
                g_ptr_array_add(files, path);
            } else {
                g_free(path);
            }
        }
    }
    g_hash_table_unref(seen);
    rt_dataset_free(ds);
    return files;
}

char *rt_train_hub_download_dataset(const char *repo_id, const char *revision, const char *root,
                                    const int64_t *episodes, size_t n_episodes, gboolean offline,
                                    FILE *progress, GError **error)
{
    g_autoptr(GError) local = NULL;
    rt_hub_config *config = rt_hub_config_new_from_env(&local);
    rt_hub *hub = NULL;
    char *folder = NULL;
    if (config) {
        config->offline = config->offline || offline;
        hub = rt_hub_new(config, &local);
        rt_hub_config_free(config);
    }
    if (hub) {
        rt_hub_tty_progress *bar = rt_hub_tty_progress_attach(hub, progress);
        if (!episodes) {
            folder = rt_hub_dataset_download(hub, repo_id, revision, NULL, root, NULL, &local);
        } else {
            /* LeRobot's way: the metadata first, then the files of the episodes it lists */
            static const char *const meta[] = {"meta/", NULL};
            g_autofree char *used = NULL;
            g_autofree char *meta_folder =
                rt_hub_dataset_download(hub, repo_id, revision, meta, root, &used, &local);
            GPtrArray *files = meta_folder ? episode_files(meta_folder, episodes, n_episodes, &local) : NULL;
            if (files) {
                g_ptr_array_add(files, NULL);
                folder = rt_hub_dataset_download(hub, repo_id, used, (const char *const *)files->pdata, root,
                                                 NULL, &local);
                g_ptr_array_unref(files);
            }
        }
        rt_hub_tty_progress_detach(bar);
        rt_hub_free(hub);
    }
    if (!folder)
        g_propagate_error(error, g_steal_pointer(&local));
    return folder;
}

/* The download of cfg's dataset (or, with offline, the lookup in the cache). */
static char *fetch(const rt_config *cfg, gboolean offline, FILE *progress, GError **error)
{
    const char *root = rt_config_get_string(cfg, "dataset.root");
    const char *revision =
        rt_config_is_null(cfg, "dataset.revision") ? NULL : rt_config_get_string(cfg, "dataset.revision");
    rt_dataset_options o;
    g_autofree int64_t *episodes = NULL;
    rt_dataset_options_from_config(cfg, "dataset", &o, &episodes);
    const char *repo_id = rt_config_get_string(cfg, "dataset.repo_id");
    GError *local = NULL;
    char *folder = rt_train_hub_download_dataset(repo_id, revision, root, o.episodes, o.n_episodes, offline,
                                                 progress, &local);
    if (!folder) {
        g_set_error(error, RT_ERROR, local->code,
                    "--dataset.repo_id=%s: %s\n(or pass --dataset.root=FOLDER, a LeRobot dataset holding "
                    "meta/info.json)",
                    repo_id, local->message);
        g_error_free(local);
    }
    return folder;
}

char *rt_train_hub_dataset_folder(const rt_config *cfg, gboolean is_main, rt_train_wait_func wait,
                                  void *wait_data, FILE *progress, GError **error)
{
    const char *root = rt_config_get_string(cfg, "dataset.root");
    const char *repo_id = rt_config_get_string(cfg, "dataset.repo_id");
    if (root && has_info(root))
        return g_strdup(root);
    if (!root) {
        g_autofree char *home = rt_train_lerobot_home();
        g_autofree char *legacy = g_build_filename(home, repo_id, NULL);
        if (has_info(legacy))
            return g_steal_pointer(&legacy);
    }
    if (!is_main) {
        /* rank 0 downloads; then this process finds the same files in the cache */
        if (wait && !wait(wait_data, TRUE, error))
            return NULL;
        if (root && has_info(root))
            return g_strdup(root);
        return fetch(cfg, TRUE, NULL, error);
    }
    GError *local = NULL;
    char *folder = fetch(cfg, FALSE, progress, &local);
    if (wait) {
        gboolean ok = wait(wait_data, folder != NULL, NULL);
        if (folder && !ok) {
            g_free(folder);
            g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                        "--dataset.repo_id=%s: the other processes did not get the dataset", repo_id);
            return NULL;
        }
    }
    if (!folder)
        g_propagate_error(error, local);
    return folder;
}

/* ---------------------------------------------------------------- push */

static gboolean has_file(const char *dir, const char *name)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);
    return g_file_test(path, G_FILE_TEST_IS_REGULAR);
}

char *rt_train_hub_find_pretrained(const char *dir, GError **error)
{
    const char *const tails[][3] = {
        {NULL}, {"pretrained_model", NULL}, {"checkpoints", "last", "pretrained_model"}};
    for (size_t i = 0; i < G_N_ELEMENTS(tails); i++) {
        g_autofree char *candidate = g_build_filename(dir, tails[i][0], tails[i][1], tails[i][2], NULL);
        if (has_file(candidate, "config.json") && has_file(candidate, "model.safetensors"))
            return g_steal_pointer(&candidate);
    }
    g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                "%s holds no policy: give a pretrained_model folder (config.json and model.safetensors), a "
                "checkpoint folder (OUTPUT_DIR/checkpoints/STEP) or a training output folder",
                dir);
    return NULL;
}

/* A JSON file of the folder, or NULL when it is absent or not an object. */
static JsonNode *load_json(const char *folder, const char *name, GError **error)
{
    g_autofree char *path = g_build_filename(folder, name, NULL);
    if (!g_file_test(path, G_FILE_TEST_EXISTS))
        return NULL;
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) local = NULL;
    if (!json_parser_load_from_file(parser, path, &local)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: %s", path, local->message);
        return NULL;
    }
    JsonNode *root = json_parser_steal_root(parser);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
        if (root)
            json_node_unref(root);
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: not a JSON object", path);
        return NULL;
    }
    return root;
}

/* The member at a dotted path ("policy.tags"), or NULL. */
static JsonNode *member(JsonNode *root, const char *path)
{
    g_auto(GStrv) parts = g_strsplit(path, ".", -1);
    JsonNode *node = root;
    for (size_t i = 0; node && parts[i]; i++) {
        if (!JSON_NODE_HOLDS_OBJECT(node))
            return NULL;
        JsonObject *o = json_node_get_object(node);
        node = json_object_has_member(o, parts[i]) ? json_object_get_member(o, parts[i]) : NULL;
    }
    return node;
}

static const char *string_at(JsonNode *root, const char *path)
{
    JsonNode *n = root ? member(root, path) : NULL;
    return n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING
               ? json_node_get_string(n)
               : NULL;
}

rt_hub_commit *rt_train_hub_push(const rt_train_push_args *a, char **card_out, GError **error)
{
    if (card_out)
        *card_out = NULL;
    if (!rt_hub_check_repo_id(a->repo_id, error))
        return NULL;
    GError *local = NULL;
    JsonNode *train = load_json(a->folder, "train_config.json", &local);
    JsonNode *policy = local ? NULL : load_json(a->folder, "config.json", &local);
    if (local) {
        if (train)
            json_node_unref(train);
        g_propagate_error(error, local);
        return NULL;
    }
    const char *type = string_at(policy, "type");
    if (!type)
        type = string_at(train, "policy.type");
    gboolean private_repo = FALSE;
    JsonNode *p = train ? member(train, "policy.private") : NULL;
    if (a->private_repo)
        private_repo = *a->private_repo;
    else if (p && JSON_NODE_HOLDS_VALUE(p) && json_node_get_value_type(p) == G_TYPE_BOOLEAN)
        private_repo = json_node_get_boolean(p);
    GPtrArray *tags = g_ptr_array_new();
    if (a->tags) {
        for (const char *const *t = a->tags; *t; t++)
            g_ptr_array_add(tags, (gpointer)*t);
    } else if ((p = train ? member(train, "policy.tags") : NULL) && JSON_NODE_HOLDS_ARRAY(p)) {
        JsonArray *arr = json_node_get_array(p);
        for (guint i = 0; i < json_array_get_length(arr); i++) {
            JsonNode *e = json_array_get_element(arr, i);
            if (JSON_NODE_HOLDS_VALUE(e) && json_node_get_value_type(e) == G_TYPE_STRING)
                g_ptr_array_add(tags, (gpointer)json_node_get_string(e));
        }
    }
    g_ptr_array_add(tags, NULL);
    rt_hub_model_card card = {
        .policy_type = type,
        .repo_id = a->repo_id,
        .license = a->license ? a->license : string_at(train, "policy.license"),
        .dataset_repo_id = string_at(train, "dataset.repo_id"),
        .tags = (const char *const *)tags->pdata,
    };
    char *readme = rt_hub_model_card_render(&card, NULL);
    g_ptr_array_unref(tags);
    if (train)
        json_node_unref(train);
    if (policy)
        json_node_unref(policy);

    rt_hub_commit *commit = NULL;
    rt_hub *hub = rt_hub_new(NULL, error);
    if (hub) {
        static const char *const allow[] = {"*.json", "*.safetensors", "*.yaml", "*.md", NULL};
        /* the card is written from the metadata; a README.md in the folder would be a second one */
        static const char *const ignore[] = {"README.md", NULL};
        rt_hub_push_blob blob = {"README.md", readme, strlen(readme)};
        rt_hub_push_options o = {
            .type = RT_HUB_MODEL,
            .repo_id = a->repo_id,
            .private_repo = private_repo,
            .revision = a->revision,
            .folder = a->folder,
            .allow_patterns = allow,
            .ignore_patterns = ignore,
            .blobs = &blob,
            .n_blobs = 1,
            .commit_message =
                a->commit_message ? a->commit_message : "Upload policy weights, train config and readme",
        };
        rt_hub_tty_progress *bar = rt_hub_tty_progress_attach(hub, a->progress);
        commit = rt_hub_push_folder(hub, &o, error);
        rt_hub_tty_progress_detach(bar);
        rt_hub_free(hub);
    }
    if (commit && card_out)
        *card_out = g_steal_pointer(&readme);
    g_free(readme);
    return commit;
}

gboolean rt_train_hub_push_at_end(const rt_config *cfg, const char *last_checkpoint, FILE *out,
                                  GError **error)
{
    if (!rt_config_lookup(cfg, "policy.push_to_hub") || !rt_config_get_bool(cfg, "policy.push_to_hub"))
        return TRUE;
    g_autofree char *checkpoint = last_checkpoint ? g_strdup(last_checkpoint)
                                                  : g_build_filename(rt_config_get_string(cfg, "output_dir"),
                                                                     "checkpoints", "last", NULL);
    g_autofree char *folder = g_build_filename(checkpoint, "pretrained_model", NULL);
    if (!has_file(folder, "model.safetensors")) {
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                    "--policy.push_to_hub=true: no checkpoint to push (%s has no model.safetensors); train "
                    "with --save_checkpoint=true, or push a checkpoint later with robotrain push DIR REPO_ID",
                    folder);
        return FALSE;
    }
    g_auto(GStrv) tags =
        rt_config_is_null(cfg, "policy.tags") ? NULL : rt_config_get_string_list(cfg, "policy.tags");
    gboolean private_repo =
        !rt_config_is_null(cfg, "policy.private") && rt_config_get_bool(cfg, "policy.private");
    rt_train_push_args a = {
        .folder = folder,
        .repo_id = rt_config_get_string(cfg, "policy.repo_id"),
        .private_repo = &private_repo,
        .tags = (const char *const *)tags,
        .license =
            rt_config_is_null(cfg, "policy.license") ? NULL : rt_config_get_string(cfg, "policy.license"),
        .progress = out,
    };
    GError *local = NULL;
    rt_hub_commit *commit = rt_train_hub_push(&a, NULL, &local);
    if (!commit) {
        g_set_error(
            error, RT_ERROR, local->code,
            "--policy.push_to_hub=true: %s\nThe checkpoint is kept: push it again with robotrain push %s %s",
            local->message, folder, a.repo_id);
        g_error_free(local);
        return FALSE;
    }
    if (out) {
        if (commit->commit_url)
            fprintf(out, "Pushed the policy to %s (%u files, %u through LFS): %s\n", commit->repo_url,
                    commit->n_files, commit->n_lfs, commit->commit_url);
        else
            fprintf(out, "The policy at %s is already on the Hub as it is: nothing to commit\n",
                    commit->repo_url);
        fflush(out);
    }
    rt_hub_commit_free(commit);
    return TRUE;
}
