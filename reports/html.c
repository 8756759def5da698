/* html.c — the HTML report: one self-contained page (inline CSS and SVG; no script, no
 * network, no external font or image) that leads with what changed since the last
 * like-for-like run (html_changes.c), then the summary, the pass-rate trend on a zoomed
 * axis, the op x dtype heatmap whose cells link to their failures, the operator table with
 * per-op sparklines and each op's closest pass (html_charts.c), headroom histograms
 * (html_hist.c), the failure tables (html_failures.c), a triage block per listed case
 * (html_triage.c), and the database's latest kernel-timing table when it has one
 * (reports/bench_report.c). Element ids (changes, summary, history, heatmap, ops,
 * histograms, failures, by-cell, triage, kernel-timing, case-ID) are stable: tests and
 * links use them (html_parts.h). */
#include <stdio.h>

#include "reports/bench_report.h"
#include "reports/html_parts.h"
#include "reports/xml.h"

/* The pass-rate cell of t: a dash when every case was skipped (no verdict to rate). */
static const char *pass_cell(const ug_tally *t, char *buf, size_t len) { return ug_tally_pass_cell(t, "—", buf, len); }

static const char *cert_cell(const ug_tally *t, char *buf, size_t len)
{
    return ug_tally_cert_cell(t, "&ndash;", buf, len);
}

static const char *const css =
    "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1500px}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;vertical-align:top}"
    "th,td:first-child,td.l{text-align:left}th,.nw{white-space:nowrap}"
    "td.fig{text-align:left;min-width:16em;overflow-wrap:anywhere}"
    ".scroll{overflow-x:auto;max-width:100%}svg{max-width:100%;height:auto}"
    "tr.total{font-weight:bold}.hists{display:flex;flex-wrap:wrap}figure{margin:6px}"
    "figure.wide{margin:6px 0}figcaption{font-size:12px;max-width:60em}"
    ".hists figcaption{text-align:center;max-width:300px}"
    "code{font-size:12px}pre.cmd{white-space:pre-wrap;overflow-wrap:anywhere;background:#f5f5f5;padding:6px;"
    "font-size:12px;margin:4px 0}nav{position:sticky;top:0;background:#fff;padding:4px 0;border-bottom:1px solid #ddd}"
    "nav a{margin-right:1em}ul.counts{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:8px}"
    "ul.counts li{border:1px solid #ccc;border-radius:4px;padding:4px 10px}"
    "ul.counts li.new_failures.some{background:#fde0e0;border-color:#d62728}"
    "ul.counts li.fixed.some{background:#e0f5e0}ul.counts li.drift.some{background:#fff3d6}"
    "article.triage{border:1px solid #ccc;border-left:5px solid #d62728;padding:2px 12px;margin:12px 0}"
    "article.triage.pass{border-left-color:#2ca02c}article:target,h3:target{background:#fffbe6}"
    "section,article,h3,figure,p.none{scroll-margin-top:2.5em}" /* a followed link's target clears the sticky nav */
    ".kv{display:inline-block;margin-right:.8em;white-space:nowrap}svg.spark{vertical-align:middle}"
    "p.back{font-size:12px}p.none{margin:.4em 0;color:#555}#kernel-timing td:nth-child(2){text-align:left}";

static void write_head(const ug_report *r, FILE *f)
{
    fprintf(f,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>ulpgym run %ld</title>\n"
            "<style>%s</style></head><body>\n",
            r->run_id, css);
    /* every text from the database escaped, made valid UTF-8 first: a database may come from elsewhere */
    const char *parts[][2] = {{"plan <b>", r->plan},          {"</b> (hash ", r->plan_hash},
                              {"), backend <b>", r->backend}, {"</b>, build ", r->git_rev},
                              {", host ", r->host},           {", ", r->started},
                              {" &ndash; ", r->finished},     {", status ", r->status}};
    fprintf(f, "<h1>ulpgym run %ld</h1>\n<p id=\"meta\">", r->run_id);
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        fputs(parts[i][0], f);
        ug_xml_escape_clean(f, parts[i][1]);
    }
    fprintf(f, "; kernel %.1f s, oracle %.1f s", r->seconds_kernel, r->seconds_oracle);
    fprintf(f, "; judged %lld of %lld output elements", r->elems_judged, r->elems_total);
    if (r->primary[0]) {
        fprintf(f, "; every outcome decided by <b>");
        ug_xml_escape_clean(f, r->primary);
        fprintf(f, "</b> (<code>--primary</code>)");
    }
    fprintf(f, "</p>\n");
}

static void write_nav(const ug_report *r, FILE *f)
{
    fprintf(f,
            "<nav><a href=\"#changes\">Changes</a><a href=\"#summary\">Summary</a><a href=\"#history\">Trend</a>"
            "<a href=\"#heatmap\">Heatmap</a><a href=\"#ops\">Operators</a><a href=\"#histograms\">Headroom</a>"
            "<a href=\"#failures\">Failures</a>%s%s</nav>\n",
            r->n_details ? "<a href=\"#triage\">Triage</a>" : "",
            r->has_bench ? "<a href=\"#kernel-timing\">Kernel timing</a>" : "");
}

static void write_summary(const ug_report *r, FILE *f)
{
    char cert[24], pass[24];
    fprintf(f, "<section id=\"summary\"><h2>Summary</h2><div class=\"scroll\"><table><tr><th>group</th><th>cases</th>"
               "<th>passed</th><th>failed</th><th>other</th><th>pass rate</th><th>certified pass rate</th></tr>\n");
    for (int g = 0; g < UG_GROUP_COUNT; g++)
        if (r->group[g].cases)
            fprintf(f,
                    "<tr><td>%s</td><td>%ld</td><td>%ld</td><td>%ld</td><td>%ld</td><td>%s</td><td>%s</td>"
                    "</tr>\n",
                    ug_group_name((ug_group)g), r->group[g].cases, r->group[g].pass, r->group[g].fail,
                    r->group[g].other, pass_cell(&r->group[g], pass, sizeof pass),
                    cert_cell(&r->group[g], cert, sizeof cert));
    fprintf(f,
            "<tr class=\"total\"><td>total</td><td>%ld</td><td>%ld</td><td>%ld</td><td>%ld</td><td>%s</td>"
            "<td>%s</td></tr></table></div>\n",
            r->total.cases, r->total.pass, r->total.fail, r->total.other, pass_cell(&r->total, pass, sizeof pass),
            cert_cell(&r->total, cert, sizeof cert));
    fprintf(f,
            "<p>Pass rate: cases whose outcome is PASS, decided by %s, among the cases not skipped (%ld SKIP, "
            "counted under other, are no verdict and left out of the denominator; — where every case was "
            "skipped). Certified pass rate: cases whose <code>certified</code> verdict is PASS among the %ld it "
            "judged (PASS or FAIL); NA cases and cases without verdicts (SKIP, ERROR, CRASH, TIMEOUT) are left "
            "out.</p>\n",
            r->primary[0] ? "the run's <code>--primary</code> standard" : "each op's primary standard", r->total.skip,
            r->total.cert_judged);
    if (r->regressions)
        fprintf(f, "<p>Including %ld regression cases found by fuzzing (origin fuzz).</p>\n", r->regressions);
    fprintf(f, "</section>\n");
}

/* One operator's row: tallies, rates, its trend and the passing case nearest its limit. */
static void op_row(const ug_report *r, int op, FILE *f)
{
    char cert[24], pass[24], used[32];
    const ug_tally *t = &r->op[op];
    fprintf(f,
            "<tr><td class=\"nw\"><a href=\"#hist-%s\">%s</a></td><td class=\"nw l\">%s</td><td>%ld</td><td>%ld</td>"
            "<td>%ld</td><td>%ld</td><td>%s</td><td>%s</td><td>",
            ug_op_name(op), ug_op_name(op), ug_group_name(ug_op_group(op)), t->cases, t->pass, t->fail, t->other,
            pass_cell(t, pass, sizeof pass), cert_cell(t, cert, sizeof cert));
    ug_html_write_sparkline(r, op, f);
    fprintf(f, "</td><td class=\"nw\">");
    if (r->closest_used[op] >= 0) {
        fprintf(f, "%s ", ug_html_used(r->closest_used[op], used, sizeof used));
        ug_html_case_link(f, r, r->closest_case[op]);
    } else
        fprintf(f, "&ndash;");
    fprintf(f, "</td></tr>\n");
}

static void write_ops(const ug_report *r, FILE *f)
{
    fprintf(f, "<section id=\"ops\"><h2>Operators</h2>\n<p>Trend: the op's pass rate over the same runs as the chart "
               "above, on its zoomed axis (the green line is 100 %%, a red dot a run with failures). Closest pass: "
               "the passing case that used most of what its deciding standard allows (1 = the limit).</p>\n"
               "<div class=\"scroll\"><table><tr><th>operator</th><th>group</th><th>cases</th><th>passed</th>"
               "<th>failed</th><th>other</th><th>pass rate</th><th>certified pass rate</th><th>trend</th>"
               "<th>closest pass</th></tr>\n");
    for (int op = 0; op < UG_OP_COUNT; op++)
        if (r->op[op].cases) op_row(r, op, f);
    fprintf(f, "</table></div></section>\n");
}

void ug_report_write_html(const ug_report *r, FILE *f)
{
    write_head(r, f);
    write_nav(r, f);
    ug_html_write_changes(r, f);
    write_summary(r, f);
    ug_html_write_history(r, f);
    ug_html_write_heatmap(r, f);
    write_ops(r, f);
    ug_html_write_histograms(r, f);
    ug_html_write_failures(r, f);
    ug_html_write_triage(r, f);
    if (r->has_bench) {
        fprintf(f, "<div class=\"scroll\">");
        ug_bench_write_html_section(&r->bench, f);
        fprintf(f, "</div>\n");
    }
    fprintf(f, "</body></html>\n");
}
