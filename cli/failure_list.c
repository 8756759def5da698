/* failure_list.c — a run's failing cases ranked and printed for `failures`, `sweep` and
 * `check` (see failure_list.h): read through db/query_failures.h, worded by
 * oracles/figure.h, printed escaped, with a triage line only for a valid case ID. */
#include "cli/failure_list.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/utf8.h"
#include "oracles/figure.h"

/* Writes the escape of the character at c (UTF-8) into out when it must not reach a terminal
 * as it is (C0 and C1 controls, DEL, direction overrides and isolates): its bytes used, else 0. */
static size_t escape_one(const unsigned char *c, char *out)
{
    size_t used = 0;
    if (c[0] < 0x20 || c[0] == 0x7f) {
        sprintf(out, "\\x%02x", c[0]);
        used = 1;
    } else if (c[0] == 0xc2 && c[1] >= 0x80 && c[1] <= 0x9f) {
        sprintf(out, "\\u%04x", c[1]);
        used = 2;
    } else if (c[0] == 0xe2 &&
               ((c[1] == 0x80 && c[2] >= 0xaa && c[2] <= 0xae) || (c[1] == 0x81 && c[2] >= 0xa6 && c[2] <= 0xa9))) {
        sprintf(out, "\\u%04x", 0x2000 | ((c[1] & 0x3f) << 6) | (c[2] & 0x3f));
        used = 3;
    }
    return used;
}

char *ug_failure_escape(const char *s)
{
    char *c = ug_failure_clean_utf8(s);
    char *out = c ? malloc(6 * strlen(c) + 1) : NULL, *w = out;
    for (const unsigned char *p = (const unsigned char *)c; out && *p;) {
        size_t used = escape_one(p, w);
        if (used) {
            w += strlen(w);
            p += used;
        } else {
            *w++ = (char)*p++;
        }
    }
    if (w) *w = 0;
    free(c);
    return out;
}

static void print_escaped(FILE *f, const char *fmt, const char *s)
{
    char *e = ug_failure_escape(s);
    fprintf(f, fmt, e ? e : "?");
    free(e);
}

void ug_failures_print_text(const ug_failure_list *l, size_t top, const char *db_path, long run, const char *backend,
                            FILE *f)
{
    for (size_t i = 0; i < l->n && i < top; i++) {
        const ug_failure *x = &l->v[i];
        fprintf(f, "  %2zu. ", i + 1);
        print_escaped(f, "%s  ", x->case_id);
        print_escaped(f, "%-28s ", x->op);
        print_escaped(f, "%-5s ", x->dtype);
        print_escaped(f, "%-9s ", x->verdict);
        print_escaped(f, "%s\n", x->figure);
        char *line = ug_failure_id_ok(x->case_id) ? ug_triage_line(x->case_id, db_path, run, backend) : NULL;
        if (line)
            fprintf(f, "      %s\n", line);
        else if (ug_failure_id_ok(x->case_id))
            fprintf(f, "      (no triage line: out of memory)\n");
        else
            fprintf(f, "      (row %zu: the case ID is not 16 hex digits; no triage line)\n", i + 1);
        free(line);
    }
}

static void add_clean(cJSON *o, const char *key, const char *s)
{
    char *c = ug_failure_clean_utf8(s);
    cJSON_AddStringToObject(o, key, c ? c : "");
    free(c);
}

static cJSON *row_json(const ug_failure *x, size_t rank, const char *db_path, long run, const char *backend)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "rank", (double)rank);
    add_clean(o, "case_id", x->case_id);
    add_clean(o, "op", x->op);
    add_clean(o, "dtype", x->dtype);
    add_clean(o, "verdict", x->verdict);
    add_clean(o, "figure", x->figure);
    if (isfinite(x->severity))
        cJSON_AddNumberToObject(o, "severity", x->severity);
    else
        cJSON_AddStringToObject(o, "severity", "inf");
    cJSON_AddItemToObject(o, "standards", cJSON_Duplicate(x->standards, 1));
    cJSON_AddItemToObject(o, "thresholds", x->thresholds ? cJSON_Duplicate(x->thresholds, 1) : cJSON_CreateNull());
    char *line = ug_failure_id_ok(x->case_id) ? ug_triage_line(x->case_id, db_path, run, backend) : NULL;
    if (line)
        cJSON_AddStringToObject(o, "triage", line);
    else
        cJSON_AddNullToObject(o, "triage");
    if (!ug_failure_id_ok(x->case_id)) cJSON_AddStringToObject(o, "refused", "the case ID is not 16 hex digits");
    free(line);
    return o;
}

void ug_failures_print_json(const ug_failure_list *l, size_t top, const char *db_path, long run, const char *backend,
                            FILE *f)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < l->n && i < top; i++)
        cJSON_AddItemToArray(a, row_json(&l->v[i], i + 1, db_path, run, backend));
    char *s = cJSON_Print(a);
    fprintf(f, "%s\n", s ? s : "[]");
    free(s);
    cJSON_Delete(a);
}

/* "(N more: ulpgym failures --run R --db DB)" */
static void print_more(size_t more, const char *db_path, long run, FILE *f)
{
    char *q = ug_shell_word(db_path);
    fprintf(f, "  (%zu more: %s failures --run %ld --db %s)\n", more, ug_self_command(), run, q ? q : "?");
    free(q);
}

int ug_failures_summary(const char *db_path, long run, long top, FILE *f)
{
    ug_db *db;
    char err[512], abs[PATH_MAX];
    const char *path = ug_db_default_path(db_path);
    if (ug_db_open(path, UG_DB_READONLY, &db, err, sizeof err)) {
        fprintf(stderr, "ulpgym: warning: the failing cases cannot be listed: %s\n", err);
        return -1;
    }
    ug_run_record rec;
    ug_failure_list l;
    ug_db_failure_filter flt = {.run = run, .standard = -1};
    int rc = ug_db_run_get(db, run, &rec, err, sizeof err) || ug_failures_read(db, &flt, 0, &l, err, sizeof err);
    ug_db_close(db);
    if (rc) {
        fprintf(stderr, "ulpgym: warning: the failing cases cannot be listed: %s\n", err);
        return -1;
    }
    const char *shown = realpath(path, abs) ? abs : path;
    size_t n = top > 0 ? (size_t)top : 0;
    if (l.n && n) {
        fprintf(f, "failing cases, most severe first (%zu of %zu):\n", n < l.n ? n : l.n, l.n);
        ug_failures_print_text(&l, n, shown, run, rec.backend, f);
    }
    if (l.n > n) print_more(l.n - n, shown, run, f);
    ug_failures_free(&l);
    return 0;
}
