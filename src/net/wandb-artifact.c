/* W&B artifacts: the files of a checkpoint logged as an artifact of the run, the way the W&B SDK's
 * artifact saver does it (createArtifact with the manifest digest; createArtifactManifest;
 * createArtifactFiles for signed upload URLs; a PUT of every file with its Content-MD5;
 * updateArtifactManifest for the manifest's own upload URL and its PUT; commitArtifact).
 *
 * Uploads run on this file's own thread, one artifact after the other, so that neither the
 * training loop nor the metrics thread waits for a large file: the training thread only queues
 * the request. A request that fails for a transient reason (refused connection, 429, 5xx, a
 * timeout) is retried with the run's backoff, up to WB_ARTIFACT_ATTEMPTS times; every other failure
 * gives a warning naming the artifact and the file, and the next artifact is tried. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "net/net-init.h"
#include "net/wandb-private.h"
#include <robotrain/version.h>

#define WB_ARTIFACT_ATTEMPTS 6
#define WB_MANIFEST_NAME "wandb_manifest.json"

/* ---------------------------------------------------------------- digests and the manifest */

gboolean rt_wandb_file_md5(const char *path, char **b64_md5, gint64 *size, GError **error)
{
    FILE *f = g_fopen(path, "rb");
    if (!f) {
        int e = errno;
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot read %s for the W&B artifact: %s", path, g_strerror(e));
        return FALSE;
    }
    GChecksum *md5 = g_checksum_new(G_CHECKSUM_MD5);
    guchar buf[1 << 16];
    gint64 total = 0;
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        g_checksum_update(md5, buf, n);
        total += (gint64)n;
    }
    gboolean ok = !ferror(f);
    int e = errno;
    fclose(f);
    if (!ok) {
        g_checksum_free(md5);
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot read %s for the W&B artifact: %s", path, g_strerror(e));
        return FALSE;
    }
    guint8 digest[16];
    gsize len = sizeof digest;
    g_checksum_get_digest(md5, digest, &len);
    g_checksum_free(md5);
    *b64_md5 = g_base64_encode(digest, len);
    *size = total;
    return TRUE;
}

static int compare_entry_names(gconstpointer a, gconstpointer b)
{
    const rt_wandb_artifact_entry *x = *(const rt_wandb_artifact_entry *const *)a;
    const rt_wandb_artifact_entry *y = *(const rt_wandb_artifact_entry *const *)b;
    return strcmp(x->name, y->name);
}

/* The entries sorted by name (byte order, as Python's sorted() on str keys of ASCII names). */
static GPtrArray *sorted_entries(const rt_wandb_artifact_entry *entries, size_t n)
{
    GPtrArray *sorted = g_ptr_array_sized_new((guint)n);
    for (size_t i = 0; i < n; i++)
        g_ptr_array_add(sorted, (gpointer)&entries[i]);
    g_ptr_array_sort(sorted, compare_entry_names);
    return sorted;
}

char *rt_wandb_artifact_digest(const rt_wandb_artifact_entry *entries, size_t n)
{
    /* W&B's MANIFEST_MD5: md5 over a fixed first line and "name:digest\n" per entry by name,
     * in hex (the entries' own digests are base64). */
    GChecksum *md5 = g_checksum_new(G_CHECKSUM_MD5);
    static const char head[] = "wandb-artifact-manifest-v1\n";
    g_checksum_update(md5, (const guchar *)head, sizeof head - 1);
    g_autoptr(GPtrArray) sorted = sorted_entries(entries, n);
    for (guint i = 0; i < sorted->len; i++) {
        const rt_wandb_artifact_entry *e = sorted->pdata[i];
        g_autofree char *line = g_strdup_printf("%s:%s\n", e->name, e->md5);
        g_checksum_update(md5, (const guchar *)line, strlen(line));
    }
    char *hex = g_strdup(g_checksum_get_string(md5));
    g_checksum_free(md5);
    return hex;
}

char *rt_wandb_artifact_manifest(const rt_wandb_artifact_entry *entries, size_t n)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "version");
    json_builder_add_int_value(b, 1);
    json_builder_set_member_name(b, "storagePolicy");
    json_builder_add_string_value(b, "wandb-storage-policy-v1");
    json_builder_set_member_name(b, "storagePolicyConfig");
    json_builder_begin_object(b);
    json_builder_end_object(b);
    json_builder_set_member_name(b, "contents");
    json_builder_begin_object(b);
    g_autoptr(GPtrArray) sorted = sorted_entries(entries, n);
    for (guint i = 0; i < sorted->len; i++) {
        const rt_wandb_artifact_entry *e = sorted->pdata[i];
        json_builder_set_member_name(b, e->name);
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "digest");
        json_builder_add_string_value(b, e->md5);
        if (e->birth_artifact_id) {
            json_builder_set_member_name(b, "birthArtifactID");
            json_builder_add_string_value(b, e->birth_artifact_id);
        }
        json_builder_set_member_name(b, "size");
        json_builder_add_int_value(b, e->size);
        json_builder_end_object(b);
    }
    json_builder_end_object(b);
    json_builder_end_object(b);
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    return json_to_string(root, FALSE);
}

/* ---------------------------------------------------------------- GraphQL */

/* POSTs {"query", "variables"} (variables: a finished object node, consumed) through
 * wb_graphql_send and returns the answer's "data" object. */
static wb_result gql(wb_http *http, const char *query, JsonNode *variables, const char *what, JsonParser **parser,
                     JsonObject **data, GError **error)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "query");
    json_builder_add_string_value(b, query);
    json_builder_set_member_name(b, "variables");
    json_builder_add_value(b, variables);
    json_builder_end_object(b);
    return wb_graphql_send(http, b, what, parser, data, error);
}

static void set_string(JsonBuilder *b, const char *key, const char *value)
{
    json_builder_set_member_name(b, key);
    if (value)
        json_builder_add_string_value(b, value);
    else
        json_builder_add_null_value(b);
}

static void set_bool(JsonBuilder *b, const char *key, gboolean value)
{
    json_builder_set_member_name(b, key);
    json_builder_add_boolean_value(b, value);
}

static JsonNode *finish_object(JsonBuilder *b)
{
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

static const char create_artifact_query[] =
    "mutation CreateArtifact($artifactTypeName: String!, $artifactCollectionNames: [String!], "
    "$entityName: String!, $projectName: String!, $runName: String, $description: String, $digest: String!, "
    "$aliases: [ArtifactAliasInput!], $metadata: JSONString, $clientID: ID!, $sequenceClientID: ID!, "
    "$enableDigestDeduplication: Boolean) {\n"
    "  createArtifact(input: {artifactTypeName: $artifactTypeName, artifactCollectionNames: "
    "$artifactCollectionNames, entityName: $entityName, projectName: $projectName, runName: $runName, "
    "description: $description, digest: $digest, digestAlgorithm: MANIFEST_MD5, aliases: $aliases, "
    "metadata: $metadata, clientID: $clientID, sequenceClientID: $sequenceClientID, "
    "enableDigestDeduplication: $enableDigestDeduplication}) {\n"
    "    artifact { id digest state aliases { artifactCollectionName alias } "
    "artifactSequence { id latestArtifact { id versionIndex } } }\n"
    "  }\n"
    "}\n";

static const char create_manifest_query[] =
    "mutation CreateArtifactManifest($name: String!, $digest: String!, $artifactID: ID!, $baseArtifactID: ID, "
    "$entityName: String!, $projectName: String!, $runName: String!, $includeUpload: Boolean!) {\n"
    "  createArtifactManifest(input: {name: $name, digest: $digest, artifactID: $artifactID, baseArtifactID: "
    "$baseArtifactID, entityName: $entityName, projectName: $projectName, runName: $runName}) {\n"
    "    artifactManifest { id file { id name displayName uploadUrl @include(if: $includeUpload) "
    "uploadHeaders @include(if: $includeUpload) } }\n"
    "  }\n"
    "}\n";

static const char update_manifest_query[] =
    "mutation UpdateArtifactManifest($artifactManifestID: ID!, $digest: String, $baseArtifactID: ID, "
    "$includeUpload: Boolean!) {\n"
    "  updateArtifactManifest(input: {artifactManifestID: $artifactManifestID, digest: $digest, "
    "baseArtifactID: $baseArtifactID}) {\n"
    "    artifactManifest { id file { id name displayName uploadUrl @include(if: $includeUpload) "
    "uploadHeaders @include(if: $includeUpload) } }\n"
    "  }\n"
    "}\n";

static const char create_files_query[] =
    "mutation CreateArtifactFiles($storageLayout: ArtifactStorageLayout!, "
    "$artifactFiles: [CreateArtifactFileSpecInput!]!) {\n"
    "  createArtifactFiles(input: {artifactFiles: $artifactFiles, storageLayout: $storageLayout}) {\n"
    "    files { edges { node { id name displayName uploadUrl uploadHeaders artifact { id } } } }\n"
    "  }\n"
    "}\n";

static const char commit_query[] =
    "mutation CommitArtifact($artifactID: ID!) {\n"
    "  commitArtifact(input: {artifactID: $artifactID}) { artifact { id digest } }\n"
    "}\n";

/* ---------------------------------------------------------------- the upload of one file */

typedef struct {
    FILE *f;
    const gint *abort_flag;
} put_source;

static size_t read_file_cb(char *buf, size_t size, size_t nmemb, void *user)
{
    put_source *src = user;
    size_t n = fread(buf, size, nmemb, src->f);
    if (n == 0 && ferror(src->f))
        return CURL_READFUNC_ABORT;
    return n;
}

static size_t discard_cb(char *data, size_t size, size_t nmemb, void *user)
{
    GString *s = user;
    if (s->len < 4096)
        g_string_append_len(s, data, (gssize)MIN(size * nmemb, 4096 - s->len));
    return size * nmemb;
}

static int put_progress_cb(void *user, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    const put_source *src = user;
    return src->abort_flag && g_atomic_int_get(src->abort_flag) ? 1 : 0;
}

/* PUTs the file at path (streamed from disk) to a signed upload URL with the server's headers
 * ("Name:value" strings) and Content-MD5 when they do not carry it. The W&B key is not sent:
 * the URL is signed for this one object (and may be another host's storage). */
static wb_result put_file(const wb_server *srv, const gint *abort_flag, const char *url, JsonArray *headers,
                          const char *path, gint64 size, const char *md5, GError **error)
{
    rt_net_global_init();
    FILE *f = g_fopen(path, "rb");
    if (!f) {
        int e = errno;
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot read %s: %s", path, g_strerror(e));
        return WB_FATAL;
    }
    CURL *c = curl_easy_init();
    if (!c) {
        fclose(f);
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "cannot start a transfer to %s: libcurl failed", url);
        return WB_RETRY;
    }
    struct curl_slist *list = NULL;
    gboolean have_md5 = FALSE;
    for (guint i = 0; headers && i < json_array_get_length(headers); i++) {
        JsonNode *n = json_array_get_element(headers, i);
        if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING)
            continue;
        const char *h = json_node_get_string(n);
        const char *colon = strchr(h, ':');
        if (!colon)
            continue;
        g_autofree char *name = g_strndup(h, (gsize)(colon - h));
        g_autofree char *line = g_strdup_printf("%s: %s", g_strstrip(name), colon + 1);
        have_md5 |= g_ascii_strcasecmp(name, "Content-MD5") == 0;
        list = curl_slist_append(list, line);
    }
    if (!have_md5) {
        g_autofree char *line = g_strdup_printf("Content-MD5: %s", md5);
        list = curl_slist_append(list, line);
    }
    list = curl_slist_append(list, "Expect:");
    put_source src = {f, abort_flag};
    GString *answer = g_string_new(NULL);
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, read_file_cb);
    curl_easy_setopt(c, CURLOPT_READDATA, &src);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)size);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "robotrain/" RT_VERSION);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, answer);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, put_progress_cb);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &src);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)MIN(srv->request_timeout_ms, 10000u));
    /* a large file takes as long as it takes; a transfer that stalls for the request timeout does not */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)MAX(srv->request_timeout_ms / 1000, 1u));
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    curl_slist_free_all(list);
    fclose(f);
    /* the signed URL is a credential for this object: only its host and path go into messages */
    g_autofree char *shown = g_strndup(url, strcspn(url, "?"));
    wb_result r;
    if (rc == CURLE_ABORTED_BY_CALLBACK) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "the upload to %s was stopped", shown);
        r = WB_ABORTED;
    } else if (rc != CURLE_OK) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "cannot upload to %s: %s", shown,
                    errbuf[0] ? errbuf : curl_easy_strerror(rc));
        r = rc == CURLE_READ_ERROR || rc == CURLE_ABORTED_BY_CALLBACK ? WB_FATAL : WB_RETRY;
    } else if (status >= 200 && status < 300) {
        r = WB_OK;
    } else {
        for (gsize i = 0; i < answer->len; i++)
            if ((unsigned char)answer->str[i] < ' ')
                answer->str[i] = ' ';
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "the upload to %s was answered HTTP %ld%s%.200s", shown,
                    status, answer->len ? ": " : "", answer->str);
        r = status == 408 || status == 429 || status >= 500 ? WB_RETRY : WB_FATAL;
    }
    g_string_free(answer, TRUE);
    return r;
}

/* ---------------------------------------------------------------- one artifact */

struct wb_artifacts {
    const wb_server *srv; /* borrowed from the run */
    char *run_dir;
    GAsyncQueue *jobs; /* wb_artifact_job*; a job with name NULL stops the thread */
    GThread *thread;
    gint abort;
    GMutex lock;
    GCond idle_cv;
    guint pending; /* queued or in progress */
    rt_wandb_artifact_stats stats;
    char *last_error;
};

typedef struct {
    char *entity, *project, *run_id;
    char *name, *type;
    char **aliases;
    GArray *entries; /* rt_wandb_artifact_entry */
} wb_artifact_job;

static void job_free(wb_artifact_job *job)
{
    if (!job)
        return;
    g_free(job->entity);
    g_free(job->project);
    g_free(job->run_id);
    g_free(job->name);
    g_free(job->type);
    g_strfreev(job->aliases);
    for (guint i = 0; job->entries && i < job->entries->len; i++) {
        rt_wandb_artifact_entry *e = &g_array_index(job->entries, rt_wandb_artifact_entry, i);
        g_free(e->name);
        g_free(e->path);
        g_free(e->md5);
        g_free(e->birth_artifact_id);
    }
    if (job->entries)
        g_array_unref(job->entries);
    g_free(job);
}

/* Waits ms, waking early when the abort flag is raised. FALSE when it was. */
static gboolean backoff_wait(struct wb_artifacts *a, guint ms)
{
    gint64 until = g_get_monotonic_time() + (gint64)ms * 1000;
    for (gint64 left; (left = until - g_get_monotonic_time()) > 0;) {
        if (g_atomic_int_get(&a->abort))
            return FALSE;
        g_usleep((gulong)MIN(left, 20000)); /* the abort flag is looked at every 20 ms */
    }
    return !g_atomic_int_get(&a->abort);
}

static char *random_id(void)
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    char id[33];
    for (int i = 0; i < 32; i++)
        id[i] = alphabet[g_random_int_range(0, (gint32)sizeof alphabet - 1)];
    id[32] = '\0';
    return g_strdup(id);
}

typedef struct {
    struct wb_artifacts *a;
    wb_http *http;
    wb_artifact_job *job;
    char *digest;
    char *client_id, *sequence_client_id;
    char *artifact_id, *base_id, *manifest_id, *state;
    JsonParser *files_answer; /* keeps the nodes below alive */
    GPtrArray *upload_nodes;  /* JsonObject* per entry, in entries' order */
} upload;

static wb_result step_create(upload *u, GError **error)
{
    wb_artifact_job *job = u->job;
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    set_string(b, "entityName", job->entity);
    set_string(b, "projectName", job->project);
    set_string(b, "runName", job->run_id);
    set_string(b, "artifactTypeName", job->type);
    json_builder_set_member_name(b, "artifactCollectionNames");
    json_builder_begin_array(b);
    json_builder_add_string_value(b, job->name);
    json_builder_end_array(b);
    set_string(b, "digest", u->digest);
    set_string(b, "description", NULL);
    set_string(b, "metadata", NULL);
    json_builder_set_member_name(b, "aliases");
    json_builder_begin_array(b);
    for (size_t i = 0; job->aliases && job->aliases[i]; i++) {
        json_builder_begin_object(b);
        set_string(b, "artifactCollectionName", job->name);
        set_string(b, "alias", job->aliases[i]);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    set_string(b, "clientID", u->client_id);
    set_string(b, "sequenceClientID", u->sequence_client_id);
    set_bool(b, "enableDigestDeduplication", TRUE);
    g_autoptr(JsonParser) p = NULL;
    JsonObject *data = NULL;
    wb_result r = gql(u->http, create_artifact_query, finish_object(b), "createArtifact", &p, &data, error);
    if (r != WB_OK)
        return r;
    JsonObject *art = wb_json_object(wb_json_object(data, "createArtifact"), "artifact");
    const char *id = wb_json_string(art, "id"), *state = wb_json_string(art, "state");
    if (!id || !state) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "createArtifact: the answer of W&B lacks the artifact's id or state");
        return WB_FATAL;
    }
    u->artifact_id = g_strdup(id);
    u->state = g_strdup(state);
    JsonObject *latest = wb_json_object(wb_json_object(art, "artifactSequence"), "latestArtifact");
    u->base_id = g_strdup(wb_json_string(latest, "id"));
    if (u->base_id && strcmp(u->base_id, u->artifact_id) == 0)
        g_clear_pointer(&u->base_id, g_free);
    return WB_OK;
}

static wb_result step_manifest(upload *u, const char *digest, gboolean update, JsonObject **file, JsonParser **p,
                               GError **error)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    if (update) {
        set_string(b, "artifactManifestID", u->manifest_id);
    } else {
        set_string(b, "name", WB_MANIFEST_NAME);
        set_string(b, "artifactID", u->artifact_id);
        set_string(b, "entityName", u->job->entity);
        set_string(b, "projectName", u->job->project);
        set_string(b, "runName", u->job->run_id);
    }
    set_string(b, "digest", digest);
    set_string(b, "baseArtifactID", u->base_id);
    set_bool(b, "includeUpload", update);
    JsonObject *data = NULL;
    const char *what = update ? "updateArtifactManifest" : "createArtifactManifest";
    wb_result r = gql(u->http, update ? update_manifest_query : create_manifest_query, finish_object(b), what, p,
                      &data, error);
    if (r != WB_OK)
        return r;
    JsonObject *m = wb_json_object(wb_json_object(data, what), "artifactManifest");
    const char *id = wb_json_string(m, "id");
    if (!id) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "%s: the answer of W&B lacks the manifest's id", what);
        return WB_FATAL;
    }
    if (!update)
        u->manifest_id = g_strdup(id);
    *file = wb_json_object(m, "file");
    return WB_OK;
}

static wb_result step_files(upload *u, GError **error)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    set_string(b, "storageLayout", "V2");
    json_builder_set_member_name(b, "artifactFiles");
    json_builder_begin_array(b);
    GArray *entries = u->job->entries;
    for (guint i = 0; i < entries->len; i++) {
        rt_wandb_artifact_entry *e = &g_array_index(entries, rt_wandb_artifact_entry, i);
        json_builder_begin_object(b);
        set_string(b, "artifactID", u->artifact_id);
        set_string(b, "name", e->name);
        set_string(b, "md5", e->md5);
        set_string(b, "artifactManifestID", u->manifest_id);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    JsonObject *data = NULL;
    g_clear_object(&u->files_answer);
    wb_result r = gql(u->http, create_files_query, finish_object(b), "createArtifactFiles", &u->files_answer, &data,
                      error);
    if (r != WB_OK)
        return r;
    JsonArray *edges = wb_json_array(wb_json_object(wb_json_object(data, "createArtifactFiles"), "files"), "edges");
    if (!edges || json_array_get_length(edges) != entries->len) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "createArtifactFiles: W&B answered %u upload URL(s) for %u file(s)",
                    edges ? json_array_get_length(edges) : 0, entries->len);
        return WB_FATAL;
    }
    g_ptr_array_set_size(u->upload_nodes, 0);
    for (guint i = 0; i < entries->len; i++) {
        JsonNode *edge = json_array_get_element(edges, i);
        JsonObject *node = JSON_NODE_HOLDS_OBJECT(edge) ? wb_json_object(json_node_get_object(edge), "node") : NULL;
        rt_wandb_artifact_entry *e = &g_array_index(entries, rt_wandb_artifact_entry, i);
        const char *name = wb_json_string(node, "name");
        const char *display = wb_json_string(node, "displayName");
        if (!node || (display && strcmp(display, e->name) != 0 && name && strcmp(name, e->name) != 0)) {
            g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                        "createArtifactFiles: W&B's answer %u does not name file %s", i, e->name);
            return WB_FATAL;
        }
        const char *birth = wb_json_string(wb_json_object(node, "artifact"), "id");
        g_free(e->birth_artifact_id);
        e->birth_artifact_id = g_strdup(birth);
        g_ptr_array_add(u->upload_nodes, node);
    }
    return WB_OK;
}

static wb_result step_commit(upload *u, GError **error)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    set_string(b, "artifactID", u->artifact_id);
    g_autoptr(JsonParser) p = NULL;
    JsonObject *data = NULL;
    wb_result r = gql(u->http, commit_query, finish_object(b), "commitArtifact", &p, &data, error);
    if (r == WB_OK && !wb_json_string(wb_json_object(wb_json_object(data, "commitArtifact"), "artifact"), "id")) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "commitArtifact: the answer of W&B names no artifact");
        return WB_FATAL;
    }
    return r;
}

/* One step of the upload; the retry loop below calls it again after a transient failure. */
typedef enum { STEP_CREATE, STEP_MANIFEST, STEP_FILES, STEP_PUT, STEP_UPDATE, STEP_COMMIT } step_kind;

typedef struct {
    step_kind kind;
    /* STEP_PUT */
    const char *url, *path, *md5;
    JsonArray *headers;
    gint64 size;
    /* STEP_UPDATE */
    const char *manifest_md5;
    JsonObject *file; /* out: the manifest's upload URL and headers (alive while parser is) */
    JsonParser *parser;
} step_args;

static wb_result run_step(upload *u, step_args *s, GError **error)
{
    JsonObject *unused = NULL;
    switch (s->kind) {
    case STEP_CREATE:
        return step_create(u, error);
    case STEP_MANIFEST: {
        g_autoptr(JsonParser) p = NULL;
        return step_manifest(u, "", FALSE, &unused, &p, error);
    }
    case STEP_FILES:
        return step_files(u, error);
    case STEP_PUT:
        return put_file(u->a->srv, &u->a->abort, s->url, s->headers, s->path, s->size, s->md5, error);
    case STEP_UPDATE:
        g_clear_object(&s->parser);
        return step_manifest(u, s->manifest_md5, TRUE, &s->file, &s->parser, error);
    case STEP_COMMIT:
    default:
        return step_commit(u, error);
    }
}

/* Runs a step, again after the run's backoff (retry_min_ms doubling to retry_max_ms) while it
 * fails for a transient reason, WB_ARTIFACT_ATTEMPTS times at most. */
static wb_result retrying(upload *u, step_args *s, GError **error)
{
    guint wait = u->a->srv->retry_min_ms;
    for (int attempt = 1;; attempt++) {
        GError *err = NULL;
        wb_result r = run_step(u, s, &err);
        if (r != WB_RETRY || attempt >= WB_ARTIFACT_ATTEMPTS || !backoff_wait(u->a, wait)) {
            if (r == WB_RETRY && err)
                g_prefix_error(&err, "after %d attempts: ", attempt);
            if (err)
                g_propagate_error(error, err);
            return r == WB_RETRY && g_atomic_int_get(&u->a->abort) ? WB_ABORTED : r;
        }
        g_clear_error(&err);
        wait = MIN(wait * 2, u->a->srv->retry_max_ms);
    }
}

static wb_result upload_artifact(struct wb_artifacts *a, wb_http *http, wb_artifact_job *job, GError **error)
{
    upload u = {.a = a, .http = http, .job = job};
    u.upload_nodes = g_ptr_array_new();
    u.client_id = random_id();
    u.sequence_client_id = random_id();
    wb_result r = WB_OK;
    GArray *entries = job->entries;

    /* the files' digests, read now: the checkpoint was complete when the job was queued */
    for (guint i = 0; i < entries->len && r == WB_OK; i++) {
        rt_wandb_artifact_entry *e = &g_array_index(entries, rt_wandb_artifact_entry, i);
        if (!rt_wandb_file_md5(e->path, &e->md5, &e->size, error))
            r = WB_FATAL;
    }
    if (r == WB_OK) {
        u.digest = rt_wandb_artifact_digest((const rt_wandb_artifact_entry *)entries->data, entries->len);
        r = retrying(&u, &(step_args){.kind = STEP_CREATE}, error);
    }
    /* a committed answer: the server has an artifact with this digest already (deduplicated) */
    gboolean done = r == WB_OK && strcmp(u.state, "COMMITTED") == 0;
    if (r == WB_OK && !done && strcmp(u.state, "PENDING") != 0 && strcmp(u.state, "DELETED") != 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "createArtifact: W&B answered the unexpected state %s",
                    u.state);
        r = WB_FATAL;
    }
    if (r == WB_OK && !done)
        r = retrying(&u, &(step_args){.kind = STEP_MANIFEST}, error);
    if (r == WB_OK && !done)
        r = retrying(&u, &(step_args){.kind = STEP_FILES}, error);
    for (guint i = 0; r == WB_OK && !done && i < entries->len; i++) {
        rt_wandb_artifact_entry *e = &g_array_index(entries, rt_wandb_artifact_entry, i);
        JsonObject *node = u.upload_nodes->pdata[i];
        const char *url = wb_json_string(node, "uploadUrl");
        if (!url)
            continue; /* the server has these bytes already */
        JsonArray *headers = wb_json_array(node, "uploadHeaders");
        step_args put = {.kind = STEP_PUT, .url = url, .headers = headers, .path = e->path, .size = e->size, .md5 = e->md5};
        r = retrying(&u, &put, error);
        if (r != WB_OK && error && *error)
            g_prefix_error(error, "file %s: ", e->path);
    }
    g_autofree char *manifest = NULL;
    g_autofree char *manifest_path = NULL;
    if (r == WB_OK && !done) {
        manifest = rt_wandb_artifact_manifest((const rt_wandb_artifact_entry *)entries->data, entries->len);
        GChecksum *md5 = g_checksum_new(G_CHECKSUM_MD5);
        g_checksum_update(md5, (const guchar *)manifest, strlen(manifest));
        guint8 digest[16];
        gsize len = sizeof digest;
        g_checksum_get_digest(md5, digest, &len);
        g_checksum_free(md5);
        g_autofree char *manifest_md5 = g_base64_encode(digest, len);
        /* the manifest goes up from a file like the others, kept in the run folder (it names
         * what was uploaded) */
        g_autofree char *file_name = g_strdup_printf("artifact-%s-manifest.json", job->name);
        manifest_path = g_build_filename(a->run_dir, file_name, NULL);
        GError *write_error = NULL;
        if (!g_file_set_contents(manifest_path, manifest, -1, &write_error)) {
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot write the artifact manifest: %s", write_error->message);
            g_error_free(write_error);
            r = WB_FATAL;
        }
        step_args update = {.kind = STEP_UPDATE, .manifest_md5 = manifest_md5};
        if (r == WB_OK)
            r = retrying(&u, &update, error);
        JsonObject *file = update.file;
        const char *url = wb_json_string(file, "uploadUrl");
        if (r == WB_OK && !url) {
            g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "updateArtifactManifest: W&B gave no upload URL for the manifest");
            r = WB_FATAL;
        }
        if (r == WB_OK) {
            JsonArray *headers = wb_json_array(file, "uploadHeaders");
            step_args put = {.kind = STEP_PUT, .url = url, .headers = headers, .path = manifest_path,
                             .size = (gint64)strlen(manifest), .md5 = manifest_md5};
            r = retrying(&u, &put, error);
            if (r != WB_OK && error && *error)
                g_prefix_error(error, "the manifest: ");
        }
        g_clear_object(&update.parser);
    }
    if (r == WB_OK && !done)
        r = retrying(&u, &(step_args){.kind = STEP_COMMIT}, error);

    g_free(u.digest);
    g_free(u.client_id);
    g_free(u.sequence_client_id);
    g_free(u.artifact_id);
    g_free(u.base_id);
    g_free(u.manifest_id);
    g_free(u.state);
    g_clear_object(&u.files_answer);
    g_ptr_array_unref(u.upload_nodes);
    return r;
}

/* ---------------------------------------------------------------- the thread */

static gpointer artifacts_main(gpointer data)
{
    struct wb_artifacts *a = data;
    wb_http *http = wb_http_new(a->srv, &a->abort);
    for (;;) {
        wb_artifact_job *job = g_async_queue_pop(a->jobs);
        if (!job->name) {
            job_free(job);
            break;
        }
        GError *err = NULL;
        wb_result r = WB_ABORTED;
        if (!g_atomic_int_get(&a->abort)) {
            if (!job->entity) {
                /* the run was not connected when the checkpoint was saved: the key's entity is
                 * where upsertBucket put the run */
                char *entity = NULL;
                r = wb_graphql_viewer(http, &entity, &err);
                job->entity = entity;
            }
            if (job->entity) {
                g_clear_error(&err);
                r = upload_artifact(a, http, job, &err);
            }
        }
        g_mutex_lock(&a->lock);
        if (r == WB_OK) {
            a->stats.committed++;
        } else {
            a->stats.failed++;
            g_free(a->last_error);
            a->last_error = g_strdup(err ? err->message : "stopped");
        }
        g_mutex_unlock(&a->lock);
        if (r != WB_OK && r != WB_ABORTED)
            g_warning("W&B artifact %s was not uploaded: %s; the checkpoint stays on disk, training goes on",
                      job->name, err ? err->message : "?");
        else if (r == WB_OK)
            g_message("W&B artifact %s (%s) logged", job->name, job->type);
        g_clear_error(&err);
        job_free(job);
        g_mutex_lock(&a->lock);
        a->pending--;
        g_cond_broadcast(&a->idle_cv);
        g_mutex_unlock(&a->lock);
    }
    wb_http_free(http);
    return NULL;
}

wb_artifacts *wb_artifacts_new(const wb_server *srv, const char *run_dir, GError **error)
{
    struct wb_artifacts *a = g_new0(struct wb_artifacts, 1);
    a->srv = srv;
    a->run_dir = g_strdup(run_dir);
    a->jobs = g_async_queue_new();
    g_mutex_init(&a->lock);
    g_cond_init(&a->idle_cv);
    a->thread = g_thread_try_new("wandb-artifacts", artifacts_main, a, error);
    if (!a->thread) {
        g_async_queue_unref(a->jobs);
        g_free(a->run_dir);
        g_free(a);
        return NULL;
    }
    return a;
}

gboolean wb_artifacts_push(wb_artifacts *a, const char *entity, const char *project, const char *run_id,
                           const char *name, const char *type, const char *const *aliases,
                           const char *const *paths, const char *const *names, GError **error)
{
    if (!name || !*name || strpbrk(name, ":/") || !type || !*type) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "W&B artifact name '%s' (type '%s') is not allowed: a name and a type are needed, and a "
                    "name holds no ':' or '/'",
                    name ? name : "", type ? type : "");
        return FALSE;
    }
    wb_artifact_job *job = g_new0(wb_artifact_job, 1);
    job->entity = g_strdup(entity);
    job->project = g_strdup(project);
    job->run_id = g_strdup(run_id);
    job->name = g_strdup(name);
    job->type = g_strdup(type);
    job->aliases = g_strdupv((char **)aliases);
    job->entries = g_array_new(FALSE, TRUE, sizeof(rt_wandb_artifact_entry));
    for (size_t i = 0; paths && paths[i]; i++) {
        if (!g_file_test(paths[i], G_FILE_TEST_IS_REGULAR)) {
            g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND, "the file %s of W&B artifact %s does not exist",
                        paths[i], name);
            job_free(job);
            return FALSE;
        }
        rt_wandb_artifact_entry e = {0};
        e.path = g_strdup(paths[i]);
        e.name = names && names[i] ? g_strdup(names[i]) : g_path_get_basename(paths[i]);
        g_array_append_val(job->entries, e);
    }
    if (job->entries->len == 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "W&B artifact %s has no files", name);
        job_free(job);
        return FALSE;
    }
    g_mutex_lock(&a->lock);
    a->pending++;
    a->stats.queued++;
    g_mutex_unlock(&a->lock);
    g_async_queue_push(a->jobs, job);
    return TRUE;
}

guint wb_artifacts_wait(wb_artifacts *a, gint64 deadline)
{
    g_mutex_lock(&a->lock);
    while (a->pending > 0)
        if (!g_cond_wait_until(&a->idle_cv, &a->lock, deadline))
            break;
    guint left = a->pending;
    g_mutex_unlock(&a->lock);
    return left;
}

void wb_artifacts_get_stats(wb_artifacts *a, rt_wandb_artifact_stats *stats)
{
    g_mutex_lock(&a->lock);
    *stats = a->stats;
    g_mutex_unlock(&a->lock);
}

void wb_artifacts_free(wb_artifacts *a)
{
    if (!a)
        return;
    g_atomic_int_set(&a->abort, 1);
    g_async_queue_push(a->jobs, g_new0(wb_artifact_job, 1)); /* the stop mark */
    g_thread_join(a->thread);
    wb_artifact_job *job;
    while ((job = g_async_queue_try_pop(a->jobs)))
        job_free(job);
    g_async_queue_unref(a->jobs);
    g_mutex_clear(&a->lock);
    g_cond_clear(&a->idle_cv);
    g_free(a->last_error);
    g_free(a->run_dir);
    g_free(a);
}
