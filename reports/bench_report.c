/* bench_report.c — the kernel-timing table in markdown and HTML (see bench_report.h).
 *
 * The lines of the table (each scene, each op's mean, the mean over ops) are made once by
 * table_lines(); the two writers only format them. Means are geometric, the mean that
 * fits ratios: a kernel twice as fast in one scene and twice as slow in another averages
 * to 1, not to 1.25. */
#include "reports/bench_report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/xml.h"

double ug_bench_geomean(const double *x, int n)
{
    double s = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(x[i]) && x[i] > 0) s += log(x[i]), k++;
    return k ? exp(s / k) : NAN;
}

typedef enum { LINE_SCENE, LINE_OP_MEAN, LINE_ALL_MEAN } line_kind;

typedef struct {
    line_kind kind;
    const char *op, *scene;
    int n_cases, n_left_out;
    double kernel, kernel_min, kernel_max, e2e, e2e_min, e2e_max, base_ms, test_ms; /* NaN: not applicable */
} table_line;

/* The mean line of rows[from..to) (one op's scenes, or every op's mean line). */
static table_line mean_line(line_kind kind, const char *op, const table_line *rows, int from, int to)
{
    table_line m = {kind, op, "mean", 0, 0, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
    int n = to - from;
    double *k = malloc((size_t)(n + 1) * sizeof *k), *e = malloc((size_t)(n + 1) * sizeof *e);
    for (int i = 0; k && e && i < n; i++) {
        k[i] = rows[from + i].kernel;
        e[i] = rows[from + i].e2e;
        m.n_cases += rows[from + i].n_cases;
        m.n_left_out += rows[from + i].n_left_out;
    }
    if (k && e) m.kernel = ug_bench_geomean(k, n), m.e2e = ug_bench_geomean(e, n);
    free(k);
    free(e);
    return m;
}

/* Every line of the table, in order (malloc'd; *n of them). */
static table_line *table_lines(const ug_bench_table *t, int *n)
{
    table_line *ls = calloc((size_t)(2 * t->n + 1), sizeof *ls), *op_means = calloc((size_t)t->n + 1, sizeof *op_means);
    int k = 0, n_ops = 0;
    for (int i = 0; ls && op_means && i < t->n;) {
        int first = k;
        const char *op = t->rows[i].op;
        for (; i < t->n && strcmp(t->rows[i].op, op) == 0; i++) {
            const ug_bench_scene_row *r = &t->rows[i];
            ls[k++] = (table_line){
                LINE_SCENE,    r->op,        r->scene,   r->n_cases, r->n_left_out,     r->kernel_ratio,  r->kernel_min,
                r->kernel_max, r->e2e_ratio, r->e2e_min, r->e2e_max, r->base_kernel_ms, r->test_kernel_ms};
        }
        op_means[n_ops++] = ls[k] = mean_line(LINE_OP_MEAN, op, ls, first, k);
        k++;
    }
    if (ls && op_means) ls[k++] = mean_line(LINE_ALL_MEAN, "all ops", op_means, 0, n_ops);
    free(op_means);
    *n = ls ? k : 0;
    return ls;
}

/* "1.023" or the dash for NaN. */
static const char *fmt_ratio(double x, char *buf, size_t len)
{
    if (isfinite(x))
        snprintf(buf, len, "%.3f", x);
    else
        snprintf(buf, len, "–");
    return buf;
}

/* "0.98–1.05" for a scene, "" for a mean line or a scene with no case timed. */
static const char *fmt_range(const table_line *l, double lo, double hi, char *buf, size_t len)
{
    if (l->kind == LINE_SCENE && isfinite(lo))
        snprintf(buf, len, "%.3f–%.3f", lo, hi);
    else
        buf[0] = 0;
    return buf;
}

static const char *fmt_ms(double x, char *buf, size_t len)
{
    if (isfinite(x))
        snprintf(buf, len, "%.4g", x);
    else
        buf[0] = 0;
    return buf;
}

static const char *fmt_cases(const table_line *l, char *buf, size_t len)
{
    if (l->n_left_out)
        snprintf(buf, len, "%d (%d left out)", l->n_cases, l->n_left_out);
    else
        snprintf(buf, len, "%d", l->n_cases);
    return buf;
}

/* A backend's name as code: `...` in markdown, escaped in <code> in HTML. */
static void put_code(FILE *f, const char *s, int html)
{
    fputs(html ? "<code>" : "`", f);
    if (html)
        ug_xml_escape(f, s);
    else
        fputs(s, f);
    fputs(html ? "</code>" : "`", f);
}

/* The sentences above the table: what ran on which clocks, and how to read the figures. */
static void write_preamble(const ug_bench_table *t, FILE *f, int html)
{
    const ug_bench_info *in = &t->info;
    fprintf(f, "B = ");
    put_code(f, in->backend, html);
    fprintf(f, " (kernel-only clock: %s) against A = ", in->backend_clock);
    put_code(f, in->baseline, html);
    fprintf(f,
            " (kernel-only clock: %s); end-to-end clock: %s; %d repeats after %d warm-up, A and B interleaved; "
            "bench %ld, %s, build %s.\n",
            in->baseline_clock, in->host_clock, in->repeats, in->warmup, t->bench_id, in->started, in->git_rev);
    fprintf(
        f,
        "%sRatio = B's time / A's time (above 1: B is slower). Kernel: the kernel call alone (a plugin's own "
        "device time where it reports one). End-to-end: the call through the backend's entry (a plugin's "
        "host-side conversions and copies included), then reading every output byte back; the inputs are "
        "built once per case, untimed. Per case the median of the repeats' paired ratios; per scene the geometric mean over its cases "
        "(their min–max beside it); mean: the geometric mean of the op's scenes, and last of the ops' means. "
        "A and B ms: geometric means of the cases' median kernel times.\n",
        html ? "</p><p>" : "\n");
}

void ug_bench_write_md(const ug_bench_table *t, FILE *f)
{
    int n;
    table_line *ls = table_lines(t, &n);
    fprintf(f, "## Kernel timing: B / A\n\n");
    write_preamble(t, f, 0);
    fprintf(f, "\n| op | scene | cases | kernel B/A | kernel range | end-to-end B/A | end-to-end range | A kernel ms | "
               "B kernel ms |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < n; i++) {
        const table_line *l = &ls[i];
        char c[48], k[24], kr[48], e[24], er[48], a[24], b[24];
        const char *bold = l->kind == LINE_SCENE ? "" : "**";
        fprintf(f, "| %s | %s%s%s | %s | %s%s%s | %s | %s%s%s | %s | %s | %s |\n", l->op, bold, l->scene, bold,
                fmt_cases(l, c, sizeof c), bold, fmt_ratio(l->kernel, k, sizeof k), bold,
                fmt_range(l, l->kernel_min, l->kernel_max, kr, sizeof kr), bold, fmt_ratio(l->e2e, e, sizeof e), bold,
                fmt_range(l, l->e2e_min, l->e2e_max, er, sizeof er), fmt_ms(l->base_ms, a, sizeof a),
                fmt_ms(l->test_ms, b, sizeof b));
    }
    free(ls);
}

void ug_bench_write_html_section(const ug_bench_table *t, FILE *f)
{
    int n;
    table_line *ls = table_lines(t, &n);
    fprintf(f, "<section id=\"kernel-timing\"><h2>Kernel timing: B / A</h2>\n<p>");
    write_preamble(t, f, 1);
    fprintf(f, "</p>\n<table><tr><th>op</th><th>scene</th><th>cases</th><th>kernel B/A</th><th>kernel range</th>"
               "<th>end-to-end B/A</th><th>end-to-end range</th><th>A kernel ms</th><th>B kernel ms</th></tr>\n");
    for (int i = 0; i < n; i++) {
        const table_line *l = &ls[i];
        char c[48], k[24], kr[48], e[24], er[48], a[24], b[24];
        fprintf(f, "<tr%s><td>", l->kind == LINE_SCENE ? "" : " class=\"total\"");
        ug_xml_escape(f, l->op);
        fprintf(f, "</td><td>");
        ug_xml_escape(f, l->scene);
        fprintf(f, "</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
                fmt_cases(l, c, sizeof c), fmt_ratio(l->kernel, k, sizeof k),
                fmt_range(l, l->kernel_min, l->kernel_max, kr, sizeof kr), fmt_ratio(l->e2e, e, sizeof e),
                fmt_range(l, l->e2e_min, l->e2e_max, er, sizeof er), fmt_ms(l->base_ms, a, sizeof a),
                fmt_ms(l->test_ms, b, sizeof b));
    }
    fprintf(f, "</table></section>\n");
    free(ls);
}

void ug_bench_write_html_page(const ug_bench_table *t, FILE *f)
{
    fprintf(f,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>ulpgym bench %ld</title>\n"
            "<style>body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
            "td:first-child,th:first-child,td:nth-child(2){text-align:left}tr.total{font-weight:bold}"
            "code{font-size:12px}</style></head><body>\n",
            t->bench_id);
    ug_bench_write_html_section(t, f);
    fprintf(f, "</body></html>\n");
}
