/* html_triage.c — a triage block per case the HTML page lists (#case-ID; report.h
 * ug_report_detail): what decided its verdict, per output the figures and the deciding
 * standard's thresholds with the figures it met (verdicts.thresholds), its change against
 * the compared run, the stored message, the paste-ready triage line (worst elements,
 * every standard, reruns the kernel) and the one-line command that reproduces the case
 * anywhere without the database. Failures come first, most severe first; then the passing
 * cases listed (fixed, drift, the closest pass of each op) by ID. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/paths.h"
#include "oracles/verdict.h"
#include "reports/html_parts.h"
#include "reports/xml.h"

/* The headroom a passing listed case used: its change's figure, else its op's closest pass. */
static double pass_used(const ug_report *r, const ug_report_detail *d)
{
    if (d->change >= 0) return r->changes[d->change].used_b;
    for (int op = 0; op < UG_OP_COUNT; op++)
        if (r->closest_used[op] >= 0 && strcmp(r->closest_case[op], d->case_id) == 0) return r->closest_used[op];
    return NAN;
}

/* The case's op and dtype as its spec names them ("" where it does not). */
static void spec_names(const ug_report_detail *d, FILE *f)
{
    cJSON *j = d->spec ? cJSON_Parse(d->spec) : NULL;
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(j, "op"), *dt = cJSON_GetObjectItemCaseSensitive(j, "dtype");
    ug_xml_escape_clean(f, cJSON_IsString(op) ? op->valuestring : "");
    fputc(' ', f);
    ug_xml_escape_clean(f, cJSON_IsString(dt) ? dt->valuestring : "");
    cJSON_Delete(j);
}

static void block_head(const ug_report *r, const ug_report_detail *d, FILE *f)
{
    const ug_failure *x = d->failure >= 0 ? &r->failures.v[d->failure] : NULL;
    fprintf(f, "<article class=\"triage %s\" id=\"case-%s\"><h3><code>%s</code> <span class=\"nw\">",
            x ? "fail" : "pass", d->case_id, d->case_id);
    spec_names(d, f);
    fprintf(f, "</span> <span class=\"verdict\">");
    ug_xml_escape_clean(f, d->verdict[0] ? d->verdict : "?");
    fprintf(f, "</span></h3>\n<p class=\"why\"><b>What decided:</b> ");
    if (x)
        ug_xml_escape_clean(f, x->figure);
    else {
        char used[32];
        fprintf(f, "passes ");
        ug_xml_escape_clean(f, d->standard);
        fprintf(f, ", using %s of what it allows", ug_html_used(pass_used(r, d), used, sizeof used));
    }
    fprintf(f, "</p>\n");
}

static void block_change(const ug_report *r, const ug_report_detail *d, FILE *f)
{
    if (d->change < 0) return;
    const ug_report_change *c = &r->changes[d->change];
    char a[32], b[32];
    fprintf(f, "<p class=\"chg\"><b>%s</b> since run %ld: ", ug_change_name(c->kind), r->compared_run);
    ug_xml_escape_clean(f, c->verdict_a[0] ? c->verdict_a : "no result");
    fprintf(f, " (used %s) &rarr; ", ug_html_used(c->used_a, a, sizeof a));
    ug_xml_escape_clean(f, c->verdict_b);
    fprintf(f, " (used %s)</p>\n", ug_html_used(c->used_b, b, sizeof b));
}

/* One output's thresholds object as "key value" pairs, headroom used in bold. */
static void threshold_pairs(const cJSON *o, FILE *f)
{
    for (const cJSON *k = o->child; k; k = k->next) {
        char *v = cJSON_IsString(k) ? NULL : cJSON_PrintUnformatted(k);
        int used = k->string && strcmp(k->string, "used") == 0;
        fprintf(f, "<span class=\"kv\">%s", used ? "<b>" : "");
        ug_xml_escape_clean(f, k->string);
        fputc(' ', f);
        ug_xml_escape_clean(f, v ? v : k->valuestring);
        fprintf(f, "%s</span> ", used ? "</b>" : "");
        free(v);
    }
}

static void output_row(const ug_report_output *o, const cJSON *thr, FILE *f)
{
    fprintf(f, "<tr><td class=\"nw l\">");
    ug_xml_escape_clean(f, o->output);
    fprintf(f,
            "</td><td class=\"nw\">%ld of %ld</td><td class=\"nw\">%.4g</td><td class=\"nw\">%.4g</td>"
            "<td class=\"nw\">%.4g</td><td>%ld</td><td class=\"fig\">",
            o->n_checked, o->n_total, o->max_abs, o->max_rel, o->max_ulp, o->nonfinite);
    const cJSON *t = thr ? cJSON_GetObjectItemCaseSensitive(thr, o->output) : NULL;
    if (cJSON_IsObject(t))
        threshold_pairs(t, f);
    else
        fprintf(f, "&ndash;");
    fprintf(f, "</td></tr>\n");
}

static void block_outputs(const ug_report_detail *d, FILE *f)
{
    if (!d->n_out) {
        fprintf(f, "<p>No output was judged (the kernel did not deliver any).</p>\n");
        return;
    }
    cJSON *thr = d->thresholds ? cJSON_Parse(d->thresholds) : NULL;
    fprintf(f, "<div class=\"scroll\"><table class=\"outputs\"><tr><th>output</th><th>checked</th><th>max abs</th>"
               "<th>max rel</th><th>max ulp</th><th title=\"NaN/Inf mismatches\">NaN/Inf</th><th>");
    ug_xml_escape_clean(f, d->standard[0] ? d->standard : "deciding standard");
    fprintf(f, ": thresholds and figures met</th></tr>\n");
    for (size_t k = 0; k < d->n_out; k++) output_row(&d->out[k], thr, f);
    fprintf(f, "</table></div>\n");
    if (d->thresholds && !thr) {
        fprintf(f, "<p>Thresholds as stored: <code>");
        ug_xml_escape_clean(f, d->thresholds);
        fprintf(f, "</code></p>\n");
    }
    cJSON_Delete(thr);
}

/* SELF case --backend B [--primary STD] --spec 'SPEC' (malloc'd; NULL without memory or spec). */
static char *reproduce_line(const ug_report *r, const ug_report_detail *d)
{
    if (!d->spec || !d->spec[0]) return NULL;
    int replay = strncmp(r->backend, "replay", 6) == 0; /* a device's outputs: the built-in kernel stands in */
    int primary = ug_standard_find(r->primary);         /* a name ulpgym knows, or none */
    const char *std = primary >= 0 ? ug_standard_name(primary) : "";
    char *b = ug_shell_quote(replay ? "sim" : r->backend), *s = ug_shell_quote(d->spec), *line = NULL;
    size_t n = (b ? strlen(b) : 0) + (s ? strlen(s) : 0) + strlen(ug_self_command()) + strlen(std) + 64;
    if (b && s && (line = malloc(n)))
        snprintf(line, n, "%s case --backend %s%s%s --spec %s", ug_self_command(), b, std[0] ? " --primary " : "", std,
                 s);
    free(b);
    free(s);
    return line;
}

static void block_commands(const ug_report *r, const ug_report_detail *d, FILE *f)
{
    char *line = ug_report_triage_line(r, d->case_id), *repro = reproduce_line(r, d);
    fprintf(f, "<p><b>Triage</b> (reruns the run's kernel, checks every element, prints every standard's verdict "
               "and the worst elements with their inputs):</p>\n<pre class=\"cmd triage-line\">");
    ug_xml_escape_clean(f, line ? line : "");
    fprintf(f, "</pre>\n");
    if (repro) {
        fprintf(f, "<p><b>Reproduce</b> anywhere, without the database%s:</p>\n<pre class=\"cmd\">",
                strncmp(r->backend, "replay", 6) == 0 ? " (the built-in sim kernel in place of the device)" : "");
        ug_xml_escape_clean(f, repro);
        fprintf(f, "</pre>\n");
    }
    free(line);
    free(repro);
}

static void block(const ug_report *r, const ug_report_detail *d, FILE *f)
{
    block_head(r, d, f);
    block_change(r, d, f);
    block_outputs(d, f);
    if (d->message && d->message[0]) {
        fprintf(f, "<p class=\"msg\"><b>Message:</b> ");
        ug_xml_escape_clean(f, d->message);
        fprintf(f, "</p>\n");
    }
    block_commands(r, d, f);
    fprintf(f, "<p class=\"back\"><a href=\"#changes\">changes</a> &middot; <a href=\"#failures\">top failures</a> "
               "&middot; <a href=\"#heatmap\">heatmap</a></p></article>\n");
}

void ug_html_write_triage(const ug_report *r, FILE *f)
{
    if (!r->n_details) return;
    fprintf(f, "<section id=\"triage\"><h2>Triage</h2>\n<p>One block per case listed above: failures first, most "
               "severe first, then the passing cases listed (fixed, drift, each op's closest pass).</p>\n");
    for (size_t i = 0; i < r->failures.n; i++) {
        const ug_report_detail *d = ug_report_detail_find(r, r->failures.v[i].case_id);
        if (d && d->failure == (long)i) block(r, d, f);
    }
    for (size_t i = 0; i < r->n_details; i++)
        if (r->details[i].failure < 0) block(r, &r->details[i], f);
    fprintf(f, "</section>\n");
}
