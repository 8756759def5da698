/* html_util.c — small pieces the HTML report's parts share (html_parts.h): case links,
 * the op x dtype list lengths, headroom figures, the zoomed pass-rate axis, dates, SVG
 * openings and the heatmap's colours. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "reports/html_parts.h"
#include "reports/xml.h"

void ug_html_case_link(FILE *f, const ug_report *r, const char *case_id)
{
    const ug_report_detail *d = ug_report_detail_find(r, case_id);
    if (d)
        fprintf(f, "<a href=\"#case-%s\"><code>%s</code></a>", d->case_id, d->case_id);
    else {
        fprintf(f, "<code>");
        ug_xml_escape_clean(f, case_id);
        fprintf(f, "</code>");
    }
}

void ug_html_cell_counts(const ug_report *r, size_t listed[UG_OP_COUNT][UG_DT_COUNT], int *cell)
{
    memset(listed, 0, sizeof(size_t) * UG_OP_COUNT * UG_DT_COUNT);
    for (size_t i = 0; i < r->failures.n; i++) {
        int op = ug_op_find(r->failures.v[i].op), dt = ug_dtype_parse(r->failures.v[i].dtype);
        if (cell) cell[i] = op >= 0 && dt >= 0 ? op * UG_DT_COUNT + dt : -1;
        if (op >= 0 && dt >= 0 && listed[op][dt] < (size_t)r->top) listed[op][dt]++;
    }
}

const char *ug_html_used(double used, char *buf, size_t len)
{
    if (isnan(used) || used < 0)
        snprintf(buf, len, "&ndash;");
    else if (isinf(used))
        snprintf(buf, len, "inf");
    else
        snprintf(buf, len, used < 10 ? "%.3g" : "%.4g", used);
    return buf;
}

double ug_html_trend_pos(double p)
{
    double fail = 100.0 - p; /* percent */
    if (fail <= 0) return 1.0;
    double l = log10(fail);
    l = l < -2 ? -2 : l > 2 ? 2 : l;
    return 0.85 * (2 - l) / 4; /* 0.01 % failing at 0.85, 100 % at 0 */
}

void ug_html_short_date(const char *iso, char *buf, size_t len)
{
    /* 2026-12-06T09:32:11Z -> 12-06 09:32 */
    if (iso && strlen(iso) >= 16 && iso[4] == '-' && iso[10] == 'T')
        snprintf(buf, len, "%.5s %.5s", iso + 5, iso + 11);
    else
        snprintf(buf, len, "%s", "");
}

void ug_html_svg_open(FILE *f, int w, int h, const char *label)
{
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
            "aria-label=\"",
            w, h, w, h);
    ug_xml_escape(f, label);
    fprintf(f, "\">\n");
}

void ug_html_heat_color(double p, char *buf, size_t len)
{
    int r = p < 50 ? 220 : (int)(220 - (p - 50) * 3.4), g = p < 50 ? (int)(60 + p * 3.2) : 220;
    snprintf(buf, len, "rgb(%d,%d,90)", r < 40 ? 40 : r, g > 220 ? 220 : g);
}
