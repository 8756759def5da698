/* html_changes.c — the top of the HTML report: "Since run N (like for like)", what changed
 * against the last run of the same plan hash, selection, backend, sample and standard
 * (db/query_compare.h): the counts, then each kind's cases (new failures first), every
 * case linked to its triage block; or that there is no such run before this one. */
#include <stdio.h>
#include <stdlib.h>

#include "core/paths.h"
#include "reports/html_parts.h"
#include "reports/xml.h"

static const ug_change kinds[] = {UG_CHANGE_NEW_FAIL, UG_CHANGE_FIXED, UG_CHANGE_DRIFT, UG_CHANGE_STILL_FAILING};

static const char *kind_count(ug_change k)
{
    switch (k) {
    case UG_CHANGE_NEW_FAIL: return "new failures";
    case UG_CHANGE_FIXED: return "fixed";
    case UG_CHANGE_DRIFT: return "drift";
    case UG_CHANGE_STILL_FAILING: return "still failing";
    default: return "unchanged";
    }
}

static const char *kind_title(ug_change k)
{
    switch (k) {
    case UG_CHANGE_NEW_FAIL: return "New failures";
    case UG_CHANGE_FIXED: return "Fixed";
    case UG_CHANGE_DRIFT: return "Drift: passing, but headroom lost";
    case UG_CHANGE_STILL_FAILING: return "Still failing";
    default: return "Unchanged";
    }
}

/* The start of run `run` when the history holds it, else "". */
static const char *run_started(const ug_report *r, long run)
{
    for (int i = 0; i < r->n_hist; i++)
        if (r->hist_run[i] == run) return r->hist_started[i];
    return "";
}

static void change_row(const ug_report *r, const ug_report_change *c, FILE *f)
{
    char a[32], b[32];
    fprintf(f, "<tr class=\"change\"><td class=\"nw\">");
    ug_html_case_link(f, r, c->case_id);
    fprintf(f, "</td><td class=\"nw l\">%s</td><td class=\"nw l\">", c->op >= 0 ? ug_op_name(c->op) : "?");
    ug_xml_escape_clean(f, c->dtype);
    fprintf(f, "</td><td class=\"nw l\">");
    ug_xml_escape_clean(f, c->verdict_a[0] ? c->verdict_a : "(none)");
    fprintf(f, " &rarr; ");
    ug_xml_escape_clean(f, c->verdict_b);
    fprintf(f, "</td><td class=\"nw\">%s &rarr; %s</td><td class=\"fig\">", ug_html_used(c->used_a, a, sizeof a),
            ug_html_used(c->used_b, b, sizeof b));
    ug_xml_escape_clean(f, c->message);
    fprintf(f, "</td></tr>\n");
}

/* The hint naming the command that lists every change of a kind the page leaves out. */
static void more_hint(const ug_report *r, long more, FILE *f)
{
    char *db = r->db_path[0] ? ug_shell_word(r->db_path) : NULL;
    fprintf(f, "<p class=\"more\">%ld more: <code>%s diff %ld %ld", more, ug_self_command(), r->compared_run,
            r->run_id);
    if (db) {
        fprintf(f, " --db ");
        ug_xml_escape_clean(f, db);
    }
    fprintf(f, "</code></p>\n");
    free(db);
}

static void change_list(const ug_report *r, ug_change k, FILE *f)
{
    if (!r->n_change[k]) {
        fprintf(f, "<p class=\"none\" id=\"chg-%s\">%s: none.</p>\n", ug_change_key(k), kind_title(k));
        return;
    }
    fprintf(f, "<h3 id=\"chg-%s\">%s (%ld)</h3>\n<p>Most severe first: by the headroom %s used.</p>\n",
            ug_change_key(k), kind_title(k), r->n_change[k], k == UG_CHANGE_FIXED ? "the compared run" : "this run");
    fprintf(f,
            "<div class=\"scroll\"><table class=\"changes\"><tr><th>case</th><th>op</th><th>dtype</th>"
            "<th>run %ld &rarr; %ld</th><th>headroom used</th><th>message (run %ld)</th></tr>\n",
            r->compared_run, r->run_id, r->run_id);
    size_t *idx = malloc((r->n_changes + 1) * sizeof *idx);
    size_t shown = idx ? ug_report_changes_ranked(r, k, idx) : 0;
    for (size_t i = 0; i < shown; i++) change_row(r, &r->changes[idx[i]], f);
    free(idx);
    fprintf(f, "</table></div>\n");
    if ((long)shown < r->n_change[k]) more_hint(r, r->n_change[k] - (long)shown, f);
}

void ug_html_write_changes(const ug_report *r, FILE *f)
{
    if (!r->compared_run) {
        fprintf(f, "<section id=\"changes\"><h2>Since the last like-for-like run</h2>\n<p class=\"nochange\">No "
                   "like-for-like run before this one (the same plan hash, selection, backend, sample and deciding "
                   "standard): nothing to compare with yet.</p></section>\n");
        return;
    }
    char date[24];
    ug_html_short_date(run_started(r, r->compared_run), date, sizeof date);
    fprintf(f, "<section id=\"changes\"><h2>Since run %ld (like for like)</h2>\n<p>Against run %ld%s", r->compared_run,
            r->compared_run, date[0] ? " (" : "");
    ug_xml_escape_clean(f, date);
    fprintf(f,
            "%s, the last run of the same plan hash, selection, backend, sample and deciding standard. Drift: a "
            "passing case that now uses over %.2g of what its standard allows and more than %.0f times what it "
            "used.</p>\n<ul class=\"counts\">",
            date[0] ? " UTC)" : "", UG_DRIFT_FLOOR, UG_DRIFT_FACTOR_DEFAULT);
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        fprintf(f, "<li class=\"%s%s\"><a href=\"#chg-%s\"><b>%ld</b> %s</a></li>", ug_change_key(kinds[i]),
                r->n_change[kinds[i]] ? " some" : "", ug_change_key(kinds[i]), r->n_change[kinds[i]],
                kind_count(kinds[i]));
    fprintf(f, "<li><b>%ld</b> unchanged</li></ul>\n", r->n_change[UG_CHANGE_NONE]);
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) change_list(r, kinds[i], f);
    fprintf(f, "</section>\n");
}
