/* html.c — the HTML report: one self-contained file (inline CSS and SVG, no scripts, no
 * external fonts or images) with the summary table, a pass-rate history chart per group,
 * an op x dtype heatmap, per-op max-ulp histograms and the top failures with the command
 * that triages each, and the database's latest kernel-timing table when it has one
 * (reports/bench_report.c). Element ids (summary, history, heatmap, histograms, failures,
 * kernel-timing) are stable: tests look for them. */
#include <stdio.h>
#include <stdlib.h>

#include "reports/bench_report.h"
#include "reports/report.h"
#include "reports/xml.h"

/* The pass-rate cell of t: a dash when every case was skipped (no verdict to rate). */
static const char *pass_cell(const ug_tally *t, char *buf, size_t len) { return ug_tally_pass_cell(t, "—", buf, len); }

static const char *cert_cell(const ug_tally *t, char *buf, size_t len)
{
    return ug_tally_cert_cell(t, "&ndash;", buf, len);
}

/* red (0 %) -> amber -> green (100 %) */
static void heat_color(double p, char *buf, size_t len)
{
    int r = p < 50 ? 220 : (int)(220 - (p - 50) * 3.4), g = p < 50 ? (int)(60 + p * 3.2) : 220;
    snprintf(buf, len, "rgb(%d,%d,90)", r < 40 ? 40 : r, g > 220 ? 220 : g);
}

static void write_summary(const ug_report *r, FILE *f)
{
    char cert[24], pass[24];
    fprintf(f, "<section id=\"summary\"><h2>Summary</h2><table><tr><th>group</th><th>cases</th><th>passed</th>"
               "<th>failed</th><th>other</th><th>pass rate</th><th>certified pass rate</th></tr>\n");
    for (int g = 0; g < UG_GROUP_COUNT; g++)
        if (r->group[g].cases)
            fprintf(f, "<tr><td>%s</td><td>%ld</td><td>%ld</td><td>%ld</td><td>%ld</td><td>%s</td><td>%s</td>"
                       "</tr>\n",
                    ug_group_name((ug_group)g), r->group[g].cases, r->group[g].pass, r->group[g].fail, r->group[g].other,
                    pass_cell(&r->group[g], pass, sizeof pass), cert_cell(&r->group[g], cert, sizeof cert));
    fprintf(f, "<tr class=\"total\"><td>total</td><td>%ld</td><td>%ld</td><td>%ld</td><td>%ld</td><td>%s</td>"
               "<td>%s</td></tr></table>\n",
            r->total.cases, r->total.pass, r->total.fail, r->total.other, pass_cell(&r->total, pass, sizeof pass),
            cert_cell(&r->total, cert, sizeof cert));
    fprintf(f, "<p>Pass rate: cases whose outcome is PASS, decided by %s, among the cases not skipped (%ld SKIP, "
               "counted under other, are no verdict and left out of the denominator; — where every case was "
               "skipped). Certified pass rate: cases whose <code>certified</code> verdict is PASS among the %ld it "
               "judged (PASS or FAIL); NA cases and cases without verdicts (SKIP, ERROR, CRASH, TIMEOUT) are left "
               "out.</p>\n",
            r->primary[0] ? "the run's <code>--primary</code> standard" : "each op's primary standard", r->total.skip,
            r->total.cert_judged);
    if (r->regressions) fprintf(f, "<p>Including %ld regression cases found by fuzzing (origin fuzz).</p>\n", r->regressions);
    fprintf(f, "</section>\n");
}

static void write_history(const ug_report *r, FILE *f)
{
    static const char *colors[UG_GROUP_COUNT] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd"};
    const int w = 640, h = 220, x0 = 50, y0 = 15, pw = 560, ph = 170;
    fprintf(f, "<section id=\"history\"><h2>Pass rate by run</h2>\n<p>Runs of this run's backend only (a mutant "
               "or plugin run has a history of its own); SKIP is left out of each rate.</p>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
               "width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"pass rate history per group\">\n", w, h);
    for (int p = 0; p <= 100; p += 25)
        fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%d\" y=\"%.1f\" "
                   "font-size=\"10\" text-anchor=\"end\">%d%%</text>\n",
                x0, x0 + pw, y0 + ph * (1 - p / 100.0), y0 + ph * (1 - p / 100.0), x0 - 4, y0 + ph * (1 - p / 100.0) + 3, p);
    for (int g = 0; g < UG_GROUP_COUNT; g++) {
        int any = 0;
        for (int i = 0; i < r->n_hist; i++) {
            if (r->hist_rate[i][g] < 0) continue;
            double x = x0 + (r->n_hist > 1 ? pw * (double)i / (r->n_hist - 1) : pw / 2.0);
            double y = y0 + ph * (1 - r->hist_rate[i][g] / 100.0);
            if (!any) fprintf(f, "<polyline class=\"series\" data-group=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
                              ug_group_name((ug_group)g), colors[g]);
            fprintf(f, "%.1f,%.1f ", x, y);
            any = 1;
        }
        if (any) fprintf(f, "\"/>\n");
        for (int i = 0; i < r->n_hist; i++) /* a dot per run: a group with one run has no line */
            if (r->hist_rate[i][g] >= 0)
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>run %ld %s: %.2f%%</title></circle>\n",
                        x0 + (r->n_hist > 1 ? pw * (double)i / (r->n_hist - 1) : pw / 2.0),
                        y0 + ph * (1 - r->hist_rate[i][g] / 100.0), colors[g], r->hist_run[i], ug_group_name((ug_group)g),
                        r->hist_rate[i][g]);
    }
    for (int i = 0; i < r->n_hist; i++) {
        double x = x0 + (r->n_hist > 1 ? pw * (double)i / (r->n_hist - 1) : pw / 2.0);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%ld</text>\n", x, y0 + ph + 14,
                r->hist_run[i]);
    }
    int ly = 0;
    for (int g = 0; g < UG_GROUP_COUNT; g++) {
        int has = 0;
        for (int i = 0; i < r->n_hist; i++) has |= r->hist_rate[i][g] >= 0;
        if (has)
            fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"%s\">%s</text>\n", x0 + 8 + 110 * ly++, h - 2,
                    colors[g], ug_group_name((ug_group)g));
    }
    fprintf(f, "</svg></section>\n");
}

static void write_heatmap(const ug_report *r, FILE *f)
{
    int rows = 0, col[UG_DT_COUNT], ncols = 0;
    for (int op = 0; op < UG_OP_COUNT; op++) rows += r->op[op].cases > 0;
    for (int dt = 0; dt < UG_DT_COUNT; dt++) { /* only dtypes the run has */
        int has = 0;
        for (int op = 0; op < UG_OP_COUNT; op++) has |= r->op_dtype[op][dt].cases > 0;
        col[dt] = has ? ncols++ : -1;
    }
    const int cw = 70, rh = 20, lw = 300, top = 20;
    fprintf(f, "<section id=\"heatmap\"><h2>Pass rate: operator &times; dtype</h2>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
               "width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"pass rate heatmap\">\n",
            lw + cw * ncols, top + rh * rows + 4);
    for (int dt = 0; dt < UG_DT_COUNT; dt++)
        if (col[dt] >= 0)
            fprintf(f, "<text x=\"%d\" y=\"14\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n",
                    lw + cw * col[dt] + cw / 2, ug_dtype_name((ug_dtype)dt));
    int row = 0;
    for (int op = 0; op < UG_OP_COUNT; op++) {
        if (!r->op[op].cases) continue;
        int y = top + rh * row++;
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%s</text>\n", lw - 6, y + 14, ug_op_name(op));
        for (int dt = 0; dt < UG_DT_COUNT; dt++) {
            const ug_tally *t = &r->op_dtype[op][dt];
            if (!t->cases) continue;
            char color[32], label[16];
            double rate = ug_tally_pass_rate(t);
            if (rate >= 0) heat_color(rate, color, sizeof color), snprintf(label, sizeof label, "%.0f%%", rate);
            else snprintf(color, sizeof color, "#cccccc"), snprintf(label, sizeof label, "skip"); /* no verdict: grey */
            fprintf(f, "<rect class=\"cell\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\">"
                       "<title>%s %s: %ld/%ld pass, %ld skipped; certified %ld/%ld</title></rect>"
                       "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%s</text>\n",
                    lw + cw * col[dt] + 1, y + 1, cw - 2, rh - 2, color, ug_op_name(op), ug_dtype_name((ug_dtype)dt),
                    t->pass, t->cases - t->skip, t->skip, t->cert_pass, t->cert_judged, lw + cw * col[dt] + cw / 2,
                    y + 14, label);
        }
    }
    fprintf(f, "</svg></section>\n");
}

/* One op's histogram: a bar per max-ulp bin, stacked by outcome (PASS blue, any other
 * outcome red, so an all-PASS run shows no red whatever its errors), the count above each
 * bar, the axes named. */
static void write_histogram(const ug_report *r, int op, FILE *f)
{
    const int bw = 34, bh = 80, x0 = 22, top = 14;
    long peak = 1;
    for (int b = 0; b < UG_ULP_BUCKETS; b++) peak = r->ulp_hist[op][b] > peak ? r->ulp_hist[op][b] : peak;
    fprintf(f, "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" role=\"img\" "
               "aria-label=\"%s max ulp histogram\">\n", x0 + bw * UG_ULP_BUCKETS + 6, top + bh + 40, ug_op_name(op));
    fprintf(f, "<text x=\"10\" y=\"%d\" font-size=\"9\" transform=\"rotate(-90 10 %d)\" text-anchor=\"middle\">cases"
               "</text><line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n",
            top + bh / 2, top + bh / 2, x0, x0 + bw * UG_ULP_BUCKETS, top + bh, top + bh);
    for (int b = 0; b < UG_ULP_BUCKETS; b++) {
        long n = r->ulp_hist[op][b], bad = r->ulp_hist_notpass[op][b];
        double h_all = (double)bh * (double)n / (double)peak, h_bad = (double)bh * (double)bad / (double)peak;
        int x = x0 + bw * b;
        fprintf(f, "<rect class=\"bar pass\" x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"#4878a8\">"
                   "<title>%s ulp: %ld cases, %ld PASS</title></rect>\n",
                x + 2, top + bh - h_all, bw - 4, h_all - h_bad, ug_ulp_bucket_names[b], n, n - bad);
        if (bad)
            fprintf(f, "<rect class=\"bar notpass\" x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"#d62728\">"
                       "<title>%s ulp: %ld cases not PASS</title></rect>\n",
                    x + 2, top + bh - h_bad, bw - 4, h_bad, ug_ulp_bucket_names[b], bad);
        if (n)
            fprintf(f, "<text class=\"count\" x=\"%d\" y=\"%.1f\" font-size=\"8\" text-anchor=\"middle\">%ld</text>\n",
                    x + bw / 2, top + bh - h_all - 2, n);
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"8\" text-anchor=\"middle\">%s</text>\n", x + bw / 2, top + bh + 11,
                ug_ulp_bucket_names[b]);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"9\" text-anchor=\"middle\">max ulp error of the case</text>\n",
            x0 + bw * UG_ULP_BUCKETS / 2, top + bh + 26);
    fprintf(f, "</svg><figcaption>%s</figcaption></figure>\n", ug_op_name(op));
}

static void write_histograms(const ug_report *r, FILE *f)
{
    fprintf(f, "<section id=\"histograms\"><h2>Max ulp error per case</h2>\n<p>Cases per bin of their largest "
               "ulp error over all outputs; blue: the case passed, red: it did not.</p><div class=\"hists\">\n");
    for (int op = 0; op < UG_OP_COUNT; op++)
        if (r->op[op].cases) write_histogram(r, op, f);
    fprintf(f, "</div></section>\n");
}

static void write_failures(const ug_report *r, FILE *f)
{
    fprintf(f, "<section id=\"failures\"><h2>Top failures</h2>\n");
    size_t shown = r->failures.n < (size_t)r->top ? r->failures.n : (size_t)r->top;
    if (!shown) {
        fprintf(f, "<p>No failures in this run.</p></section>\n");
        return;
    }
    fprintf(f, "<table><tr><th>case</th><th>op</th><th>dtype</th><th>verdict</th><th>what decided</th>"
               "<th>triage</th></tr>\n");
    for (size_t i = 0; i < shown; i++) {
        const ug_failure *x = &r->failures.v[i];
        fprintf(f, "<tr class=\"failure\"><td><code>");
        ug_xml_escape(f, x->case_id);
        fprintf(f, "</code></td><td>");
        ug_xml_escape(f, x->op);
        fprintf(f, "</td><td>");
        ug_xml_escape(f, x->dtype);
        fprintf(f, "</td><td>");
        ug_xml_escape(f, x->verdict);
        fprintf(f, "</td><td>");
        ug_xml_escape(f, x->figure);
        char *line = ug_failure_id_ok(x->case_id) ? ug_report_triage_line(r, x->case_id) : NULL;
        fprintf(f, "</td><td><code>");
        ug_xml_escape(f, line ? line : "");
        fprintf(f, "</code></td></tr>\n");
        free(line);
    }
    fprintf(f, "</table></section>\n");
}

void ug_report_write_html(const ug_report *r, FILE *f)
{
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>ulpgym run %ld</title>\n"
               "<style>body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse}"
               "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;overflow-wrap:anywhere}"
               "td:first-child,th:first-child{text-align:left}#failures td,#kernel-timing td:nth-child(2){text-align:left}svg{max-width:100%%;height:auto}"
               "tr.total{font-weight:bold}.hists{display:flex;flex-wrap:wrap}figure{margin:6px}"
               "figcaption{font-size:11px;text-align:center}code{font-size:12px}</style></head><body>\n",
            r->run_id);
    fprintf(f, "<h1>ulpgym run %ld</h1>\n<p id=\"meta\">plan <b>", r->run_id);
    ug_xml_escape(f, r->plan);
    fprintf(f, "</b> (hash %s), backend <b>", r->plan_hash);
    ug_xml_escape(f, r->backend);
    fprintf(f, "</b>, build %s, host ", r->git_rev);
    ug_xml_escape(f, r->host);
    fprintf(f, ", %s &ndash; %s, status %s; kernel %.1f s, oracle %.1f s", r->started, r->finished, r->status,
            r->seconds_kernel, r->seconds_oracle);
    if (r->primary[0]) {
        fprintf(f, "; every outcome decided by <b>");
        ug_xml_escape(f, r->primary);
        fprintf(f, "</b> (<code>--primary</code>)");
    }
    fprintf(f, "</p>\n");
    write_summary(r, f);
    write_history(r, f);
    write_heatmap(r, f);
    write_histograms(r, f);
    write_failures(r, f);
    if (r->has_bench) ug_bench_write_html_section(&r->bench, f);
    fprintf(f, "</body></html>\n");
}
