/* src/core/json-write.h: JSON text exactly as Python's json module writes it.
 *
 * LeRobot writes every JSON file of a checkpoint with Python's json.dump: train_config.json and
 * config.json with indent=4, the processor files with indent=2, training_step.json and
 * optimizer_param_groups.json with indent=4 (and ensure_ascii=False, which changes nothing for
 * their ASCII content). Matching that byte for byte keeps diffs between a LeRobot checkpoint and
 * ours down to the values. The rules followed:
 *   - indent >= 0: one member or item per line, nested lines indented by `indent` more spaces,
 *     "key": value; empty objects and arrays stay "{}" and "[]";
 *   - indent < 0 (json.dumps without indent, as metrics.jsonl uses): one line, separators ", "
 *     and ": ";
 *   - floats as Python's repr (shortest text that reads back: 1e-05, 0.0001, 10.0; NaN,
 *     Infinity, -Infinity); integers in decimal;
 *   - strings with Python's escapes (\", \\, \n, \r, \t, \b, \f, other controls as \u00XX) and,
 *     as ensure_ascii=True does, every non-ASCII character as \uXXXX (surrogate pairs above
 *     U+FFFF). */
#ifndef ROBOTRAIN_CORE_JSON_WRITE_H
#define ROBOTRAIN_CORE_JSON_WRITE_H

#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* Appends node as JSON text to out (no trailing newline). */
void rt_json_append(GString *out, JsonNode *node, int indent);
/* The same for a node nested depth levels deep in a document being written (its closing
 * bracket is indented by depth * indent spaces). */
void rt_json_append_at(GString *out, JsonNode *node, int indent, int depth);

/* node as JSON text followed by a newline when indent >= 0 (json.dump writes none; LeRobot's
 * files have none either: pass newline FALSE to match them). Returns (transfer full) a string to
 * g_free. */
char *rt_json_to_text(JsonNode *node, int indent, gboolean newline);

/* Appends a double as Python's repr writes it ("1e-05", "10.0", "NaN"). */
void rt_json_append_double(GString *out, double value);

/* Appends text as a JSON string literal with ensure_ascii escapes. */
void rt_json_append_string(GString *out, const char *text);

/* A copy of node that shares nothing with it (json_node_copy() shares objects and arrays).
 * Returns (transfer full). */
JsonNode *rt_json_deep_copy(JsonNode *node);

G_END_DECLS

#endif
