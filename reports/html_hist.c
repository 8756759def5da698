/* html_hist.c — the HTML report's histograms, one figure per op with its caption: first
 * the headroom each case used of what its deciding standard allows (what decides: at most
 * 1 passes; a dashed line marks the limit), then, folded away as secondary, the max ulp
 * error of each case. Bars are stacked by outcome: PASS blue, any other outcome red, so an
 * all-PASS run shows no red whatever its errors; the count stands above each bar. */
#include <stdio.h>

#include "reports/html_parts.h"

typedef struct {
    const long *all, *bad; /* per bin: every case, the cases not PASS */
    int bins;
    const char *const *names; /* bin labels */
    const char *unit, *xaxis; /* in titles; the x axis' name */
    int limit_after;          /* the bin after which the limit line goes, -1 none */
} hist_spec;

static void hist_bar(const hist_spec *s, int b, long peak, FILE *f)
{
    enum { BW = 34, BH = 80, X0 = 22, TOP = 14 };
    long n = s->all[b], bad = s->bad[b];
    double h_all = (double)BH * (double)n / (double)peak, h_bad = (double)BH * (double)bad / (double)peak;
    int x = X0 + BW * b;
    fprintf(f,
            "<rect class=\"bar pass\" x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"#4878a8\">"
            "<title>%s %s: %ld cases, %ld PASS</title></rect>\n",
            x + 2, TOP + BH - h_all, BW - 4, h_all - h_bad, s->names[b], s->unit, n, n - bad);
    if (bad)
        fprintf(f,
                "<rect class=\"bar notpass\" x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"#d62728\">"
                "<title>%s %s: %ld cases not PASS</title></rect>\n",
                x + 2, TOP + BH - h_bad, BW - 4, h_bad, s->names[b], s->unit, bad);
    if (n)
        fprintf(f, "<text class=\"count\" x=\"%d\" y=\"%.1f\" font-size=\"8\" text-anchor=\"middle\">%ld</text>\n",
                x + BW / 2, TOP + BH - h_all - 2, n);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"8\" text-anchor=\"middle\">%s</text>\n", x + BW / 2, TOP + BH + 11,
            s->names[b]);
}

/* One op's chart: bars, axes, the limit line; the caption is the figure's. */
static void hist_svg(const hist_spec *s, const char *label, FILE *f)
{
    enum { BW = 34, BH = 80, X0 = 22, TOP = 14 };
    long peak = 1;
    for (int b = 0; b < s->bins; b++) peak = s->all[b] > peak ? s->all[b] : peak;
    ug_html_svg_open(f, X0 + BW * s->bins + 6, TOP + BH + 40, label);
    fprintf(f,
            "<text x=\"10\" y=\"%d\" font-size=\"9\" transform=\"rotate(-90 10 %d)\" text-anchor=\"middle\">cases"
            "</text><line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n",
            TOP + BH / 2, TOP + BH / 2, X0, X0 + BW * s->bins, TOP + BH, TOP + BH);
    for (int b = 0; b < s->bins; b++) hist_bar(s, b, peak, f);
    if (s->limit_after >= 0)
        fprintf(f,
                "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#d62728\" stroke-dasharray=\"3,2\"/>"
                "<text x=\"%d\" y=\"%d\" font-size=\"8\" fill=\"#d62728\">limit</text>\n",
                X0 + BW * (s->limit_after + 1), X0 + BW * (s->limit_after + 1), TOP - 6, TOP + BH,
                X0 + BW * (s->limit_after + 1) + 2, TOP - 2);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"9\" text-anchor=\"middle\">%s</text>\n", X0 + BW * s->bins / 2,
            TOP + BH + 26, s->xaxis);
    fprintf(f, "</svg>");
}

static long sum(const long *v, int n)
{
    long s = 0;
    for (int i = 0; i < n; i++) s += v[i];
    return s;
}

static void headroom_figure(const ug_report *r, int op, FILE *f)
{
    hist_spec s = {r->used_hist[op],
                   r->used_hist_notpass[op],
                   UG_USED_BUCKETS,
                   ug_used_bucket_names,
                   "used",
                   "headroom used (1 = the limit)",
                   3};
    char label[128], used[32];
    snprintf(label, sizeof label, "%s headroom histogram", ug_op_name(op));
    fprintf(f, "<figure id=\"hist-%s\" aria-labelledby=\"cap-hist-%s\">", ug_op_name(op), ug_op_name(op));
    hist_svg(&s, label, f);
    fprintf(f, "<figcaption id=\"cap-hist-%s\"><b>%s</b>: %ld judged cases, %ld not PASS", ug_op_name(op),
            ug_op_name(op), sum(s.all, s.bins), sum(s.bad, s.bins));
    if (r->closest_used[op] >= 0) {
        fprintf(f, "; closest pass used %s: ", ug_html_used(r->closest_used[op], used, sizeof used));
        ug_html_case_link(f, r, r->closest_case[op]);
    }
    fprintf(f, "</figcaption></figure>\n");
}

static void ulp_figure(const ug_report *r, int op, FILE *f)
{
    hist_spec s = {r->ulp_hist[op],
                   r->ulp_hist_notpass[op],
                   UG_ULP_BUCKETS,
                   ug_ulp_bucket_names,
                   "ulp",
                   "max ulp error of the case",
                   -1};
    char label[128];
    snprintf(label, sizeof label, "%s max ulp histogram", ug_op_name(op));
    fprintf(f, "<figure aria-labelledby=\"cap-ulp-%s\">", ug_op_name(op));
    hist_svg(&s, label, f);
    fprintf(f, "<figcaption id=\"cap-ulp-%s\"><b>%s</b>: max ulp error per case</figcaption></figure>\n",
            ug_op_name(op), ug_op_name(op));
}

void ug_html_write_histograms(const ug_report *r, FILE *f)
{
    fprintf(f, "<section id=\"histograms\"><h2>Headroom used per case</h2>\n<p>What decides a case is its error "
               "relative to what its deciding standard allows (elements beyond tolerance &divide; allowed, worst "
               "error &divide; bound): at most 1 passes. Cases per bin of that share; blue: the case passed, red: "
               "it did not.</p><div class=\"hists\">\n");
    for (int op = 0; op < UG_OP_COUNT; op++)
        if (r->op[op].cases) headroom_figure(r, op, f);
    fprintf(f, "</div>\n<details><summary>Max ulp error per case (secondary: ulps do not decide; elements whose "
               "exact value is below the dtype's smallest normal are left out)</summary><div class=\"hists\">\n");
    for (int op = 0; op < UG_OP_COUNT; op++)
        if (r->op[op].cases) ulp_figure(r, op, f);
    fprintf(f, "</div></details></section>\n");
}
