/* html_failures.c — the HTML report's failure tables: the top failures of the run, most
 * severe first (reports/failures.h), then each op x dtype's failures (the heatmap cells'
 * targets, #fail-OP-DT). Case ID, op, dtype and verdict stay on one line; only what
 * decided wraps, and a table wider than the window scrolls in its own box. Every case
 * links to its triage block. */
#include <stdio.h>
#include <stdlib.h>

#include "core/paths.h"
#include "reports/html_parts.h"
#include "reports/xml.h"

/* Case ID, op, dtype, verdict, headroom used and what decided: the cells every failure row has. */
static void failure_cells(const ug_report *r, const ug_failure *x, FILE *f)
{
    char used[32];
    fprintf(f, "<td class=\"nw\">");
    ug_html_case_link(f, r, x->case_id);
    fprintf(f, "</td><td class=\"nw l\">");
    ug_xml_escape_clean(f, x->op);
    fprintf(f, "</td><td class=\"nw l\">");
    ug_xml_escape_clean(f, x->dtype);
    fprintf(f, "</td><td class=\"nw l\">");
    ug_xml_escape_clean(f, x->verdict);
    fprintf(f, "</td><td class=\"nw\">%s</td><td class=\"fig\">", ug_html_used(x->used, used, sizeof used));
    ug_xml_escape_clean(f, x->figure);
    fprintf(f, "</td>");
}

static const char *const failure_head = "<th>case</th><th>op</th><th>dtype</th><th>verdict</th><th>headroom used</th>"
                                        "<th>what decided</th>";

static void top_failures(const ug_report *r, FILE *f)
{
    size_t shown = r->failures.n < (size_t)r->top ? r->failures.n : (size_t)r->top;
    fprintf(f, "<section id=\"failures\"><h2>Top failures</h2>\n");
    if (!shown) {
        fprintf(f, "<p>%s</p></section>\n", r->failures.n ? "None listed (--top 0)." : "No failures in this run.");
        return;
    }
    fprintf(f,
            "<p>%zu of %zu failing cases, most severe first: ranked by the share of its allowance each used "
            "(scale-free, never raw ulps). A case ID leads to its triage block.</p>\n<div class=\"scroll\">"
            "<table class=\"fails\"><tr><th>#</th>%s</tr>\n",
            shown, r->failures.n, failure_head);
    for (size_t i = 0; i < shown; i++) {
        fprintf(f, "<tr class=\"failure\"><td>%zu</td>", i + 1);
        failure_cells(r, &r->failures.v[i], f);
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table></div></section>\n");
}

/* The command that lists every failure of an op, when the page shows only some. */
static void cell_more(const ug_report *r, int op, long more, FILE *f)
{
    char *db = r->db_path[0] ? ug_shell_word(r->db_path) : NULL;
    fprintf(f, "<p class=\"more\">%ld more: <code>%s failures --run %ld --op %s", more, ug_self_command(), r->run_id,
            ug_op_name(op));
    if (db) {
        fprintf(f, " --db ");
        ug_xml_escape_clean(f, db);
    }
    fprintf(f, "</code></p>\n");
    free(db);
}

static void cell_list(const ug_report *r, int op, int dt, size_t listed, const int *cell, FILE *f)
{
    const ug_tally *t = &r->op_dtype[op][dt];
    long failing = t->cases - t->pass - t->skip;
    size_t n = 0;
    if (failing <= 0 || !listed) return;
    fprintf(f,
            "<h3 id=\"fail-%s-%s\">%s &times; %s: %ld failing of %ld cases</h3>\n<div class=\"scroll\">"
            "<table class=\"fails\"><tr>%s</tr>\n",
            ug_op_name(op), ug_dtype_name((ug_dtype)dt), ug_op_name(op), ug_dtype_name((ug_dtype)dt), failing, t->cases,
            failure_head);
    for (size_t i = 0; i < r->failures.n && n < listed; i++) {
        if (cell[i] != op * UG_DT_COUNT + dt) continue;
        fprintf(f, "<tr class=\"cellfail\">");
        failure_cells(r, &r->failures.v[i], f);
        fprintf(f, "</tr>\n");
        n++;
    }
    fprintf(f, "</table></div>\n");
    if ((long)n < failing) cell_more(r, op, failing - (long)n, f);
}

static void cell_lists(const ug_report *r, FILE *f)
{
    size_t listed[UG_OP_COUNT][UG_DT_COUNT], any = 0;
    int *cell = malloc((r->failures.n + 1) * sizeof *cell);
    if (!cell) return;
    ug_html_cell_counts(r, listed, cell);
    for (int op = 0; op < UG_OP_COUNT; op++)
        for (int dt = 0; dt < UG_DT_COUNT; dt++) any += listed[op][dt];
    if (any) {
        fprintf(f, "<section id=\"by-cell\"><h2>Failures by operator &times; dtype</h2>\n<p>Each list is a heatmap "
                   "cell's, most severe first.</p>\n");
        for (int op = 0; op < UG_OP_COUNT; op++)
            for (int dt = 0; dt < UG_DT_COUNT; dt++) cell_list(r, op, dt, listed[op][dt], cell, f);
        fprintf(f, "</section>\n");
    }
    free(cell);
}

void ug_html_write_failures(const ug_report *r, FILE *f)
{
    top_failures(r, f);
    cell_lists(r, f);
}
