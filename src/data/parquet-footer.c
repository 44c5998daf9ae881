/* The Parquet footer: FileMetaData (parquet.thrift) decoded into the reader's own structures,
 * then checked: the schema tree must be well formed, every row group must have one chunk per
 * leaf column with the leaf's path and type, and every chunk's byte range must lie inside the
 * file's data area. After this, the page reader can trust the chunk ranges. */
#include "config.h"

#include "data/parquet-private.h"
#include "data/thrift-compact.h"

#include <limits.h>
#include <string.h>

/* ---------------------------------------------------------------- raw footer structures */

typedef struct {
    int physical; /* -1: a group */
    int32_t type_length;
    int repetition; /* -1: absent */
    char *name;
    size_t name_len;
    int32_t num_children; /* -1: absent (a leaf) */
    int converted;        /* -1: absent */
    int logical;          /* LogicalType union member, 0: absent */
    int int_bits;
    gboolean int_signed;
} schema_node;

typedef struct {
    const uint8_t *ptr;
    size_t len;
} span;

typedef struct {
    int physical;
    int codec;
    int64_t num_values;
    int64_t total_compressed;
    int64_t data_page_offset;
    int64_t dictionary_page_offset;
    gboolean has_dictionary_offset;
    span *path;
    int n_path;
    unsigned seen;      /* bit per required field */
    gboolean external;  /* file_path set */
    gboolean encrypted; /* crypto metadata present */
    gboolean has_meta;
} raw_chunk;

typedef struct {
    int64_t num_rows;
    gboolean has_num_rows;
    raw_chunk *chunks;
    int n_chunks;
    gboolean has_columns;
} raw_row_group;

typedef struct {
    schema_node *nodes;
    int n_nodes;
    raw_row_group *groups;
    int n_groups;
    int64_t num_rows;
    unsigned seen;
} raw_footer;

static gboolean is_bool(rt_thrift_type t)
{
    return t == RT_THRIFT_TRUE || t == RT_THRIFT_FALSE;
}

static char *copy_binary(rt_thrift_reader *r)
{
    size_t len;
    const uint8_t *p = rt_thrift_read_binary(r, &len);
    if (!p)
        return NULL;
    char *s = g_malloc(len + 1);
    memcpy(s, p, len);
    s[len] = '\0';
    return s;
}

/* ---------------------------------------------------------------- decoding */

static void read_int_type(rt_thrift_reader *r, schema_node *n)
{
    int16_t id = 0;
    rt_thrift_type t;
    rt_thrift_struct_begin(r);
    while (rt_thrift_next_field(r, &id, &t)) {
        if (id == 1 && t == RT_THRIFT_I8)
            n->int_bits = rt_thrift_read_i8(r);
        else if (id == 2 && is_bool(t))
            n->int_signed = t == RT_THRIFT_TRUE;
        else
            rt_thrift_skip(r, t);
    }
    rt_thrift_struct_end(r);
}

static void read_logical_type(rt_thrift_reader *r, schema_node *n)
{
    int16_t id = 0;
    rt_thrift_type t;
    rt_thrift_struct_begin(r);
    while (rt_thrift_next_field(r, &id, &t)) {
        if (t == RT_THRIFT_STRUCT && n->logical == 0) {
            n->logical = id;
            if (id == 10)
                read_int_type(r, n);
            else
                rt_thrift_skip(r, t);
        } else {
            rt_thrift_skip(r, t);
        }
    }
    rt_thrift_struct_end(r);
}

static void read_schema_element(rt_thrift_reader *r, schema_node *n)
{
    int16_t id = 0;
    rt_thrift_type t;
    n->physical = -1;
    n->repetition = -1;
    n->num_children = -1;
    n->converted = -1;
    rt_thrift_struct_begin(r);
    while (rt_thrift_next_field(r, &id, &t)) {
        if (id == 1 && t == RT_THRIFT_I32)
            n->physical = rt_thrift_read_i32(r);
        else if (id == 2 && t == RT_THRIFT_I32)
            n->type_length = rt_thrift_read_i32(r);
        else if (id == 3 && t == RT_THRIFT_I32)
            n->repetition = rt_thrift_read_i32(r);
        else if (id == 4 && t == RT_THRIFT_BINARY && !n->name)
            n->name = copy_binary(r);
        else if (id == 5 && t == RT_THRIFT_I32)
            n->num_children = rt_thrift_read_i32(r);
        else if (id == 6 && t == RT_THRIFT_I32)
            n->converted = rt_thrift_read_i32(r);
        else if (id == 10 && t == RT_THRIFT_STRUCT)
            read_logical_type(r, n);
        else
            rt_thrift_skip(r, t);
    }
    rt_thrift_struct_end(r);
    if (!rt_thrift_failed(r) && !n->name)
        rt_thrift_fail(r, "a schema element has no name");
    n->name_len = n->name ? strlen(n->name) : 0;
}

enum { CM_TYPE = 1, CM_PATH = 2, CM_CODEC = 4, CM_NUM_VALUES = 8, CM_SIZE = 16, CM_DATA = 32 };

static void read_path(rt_thrift_reader *r, raw_chunk *c)
{
    rt_thrift_type et;
    int64_t n = rt_thrift_read_list_header(r, &et);
    if (n < 0)
        return;
    if (et != RT_THRIFT_BINARY || n > PQ_MAX_SCHEMA_DEPTH) {
        rt_thrift_fail(r, "path_in_schema is not a short list of strings");
        return;
    }
    g_free(c->path);
    c->path = g_new0(span, n ? n : 1);
    c->n_path = (int)n;
    for (int64_t i = 0; i < n && !rt_thrift_failed(r); i++)
        c->path[i].ptr = rt_thrift_read_binary(r, &c->path[i].len);
}

static void read_column_meta(rt_thrift_reader *r, raw_chunk *c)
{
    int16_t id = 0;
    rt_thrift_type t;
    rt_thrift_struct_begin(r);
    while (rt_thrift_next_field(r, &id, &t)) {
        if (id == 1 && t == RT_THRIFT_I32) {
            c->physical = rt_thrift_read_i32(r);
            c->seen |= CM_TYPE;
        } else if (id == 3 && t == RT_THRIFT_LIST) {
            read_path(r, c);
            c->seen |= CM_PATH;
        } else if (id == 4 && t == RT_THRIFT_I32) {
            c->codec = rt_thrift_read_i32(r);
            c->seen |= CM_CODEC;
        } else if (id == 5 && t == RT_THRIFT_I64) {
            c->num_values = rt_thrift_read_i64(r);
            c->seen |= CM_NUM_VALUES;
        } else if (id == 7 && t == RT_THRIFT_I64) {
            c->total_compressed = rt_thrift_read_i64(r);
            c->seen |= CM_SIZE;
        } else if (id == 9 && t == RT_THRIFT_I64) {
            c->data_page_offset = rt_thrift_read_i64(r);
            c->seen |= CM_DATA;
        } else if (id == 11 && t == RT_THRIFT_I64) {
            c->dictionary_page_offset = rt_thrift_read_i64(r);
            c->has_dictionary_offset = TRUE;
        } else {
            rt_thrift_skip(r, t);
        }
    }
    rt_thrift_struct_end(r);
}

static void read_column_chunk(rt_thrift_reader *r, raw_chunk *c)
{
    int16_t id = 0;
    rt_thrift_type t;
    rt_thrift_struct_begin(r);
    while (rt_thrift_next_field(r, &id, &t)) {
        if (id == 1 && t == RT_THRIFT_BINARY) {
            c->external = TRUE;
            rt_thrift_skip(r, t);
        } else if (id == 3 && t == RT_THRIFT_STRUCT && !c->has_meta) {
            read_column_meta(r, c);
            c->has_meta = TRUE;
        } else if ((id == 8 && t == RT_THRIFT_STRUCT) || (id == 9 && t == RT_THRIFT_BINARY)) {
            c->encrypted = TRUE;
            rt_thrift_skip(r, t);
        } else {
            rt_thrift_skip(r, t);
        }
    }
    rt_thrift_struct_end(r);
}

static void read_row_group(rt_thrift_reader *r, raw_row_group *g, int64_t *chunks_left)
{
    int16_t id = 0;
    rt_thrift_type t;
    rt_thrift_struct_begin(r);
    while (rt_thrift_next_field(r, &id, &t)) {
        if (id == 1 && t == RT_THRIFT_LIST && !g->has_columns) {
            rt_thrift_type et;
            int64_t n = rt_thrift_read_list_header(r, &et);
            if (n < 0)
                break;
            if (et != RT_THRIFT_STRUCT) {
                rt_thrift_fail(r, "row group columns are not a list of structs");
                break;
            }
            if (n > *chunks_left) {
                rt_thrift_fail(r, "the row groups have more column chunks than this reader "
                                  "accepts");
                break;
            }
            *chunks_left -= n;
            g->chunks = g_new0(raw_chunk, n ? n : 1);
            g->n_chunks = (int)n;
            for (int64_t i = 0; i < n && !rt_thrift_failed(r); i++)
                read_column_chunk(r, &g->chunks[i]);
            g->has_columns = TRUE;
        } else if (id == 3 && t == RT_THRIFT_I64) {
            g->num_rows = rt_thrift_read_i64(r);
            g->has_num_rows = TRUE;
        } else {
            rt_thrift_skip(r, t);
        }
    }
    rt_thrift_struct_end(r);
}

static void read_key_values(rt_thrift_reader *r, rt_parquet_file *f)
{
    rt_thrift_type et;
    int64_t n = rt_thrift_read_list_header(r, &et);
    if (n < 0 || f->kv_keys)
        return;
    if (et != RT_THRIFT_STRUCT) {
        rt_thrift_fail(r, "key_value_metadata is not a list of structs");
        return;
    }
    f->kv_keys = g_new0(char *, n + 1);
    f->kv_values = g_new0(char *, n + 1);
    for (int64_t i = 0; i < n && !rt_thrift_failed(r); i++) {
        int16_t id = 0;
        rt_thrift_type t;
        rt_thrift_struct_begin(r);
        while (rt_thrift_next_field(r, &id, &t)) {
            if (id == 1 && t == RT_THRIFT_BINARY && !f->kv_keys[i])
                f->kv_keys[i] = copy_binary(r);
            else if (id == 2 && t == RT_THRIFT_BINARY && !f->kv_values[i])
                f->kv_values[i] = copy_binary(r);
            else
                rt_thrift_skip(r, t);
        }
        rt_thrift_struct_end(r);
        if (!rt_thrift_failed(r) && !f->kv_keys[i])
            rt_thrift_fail(r, "a key/value metadata entry has no key");
        f->n_kv = (int)(i + 1);
    }
}

enum { FM_SCHEMA = 1, FM_NUM_ROWS = 2, FM_ROW_GROUPS = 4 };

static void read_file_metadata(rt_thrift_reader *r, raw_footer *raw, rt_parquet_file *f)
{
    int16_t id = 0;
    rt_thrift_type t;
    rt_thrift_struct_begin(r);
    while (rt_thrift_next_field(r, &id, &t)) {
        if (id == 2 && t == RT_THRIFT_LIST && !(raw->seen & FM_SCHEMA)) {
            rt_thrift_type et;
            int64_t n = rt_thrift_read_list_header(r, &et);
            if (n < 0)
                break;
            if (et != RT_THRIFT_STRUCT) {
                rt_thrift_fail(r, "schema is not a list of structs");
                break;
            }
            if (n > PQ_MAX_SCHEMA_ELEMENTS) {
                rt_thrift_fail(r, "the schema has more elements than this reader accepts");
                break;
            }
            raw->nodes = g_new0(schema_node, n ? n : 1);
            raw->n_nodes = (int)n;
            for (int64_t i = 0; i < n && !rt_thrift_failed(r); i++)
                read_schema_element(r, &raw->nodes[i]);
            raw->seen |= FM_SCHEMA;
        } else if (id == 3 && t == RT_THRIFT_I64) {
            raw->num_rows = rt_thrift_read_i64(r);
            raw->seen |= FM_NUM_ROWS;
        } else if (id == 4 && t == RT_THRIFT_LIST && !(raw->seen & FM_ROW_GROUPS)) {
            rt_thrift_type et;
            int64_t n = rt_thrift_read_list_header(r, &et);
            if (n < 0)
                break;
            if (et != RT_THRIFT_STRUCT || n > PQ_MAX_COLUMN_CHUNKS) {
                rt_thrift_fail(r, "row_groups is not a list of structs, or too long a one");
                break;
            }
            raw->groups = g_new0(raw_row_group, n ? n : 1);
            raw->n_groups = (int)n;
            int64_t chunks_left = PQ_MAX_COLUMN_CHUNKS;
            for (int64_t i = 0; i < n && !rt_thrift_failed(r); i++)
                read_row_group(r, &raw->groups[i], &chunks_left);
            raw->seen |= FM_ROW_GROUPS;
        } else if (id == 5 && t == RT_THRIFT_LIST) {
            read_key_values(r, f);
        } else if (id == 6 && t == RT_THRIFT_BINARY && !f->created_by) {
            f->created_by = copy_binary(r);
        } else {
            rt_thrift_skip(r, t);
        }
    }
    rt_thrift_struct_end(r);
}

static void raw_footer_clear(raw_footer *raw)
{
    for (int i = 0; i < raw->n_nodes; i++)
        g_free(raw->nodes[i].name);
    g_free(raw->nodes);
    for (int i = 0; i < raw->n_groups; i++) {
        for (int j = 0; j < raw->groups[i].n_chunks; j++)
            g_free(raw->groups[i].chunks[j].path);
        g_free(raw->groups[i].chunks);
    }
    g_free(raw->groups);
}

/* ---------------------------------------------------------------- schema tree -> leaves */

typedef struct {
    int chain[PQ_MAX_SCHEMA_DEPTH]; /* schema node indices from the top-level field down */
    int depth;
    int max_def, max_rep, element_def, list_def;
} leaf_build;

typedef struct {
    const schema_node *nodes;
    int n_nodes;
    int next;
    GArray *leaves; /* leaf_build */
    char *error;
} schema_walk;

static gboolean walk_node(schema_walk *w, int depth, int def, int rep, int element_def, int list_def,
                          int *chain)
{
    if (w->next >= w->n_nodes) {
        w->error = g_strdup("the schema has fewer elements than its groups declare children");
        return FALSE;
    }
    if (depth >= PQ_MAX_SCHEMA_DEPTH) {
        w->error = g_strdup_printf("the schema nests deeper than %d levels", PQ_MAX_SCHEMA_DEPTH);
        return FALSE;
    }
    int idx = w->next++;
    const schema_node *n = &w->nodes[idx];
    chain[depth] = idx;
    switch (n->repetition) {
    case -1: /* not allowed below the root, but harmless: read as REQUIRED */
    case PQ_REQUIRED:
        break;
    case PQ_OPTIONAL:
        def++;
        break;
    case PQ_REPEATED:
        def++;
        rep++;
        if (rep == 1) {
            element_def = def;
            list_def = def - 1;
        }
        break;
    default:
        w->error = g_strdup_printf("schema element '%s' has repetition type %d, which this reader "
                                   "does not support",
                                   n->name, n->repetition);
        return FALSE;
    }
    if (n->num_children < 0) {
        if (n->physical < RT_PARQUET_BOOLEAN || n->physical > RT_PARQUET_FIXED_LEN_BYTE_ARRAY) {
            w->error = n->physical < 0
                           ? g_strdup_printf("schema element '%s' has neither a type nor children", n->name)
                           : g_strdup_printf("schema element '%s' has unknown physical type %d", n->name,
                                             n->physical);
            return FALSE;
        }
        if (n->physical == RT_PARQUET_FIXED_LEN_BYTE_ARRAY &&
            (n->type_length <= 0 || n->type_length > (1 << 24))) {
            w->error = g_strdup_printf("schema element '%s' is FIXED_LEN_BYTE_ARRAY with length "
                                       "%d",
                                       n->name, n->type_length);
            return FALSE;
        }
        leaf_build lb = {.depth = depth + 1,
                         .max_def = def,
                         .max_rep = rep,
                         .element_def = element_def,
                         .list_def = list_def};
        memcpy(lb.chain, chain, sizeof lb.chain);
        g_array_append_val(w->leaves, lb);
        return TRUE;
    }
    if (n->num_children > w->n_nodes - w->next) {
        w->error = g_strdup_printf("schema group '%s' declares %d children but only %d elements "
                                   "follow",
                                   n->name, n->num_children, w->n_nodes - w->next);
        return FALSE;
    }
    for (int i = 0; i < n->num_children; i++)
        if (!walk_node(w, depth + 1, def, rep, element_def, list_def, chain))
            return FALSE;
    return TRUE;
}

static rt_parquet_logical logical_of(const schema_node *n, int *bits, gboolean *is_signed)
{
    *bits = 0;
    *is_signed = FALSE;
    switch (n->logical) {
    case 0:
        break;
    case 1:
        return RT_PARQUET_LOGICAL_STRING;
    case 4:
        return RT_PARQUET_LOGICAL_ENUM;
    case 5:
        return RT_PARQUET_LOGICAL_DECIMAL;
    case 6:
        return RT_PARQUET_LOGICAL_DATE;
    case 7:
        return RT_PARQUET_LOGICAL_TIME;
    case 8:
        return RT_PARQUET_LOGICAL_TIMESTAMP;
    case 10:
        *bits = n->int_bits;
        *is_signed = n->int_signed;
        return RT_PARQUET_LOGICAL_INTEGER;
    case 12:
        return RT_PARQUET_LOGICAL_JSON;
    case 13:
        return RT_PARQUET_LOGICAL_BSON;
    case 14:
        return RT_PARQUET_LOGICAL_UUID;
    case 15:
        return RT_PARQUET_LOGICAL_FLOAT16;
    default:
        return RT_PARQUET_LOGICAL_OTHER;
    }
    switch (n->converted) {
    case -1:
        return RT_PARQUET_LOGICAL_NONE;
    case 0:
        return RT_PARQUET_LOGICAL_STRING;
    case 4:
        return RT_PARQUET_LOGICAL_ENUM;
    case 5:
        return RT_PARQUET_LOGICAL_DECIMAL;
    case 6:
        return RT_PARQUET_LOGICAL_DATE;
    case 7:
    case 8:
        return RT_PARQUET_LOGICAL_TIME;
    case 9:
    case 10:
        return RT_PARQUET_LOGICAL_TIMESTAMP;
    case 11:
    case 12:
    case 13:
    case 14: /* UINT_8 .. UINT_64 */
        *bits = 8 << (n->converted - 11);
        return RT_PARQUET_LOGICAL_INTEGER;
    case 15:
    case 16:
    case 17:
    case 18: /* INT_8 .. INT_64 */
        *bits = 8 << (n->converted - 15);
        *is_signed = TRUE;
        return RT_PARQUET_LOGICAL_INTEGER;
    case 19:
        return RT_PARQUET_LOGICAL_JSON;
    case 20:
        return RT_PARQUET_LOGICAL_BSON;
    case 21:
        return RT_PARQUET_LOGICAL_INTERVAL;
    default:
        return RT_PARQUET_LOGICAL_OTHER;
    }
}

static gboolean build_leaves(rt_parquet_file *f, const raw_footer *raw, size_t footer_len, GArray **out,
                             GError **error)
{
    if (raw->n_nodes < 1 || raw->nodes[0].num_children < 0) {
        pq_error(error, f, RT_ERROR_FORMAT, "malformed footer: the schema has no root group");
        return FALSE;
    }
    schema_walk w = {.nodes = raw->nodes, .n_nodes = raw->n_nodes, .next = 1};
    w.leaves = g_array_new(FALSE, TRUE, sizeof(leaf_build));
    int chain[PQ_MAX_SCHEMA_DEPTH] = {0};
    gboolean ok = TRUE;
    if (raw->nodes[0].num_children > raw->n_nodes - 1) {
        w.error = g_strdup_printf("the schema root declares %d children but only %d elements follow",
                                  raw->nodes[0].num_children, raw->n_nodes - 1);
        ok = FALSE;
    }
    for (int i = 0; ok && i < raw->nodes[0].num_children; i++)
        ok = walk_node(&w, 0, 0, 0, 0, 0, chain);
    if (ok && w.next != raw->n_nodes) {
        w.error = g_strdup_printf("the schema has %d elements but its groups use %d", raw->n_nodes, w.next);
        ok = FALSE;
    }
    if (!ok) {
        pq_error(error, f, RT_ERROR_FORMAT, "malformed schema: %s", w.error);
        g_free(w.error);
        g_array_free(w.leaves, TRUE);
        return FALSE;
    }
    *out = w.leaves;

    /* Leaf paths repeat their ancestors' names: a long group name above many leaves must
     * not turn a small footer into a huge allocation. Real paths take far less. */
    uint64_t path_bytes = 0, path_limit = (uint64_t)footer_len * 16 + (1u << 20);
    for (guint i = 0; i < w.leaves->len && path_bytes <= path_limit; i++) {
        const leaf_build *lb = &g_array_index(w.leaves, leaf_build, i);
        for (int d = 0; d < lb->depth; d++)
            path_bytes += raw->nodes[lb->chain[d]].name_len + 1;
        path_bytes += raw->nodes[lb->chain[0]].name_len + 1;
    }
    if (path_bytes > path_limit) {
        pq_error(error, f, RT_ERROR_FORMAT,
                 "malformed schema: its column paths would take more than %" G_GUINT64_FORMAT " bytes",
                 path_limit);
        return FALSE;
    }

    f->n_leaves = (int)w.leaves->len;
    f->leaves = g_new0(pq_leaf, f->n_leaves ? f->n_leaves : 1);
    for (int i = 0; i < f->n_leaves; i++) {
        const leaf_build *lb = &g_array_index(w.leaves, leaf_build, i);
        const schema_node *n = &raw->nodes[lb->chain[lb->depth - 1]];
        pq_leaf *leaf = &f->leaves[i];
        GString *path = g_string_new(NULL);
        for (int d = 0; d < lb->depth; d++) {
            if (d)
                g_string_append_c(path, '.');
            g_string_append(path, raw->nodes[lb->chain[d]].name);
        }
        leaf->path = g_string_free(path, FALSE);
        leaf->name = g_strdup(raw->nodes[lb->chain[0]].name);
        leaf->element_def = lb->element_def;
        leaf->list_def = lb->list_def;

        rt_parquet_column *c = &leaf->pub;
        c->path = leaf->path;
        c->name = leaf->name;
        c->physical = (rt_parquet_physical)n->physical;
        c->type_length = n->physical == RT_PARQUET_FIXED_LEN_BYTE_ARRAY ? n->type_length
                         : n->physical == RT_PARQUET_INT96              ? 12
                                                                        : 0;
        c->logical = logical_of(n, &c->int_bits, &c->int_signed);
        c->max_definition_level = lb->max_def;
        c->max_repetition_level = lb->max_rep;
        c->shape = lb->max_rep == 0   ? RT_PARQUET_SCALAR
                   : lb->max_rep == 1 ? RT_PARQUET_LIST
                                      : RT_PARQUET_NESTED;
        if (c->shape == RT_PARQUET_LIST) {
            c->nullable = lb->max_def > lb->element_def;
            c->list_nullable = lb->list_def > 0;
        } else {
            c->nullable = lb->max_def > 0;
        }
        c->fixed_size = -1;
    }
    return TRUE;
}

/* ---------------------------------------------------------------- row groups and chunks */

static gboolean path_matches(const raw_chunk *c, const raw_footer *raw, const leaf_build *lb)
{
    if (c->n_path != lb->depth)
        return FALSE;
    for (int d = 0; d < lb->depth; d++) {
        const schema_node *n = &raw->nodes[lb->chain[d]];
        if (!c->path[d].ptr || c->path[d].len != n->name_len ||
            memcmp(c->path[d].ptr, n->name, n->name_len) != 0)
            return FALSE;
    }
    return TRUE;
}

static gboolean build_row_groups(rt_parquet_file *f, const raw_footer *raw, GArray *builds, GError **error)
{
    f->n_row_groups = raw->n_groups;
    f->row_groups = g_new0(pq_row_group, raw->n_groups ? raw->n_groups : 1);
    int64_t first = 0;
    for (int g = 0; g < raw->n_groups; g++) {
        const raw_row_group *rg = &raw->groups[g];
        pq_row_group *out = &f->row_groups[g];
        if (!rg->has_columns || !rg->has_num_rows) {
            pq_error(error, f, RT_ERROR_FORMAT, "malformed footer: row group %d lacks %s", g,
                     rg->has_columns ? "num_rows" : "its column list");
            return FALSE;
        }
        if (rg->num_rows < 0 || rg->num_rows > INT64_MAX - first) {
            pq_error(error, f, RT_ERROR_FORMAT,
                     "malformed footer: row group %d has %" G_GINT64_FORMAT " rows", g, rg->num_rows);
            return FALSE;
        }
        if (rg->n_chunks != f->n_leaves) {
            pq_error(error, f, RT_ERROR_FORMAT,
                     "malformed footer: row group %d has %d column chunks, the schema %d columns", g,
                     rg->n_chunks, f->n_leaves);
            return FALSE;
        }
        out->num_rows = rg->num_rows;
        out->first_row = first;
        first += rg->num_rows;
        out->chunks = g_new0(pq_chunk, f->n_leaves ? f->n_leaves : 1);
        for (int i = 0; i < f->n_leaves; i++) {
            const raw_chunk *c = &rg->chunks[i];
            const pq_leaf *leaf = &f->leaves[i];
            const leaf_build *lb = &g_array_index(builds, leaf_build, i);
            const char *what = NULL;
            int code = RT_ERROR_FORMAT;
            if (c->external) {
                what = "its data is in another file (file_path is set), which is not supported";
                code = RT_ERROR_UNSUPPORTED;
            } else if (c->encrypted) {
                what = "it is encrypted, which is not supported";
                code = RT_ERROR_UNSUPPORTED;
            } else if (!c->has_meta) {
                what = "it has no column metadata";
            } else if ((c->seen & (CM_TYPE | CM_PATH | CM_CODEC | CM_NUM_VALUES | CM_SIZE | CM_DATA)) !=
                       (CM_TYPE | CM_PATH | CM_CODEC | CM_NUM_VALUES | CM_SIZE | CM_DATA)) {
                what = "its metadata lacks a required field";
            } else if (!path_matches(c, raw, lb)) {
                what = "its path_in_schema does not match the schema";
            } else if (c->physical != (int)leaf->pub.physical) {
                what = "its physical type differs from the schema's";
            } else if (c->num_values < 0 || c->total_compressed < 0) {
                what = "it has a negative value count or size";
            }
            if (what) {
                pq_error(error, f, code, "row group %d, column '%s': %s", g, leaf->path, what);
                return FALSE;
            }
            int64_t start = c->data_page_offset;
            if (c->has_dictionary_offset && c->dictionary_page_offset > 0 &&
                (c->data_page_offset <= 0 || c->dictionary_page_offset < c->data_page_offset))
                start = c->dictionary_page_offset;
            pq_chunk *pc = &out->chunks[i];
            pc->codec = c->codec;
            pc->num_values = c->num_values;
            if (c->total_compressed == 0) {
                pc->start = pc->end = 0;
            } else if (start < 4 || start > f->data_end || c->total_compressed > f->data_end - start) {
                pq_error(error, f, RT_ERROR_FORMAT,
                         "row group %d, column '%s': column chunk bytes [%" G_GINT64_FORMAT
                         ", +%" G_GINT64_FORMAT ") lie outside the data area [4, %" G_GINT64_FORMAT ")",
                         g, leaf->path, start, c->total_compressed, f->data_end);
                return FALSE;
            } else {
                pc->start = start;
                pc->end = start + c->total_compressed;
            }
            /* every row has at least one level entry; flat columns exactly one */
            gboolean count_ok = leaf->pub.max_repetition_level == 0 ? c->num_values == rg->num_rows
                                                                    : c->num_values >= rg->num_rows;
            if (!count_ok || (c->num_values > 0 && pc->end == 0)) {
                pq_error(error, f, RT_ERROR_FORMAT,
                         "row group %d, column '%s': the column chunk holds %" G_GINT64_FORMAT
                         " values in %" G_GINT64_FORMAT " bytes for %" G_GINT64_FORMAT " rows",
                         g, leaf->path, c->num_values, c->total_compressed, rg->num_rows);
                return FALSE;
            }
        }
    }
    if (first != raw->num_rows) {
        pq_error(error, f, RT_ERROR_FORMAT,
                 "malformed footer: the file says %" G_GINT64_FORMAT
                 " rows but its row groups hold %" G_GINT64_FORMAT,
                 raw->num_rows, first);
        return FALSE;
    }
    f->num_rows = first;
    return TRUE;
}

gboolean pq_parse_footer(rt_parquet_file *f, const uint8_t *footer, size_t len, GError **error)
{
    rt_thrift_reader r;
    raw_footer raw = {0};
    GArray *builds = NULL;
    gboolean ok = FALSE;

    rt_thrift_init(&r, footer, len);
    read_file_metadata(&r, &raw, f);
    if (rt_thrift_failed(&r)) {
        pq_error(error, f, RT_ERROR_FORMAT, "malformed footer: %s (near byte %zu of %zu)",
                 rt_thrift_error(&r), rt_thrift_consumed(&r), len);
        goto out;
    }
    if ((raw.seen & (FM_SCHEMA | FM_NUM_ROWS | FM_ROW_GROUPS)) != (FM_SCHEMA | FM_NUM_ROWS | FM_ROW_GROUPS)) {
        pq_error(error, f, RT_ERROR_FORMAT, "malformed footer: it lacks the %s",
                 !(raw.seen & FM_SCHEMA)     ? "schema"
                 : !(raw.seen & FM_NUM_ROWS) ? "row count"
                                             : "row group list");
        goto out;
    }
    if (!build_leaves(f, &raw, len, &builds, error))
        goto out;
    if (!build_row_groups(f, &raw, builds, error))
        goto out;
    ok = TRUE;
out:
    if (builds)
        g_array_free(builds, TRUE);
    raw_footer_clear(&raw);
    return ok;
}
