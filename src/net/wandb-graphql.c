/* W&B's GraphQL endpoint: upsertBucket creates a run or updates it (the same name resumes it) and
 * tells how many history lines the server already has; viewer names the key's default entity.
 * GraphQL reports failures in "errors" even with HTTP 200, so every answer is checked for it. */
#include "config.h"

#include <string.h>

#include <json-glib/json-glib.h>

#include "net/wandb-private.h"

static const char upsert_query[] =
    "mutation UpsertBucket($id: String, $name: String, $project: String, $entity: String, "
    "$displayName: String, $notes: String, $config: JSONString, $host: String, $jobProgram: String, "
    "$jobType: String, $tags: [String!]) {\n"
    "  upsertBucket(input: {id: $id, name: $name, modelName: $project, entityName: $entity, "
    "displayName: $displayName, notes: $notes, config: $config, host: $host, jobProgram: $jobProgram, "
    "jobType: $jobType, tags: $tags}) {\n"
    "    bucket { id name displayName description config sweepName project { id name entity { id name } } "
    "historyLineCount }\n"
    "    inserted\n"
    "  }\n"
    "}\n";

static const char viewer_query[] = "query Viewer { viewer { id entity username email } }";

void wb_bucket_clear(wb_bucket *b)
{
    g_free(b->storage_id);
    g_free(b->name);
    g_free(b->project);
    g_free(b->entity);
    memset(b, 0, sizeof *b);
}

static void add_optional(JsonBuilder *b, const char *key, const char *value)
{
    if (!value)
        return;
    json_builder_set_member_name(b, key);
    json_builder_add_string_value(b, value);
}

wb_result wb_graphql_send(wb_http *http, JsonBuilder *request, const char *what, JsonParser **parser,
                         JsonObject **data, GError **error)
{
    g_autoptr(JsonNode) root = json_builder_get_root(request);
    g_autofree char *body = json_to_string(root, FALSE);
    g_autofree char *reply = NULL;
    wb_result r = wb_http_post(http, "/graphql", body, strlen(body), &reply, error);
    if (r != WB_OK)
        return r;
    *parser = json_parser_new();
    g_autoptr(GError) parse_error = NULL;
    if (!json_parser_load_from_data(*parser, reply, -1, &parse_error) ||
        !JSON_NODE_HOLDS_OBJECT(json_parser_get_root(*parser))) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "the answer of W&B to %s is not a JSON object%s%s",
                    what, parse_error ? ": " : "", parse_error ? parse_error->message : "");
        return WB_FATAL;
    }
    JsonObject *o = json_node_get_object(json_parser_get_root(*parser));
    JsonArray *errors = wb_json_array(o, "errors");
    if (errors && json_array_get_length(errors) > 0) {
        JsonNode *first = json_array_get_element(errors, 0);
        const char *message =
            JSON_NODE_HOLDS_OBJECT(first) ? wb_json_string(json_node_get_object(first), "message") : NULL;
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "W&B refused %s: %s", what,
                    message ? message : "(an error without a message)");
        return WB_FATAL;
    }
    *data = wb_json_object(o, "data");
    if (!*data) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "the answer of W&B to %s has no \"data\"", what);
        return WB_FATAL;
    }
    return WB_OK;
}

static char *member_string(JsonObject *o, const char *key)
{
    return g_strdup(wb_json_string(o, key));
}

wb_result wb_graphql_upsert_run(wb_http *http, const wb_state *st, wb_bucket *bucket, GError **error)
{
    memset(bucket, 0, sizeof *bucket);
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "query");
    json_builder_add_string_value(b, upsert_query);
    json_builder_set_member_name(b, "variables");
    json_builder_begin_object(b);
    add_optional(b, "id", st->storage_id);
    add_optional(b, "name", st->id);
    add_optional(b, "project", st->project);
    add_optional(b, "entity", st->entity); /* absent: the key's default entity */
    add_optional(b, "displayName", st->display_name);
    add_optional(b, "notes", st->notes);
    add_optional(b, "config", st->config);
    add_optional(b, "host", st->host);
    add_optional(b, "jobProgram", "robotrain");
    add_optional(b, "jobType", WB_JOB_TYPE);
    if (st->tags) {
        json_builder_set_member_name(b, "tags");
        json_builder_begin_array(b);
        for (size_t i = 0; st->tags[i]; i++)
            json_builder_add_string_value(b, st->tags[i]);
        json_builder_end_array(b);
    }
    json_builder_end_object(b);
    json_builder_end_object(b);

    g_autofree char *what = g_strdup_printf("to create or resume run %s in project %s", st->id, st->project);
    g_autoptr(JsonParser) parser = NULL;
    JsonObject *data = NULL;
    wb_result r = wb_graphql_send(http, b, what, &parser, &data, error);
    if (r != WB_OK)
        return r;
    JsonObject *upsert = wb_json_object(data, "upsertBucket");
    JsonObject *bk = wb_json_object(upsert, "bucket");
    JsonObject *project = wb_json_object(bk, "project");
    JsonObject *entity = wb_json_object(project, "entity");
    bucket->storage_id = member_string(bk, "id");
    bucket->name = member_string(bk, "name");
    bucket->project = member_string(project, "name");
    bucket->entity = member_string(entity, "name");
    if (!bucket->name || !bucket->project || !bucket->entity) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "the answer of W&B to upsertBucket lacks the run's name, project or entity");
        wb_bucket_clear(bucket);
        return WB_FATAL;
    }
    JsonNode *count = json_object_get_member(bk, "historyLineCount");
    if (count && JSON_NODE_HOLDS_VALUE(count) && json_node_get_value_type(count) == G_TYPE_INT64)
        bucket->history_line_count = MAX(json_node_get_int(count), 0);
    bucket->inserted = wb_json_true(upsert, "inserted");
    return WB_OK;
}

wb_result wb_graphql_viewer(wb_http *http, char **entity, GError **error)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "query");
    json_builder_add_string_value(b, viewer_query);
    json_builder_set_member_name(b, "variables");
    json_builder_begin_object(b);
    json_builder_end_object(b);
    json_builder_end_object(b);
    g_autoptr(JsonParser) parser = NULL;
    JsonObject *data = NULL;
    wb_result r = wb_graphql_send(http, b, "the viewer query", &parser, &data, error);
    if (r != WB_OK)
        return r;
    JsonObject *viewer = wb_json_object(data, "viewer");
    char *name = member_string(viewer, "entity");
    if (!name) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "W&B does not know the user of the API key (the viewer query returned no entity)");
        return WB_FATAL;
    }
    if (entity)
        *entity = name;
    else
        g_free(name);
    return WB_OK;
}
