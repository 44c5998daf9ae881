/* "Did you mean ...?": the nearest candidate by optimal-string-alignment distance. */
#include "config.h"

#include <string.h>

#include <robotrain/option.h>

/* Words longer than this are not compared (no real flag is; it bounds the work). */
#define SUGGEST_MAX_LENGTH 256

/* Case and '-' vs '_' are not typos worth counting: --num-processes means --num_processes. */
static char fold(char c)
{
    c = g_ascii_tolower(c);
    return c == '-' ? '_' : c;
}

/* Edit distance with insertions, deletions, substitutions and adjacent transpositions. */
static size_t osa_distance(const char *a, size_t n, const char *b, size_t m)
{
    /* three rows: i-2, i-1, i */
    size_t *rows = g_new(size_t, 3 * (m + 1));
    size_t *prev2 = rows, *prev = rows + (m + 1), *cur = rows + 2 * (m + 1);
    for (size_t j = 0; j <= m; j++)
        prev[j] = j;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t cost = fold(a[i - 1]) == fold(b[j - 1]) ? 0 : 1;
            size_t v = MIN(MIN(prev[j] + 1, cur[j - 1] + 1), prev[j - 1] + cost);
            if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) && fold(a[i - 2]) == fold(b[j - 1]))
                v = MIN(v, prev2[j - 2] + 1);
            cur[j] = v;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    size_t d = prev[m];
    g_free(rows);
    return d;
}

const char *rt_suggest_nearest(const char *word, const char *const *candidates, size_t n)
{
    g_return_val_if_fail(word != NULL, NULL);
    size_t len = strlen(word);
    if (len == 0 || len > SUGGEST_MAX_LENGTH)
        return NULL;
    /* about one edit per four characters, at least one, at most four */
    size_t limit = CLAMP((len + 3) / 4, 1, 4);
    const char *best = NULL;
    size_t best_distance = limit + 1;
    for (size_t i = 0; i < n; i++) {
        const char *c = candidates[i];
        if (!c)
            continue;
        size_t m = strlen(c);
        if (m > SUGGEST_MAX_LENGTH || (m > len ? m - len : len - m) >= best_distance)
            continue;
        size_t d = osa_distance(word, len, c, m);
        if (d < best_distance) {
            best_distance = d;
            best = c;
        }
    }
    return best;
}
