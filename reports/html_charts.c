/* html_charts.c — the HTML report's charts: the pass-rate trend (one panel per group on a
 * zoomed axis, so 99.5 % and 100 % differ and groups at 100 % never hide each other; x by
 * run with its date), the per-op sparklines of the operator table on the same axis, and
 * the op x dtype heatmap whose cells with failures link to their failure lists. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "reports/html_parts.h"
#include "reports/xml.h"

static const char *const group_color[UG_GROUP_COUNT] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd"};

enum { TR_X0 = 70, TR_PW = 720, TR_PH = 96, TR_GAP = 34 }; /* trend: left margin, plot width/height, gap */

static double trend_x(const ug_report *r, int i)
{
    return TR_X0 + (r->n_hist > 1 ? TR_PW * (double)i / (r->n_hist - 1) : TR_PW / 2.0);
}

static int group_in_history(const ug_report *r, int g)
{
    for (int i = 0; i < r->n_hist; i++)
        if (r->hist_rate[i][g] >= 0) return 1;
    return 0;
}

/* The zoomed axis of one panel whose top is y0: grid lines and labels in pass-rate terms. */
static void trend_axis(FILE *f, int y0)
{
    static const double ticks[] = {100, 99.99, 99.9, 99, 90, 0};
    static const char *const names[] = {"100%", "99.99%", "99.9%", "99%", "90%", "0%"};
    for (int t = 0; t < 6; t++) {
        double y = y0 + TR_PH * (1 - ug_html_trend_pos(ticks[t]));
        fprintf(f,
                "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/><text x=\"%d\" y=\"%.1f\" "
                "font-size=\"11\" text-anchor=\"end\">%s</text>\n",
                TR_X0, TR_X0 + TR_PW, y, y, t == 0 ? "#9c9" : "#e4e4e4", TR_X0 - 4, y + 3, names[t]);
    }
}

/* One group's panel: its name and latest rate, a line over the runs and a dot per run. */
static void trend_panel(const ug_report *r, int g, int y0, FILE *f)
{
    const char *name = ug_group_name((ug_group)g);
    trend_axis(f, y0);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"13\" font-weight=\"bold\" fill=\"%s\">%s</text>\n", TR_X0 + 4,
            y0 - 4, group_color[g], name);
    fprintf(f, "<polyline class=\"series\" data-group=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
            name, group_color[g]);
    double last = -1;
    for (int i = 0; i < r->n_hist; i++)
        if (r->hist_rate[i][g] >= 0)
            fprintf(f, "%.1f,%.1f ", trend_x(r, i), y0 + TR_PH * (1 - ug_html_trend_pos(r->hist_rate[i][g]))),
                last = r->hist_rate[i][g];
    fprintf(f, "\"/>\n");
    for (int i = 0; i < r->n_hist; i++) /* a dot per run: a group with one run has no line */
        if (r->hist_rate[i][g] >= 0) {
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>run %ld %s: %.2f%% (", trend_x(r, i),
                    y0 + TR_PH * (1 - ug_html_trend_pos(r->hist_rate[i][g])), group_color[g], r->hist_run[i], name,
                    r->hist_rate[i][g]);
            ug_xml_escape_clean(f, r->hist_started[i]);
            fprintf(f, ")</title></circle>\n");
        }
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"13\" fill=\"%s\">%.2f%%</text>\n", TR_X0 + TR_PW + 8,
            y0 + TR_PH / 2 + 4, group_color[g], last);
}

/* Run IDs and dates under the last panel, thinned so they do not collide. */
static void trend_x_labels(const ug_report *r, int y, FILE *f)
{
    int step = r->n_hist > 8 ? (r->n_hist + 7) / 8 : 1;
    for (int i = 0; i < r->n_hist; i++) {
        int last = i == r->n_hist - 1;
        if (!last && (i % step || r->n_hist - 1 - i < step)) continue; /* the last run is always named */
        char date[24];
        ug_html_short_date(r->hist_started[i], date, sizeof date);
        fprintf(f,
                "<text x=\"%.1f\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">run %ld</text>"
                "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" fill=\"#666\" text-anchor=\"middle\">",
                trend_x(r, i), y + 14, r->hist_run[i], trend_x(r, i), y + 28);
        ug_xml_escape_clean(f, date);
        fprintf(f, "</text>\n");
    }
}

void ug_html_write_history(const ug_report *r, FILE *f)
{
    int groups = 0;
    for (int g = 0; g < UG_GROUP_COUNT; g++) groups += group_in_history(r, g);
    fprintf(f, "<section id=\"history\"><h2>Pass rate by run</h2>\n<figure class=\"wide\">");
    int h = 18 + groups * (TR_PH + TR_GAP) + 34, y0 = 18 + 4;
    ug_html_svg_open(f, TR_X0 + TR_PW + 76, h, "pass rate per group and run");
    for (int g = 0; g < UG_GROUP_COUNT; g++)
        if (group_in_history(r, g)) trend_panel(r, g, y0, f), y0 += TR_PH + TR_GAP;
    trend_x_labels(r, y0 - TR_GAP, f);
    fprintf(f, "</svg><figcaption>Pass rate per group, one panel each, over the runs of this run's backend (a mutant "
               "or plugin run has a history of its own); SKIP is left out of each rate. The axis is zoomed: the "
               "failure rate on a log scale (99 %%, 99.9 %%, 99.99 %%), all-pass apart at the top. x: run and its "
               "start (UTC).</figcaption></figure></section>\n");
}

enum { SP_W = 96, SP_H = 22 }; /* sparkline */

/* The k-th of n points of a sparkline, and the height of pass rate p on it. */
static double spark_x(int k, int n) { return n > 1 ? 3 + (SP_W - 6) * (double)k / (n - 1) : SP_W / 2.0; }
static double spark_y(double p) { return 2 + (SP_H - 4) * (1 - ug_html_trend_pos(p)); }

void ug_html_write_sparkline(const ug_report *r, int op, FILE *f)
{
    fprintf(f,
            "<svg class=\"spark\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s pass rate by run\">"
            "<line x1=\"0\" x2=\"%d\" y1=\"2\" y2=\"2\" stroke=\"#9c9\"/>",
            SP_W, SP_H, SP_W, SP_H, ug_op_name(op), SP_W);
    int n = 0;
    for (int i = 0; i < r->n_hist; i++) n += r->hist_op_rate[i][op] >= 0;
    if (n > 1) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"#555\" stroke-width=\"1.5\" points=\"");
        for (int i = 0, k = 0; i < r->n_hist; i++)
            if (r->hist_op_rate[i][op] >= 0) fprintf(f, "%.1f,%.1f ", spark_x(k++, n), spark_y(r->hist_op_rate[i][op]));
        fprintf(f, "\"/>");
    }
    for (int i = 0, k = 0; i < r->n_hist; i++) {
        double p = r->hist_op_rate[i][op];
        if (p < 0) continue;
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2\" fill=\"%s\"><title>run %ld %s: %.2f%%</title></circle>",
                spark_x(k++, n), spark_y(p), p < 100 ? "#d62728" : "#2ca02c", r->hist_run[i], ug_op_name(op), p);
    }
    fprintf(f, "</svg>");
}

/* A cell's label: never "100%" unless every judged case passed (rounded down). */
static void cell_label(double rate, char *buf, size_t len)
{
    double scale = rate >= 10 ? 10 : 100;
    if (rate >= 100)
        snprintf(buf, len, "100%%");
    else
        snprintf(buf, len, rate >= 10 ? "%.1f%%" : "%.2f%%", floor(rate * scale) / scale);
}

enum { HM_CW = 80, HM_RH = 22, HM_TOP = 22 }; /* heatmap: cell width, row height, header */

static void heatmap_cell(const ug_report *r, int op, int dt, size_t listed, int x, int y, FILE *f)
{
    enum { CW = HM_CW, RH = HM_RH };
    const ug_tally *t = &r->op_dtype[op][dt];
    char color[32], label[16];
    double rate = ug_tally_pass_rate(t);
    if (rate >= 0) { /* any failure leaves the green: the colour follows the trend's zoomed axis */
        ug_html_heat_color(100 * ug_html_trend_pos(rate), color, sizeof color);
        cell_label(rate, label, sizeof label);
    } else
        snprintf(color, sizeof color, "#cccccc"), snprintf(label, sizeof label, "skip"); /* no verdict: grey */
    int link = t->cases - t->pass - t->skip > 0 && listed > 0;
    const char *opn = ug_op_name(op), *dtn = ug_dtype_name((ug_dtype)dt);
    if (link) fprintf(f, "<a href=\"#fail-%s-%s\">", opn, dtn);
    fprintf(f,
            "<rect class=\"cell\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"%s>"
            "<title>%s %s: %ld/%ld pass, %ld skipped; certified %ld/%ld%s</title></rect>",
            x + 1, y + 1, CW - 2, RH - 2, color, link ? " stroke=\"#222\"" : "", opn, dtn, t->pass, t->cases - t->skip,
            t->skip, t->cert_pass, t->cert_judged, link ? " (follow the link for its failures)" : "");
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\"%s>%s</text>%s\n", x + CW / 2, y + 15,
            link ? " text-decoration=\"underline\"" : "", label, link ? "</a>" : "");
}

void ug_html_write_heatmap(const ug_report *r, FILE *f)
{
    enum { CW = HM_CW, RH = HM_RH, TOP = HM_TOP };
    int rows = 0, col[UG_DT_COUNT], ncols = 0, LW = 40; /* LW: the op names' column, 7 px a letter */
    size_t listed[UG_OP_COUNT][UG_DT_COUNT];
    ug_html_cell_counts(r, listed, NULL);
    for (int op = 0; op < UG_OP_COUNT; op++) {
        int w = 20 + 7 * (int)strlen(ug_op_name(op));
        if (r->op[op].cases) rows++, LW = w > LW ? w : LW;
    }
    for (int dt = 0; dt < UG_DT_COUNT; dt++) { /* only dtypes the run has */
        int has = 0;
        for (int op = 0; op < UG_OP_COUNT; op++) has |= r->op_dtype[op][dt].cases > 0;
        col[dt] = has ? ncols++ : -1;
    }
    fprintf(f, "<section id=\"heatmap\"><h2>Pass rate: operator &times; dtype</h2>\n<figure class=\"wide\">");
    ug_html_svg_open(f, LW + CW * ncols, TOP + RH * rows + 4, "pass rate heatmap");
    for (int dt = 0; dt < UG_DT_COUNT; dt++)
        if (col[dt] >= 0)
            fprintf(f, "<text x=\"%d\" y=\"15\" font-size=\"12\" text-anchor=\"middle\">%s</text>\n",
                    LW + CW * col[dt] + CW / 2, ug_dtype_name((ug_dtype)dt));
    for (int op = 0, row = 0; op < UG_OP_COUNT; op++) {
        if (!r->op[op].cases) continue;
        int y = TOP + RH * row++;
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\">%s</text>\n", LW - 6, y + 15,
                ug_op_name(op));
        for (int dt = 0; dt < UG_DT_COUNT; dt++)
            if (r->op_dtype[op][dt].cases) heatmap_cell(r, op, dt, listed[op][dt], LW + CW * col[dt], y, f);
    }
    fprintf(f, "</svg><figcaption>Pass rate of each operator and dtype (grey: every case skipped). A framed, "
               "underlined cell has failures: it links to their list below. Any failure turns a cell from green "
               "towards red on the zoomed scale of the trend above.</figcaption></figure></section>\n");
}
