/* formats.c — the markdown, JSON and JUnit writers of report.h. The markdown table is the
 * release report's generalization table (group, operators, cases, pass rate, and the
 * certified standard's pass rate beside it) followed by one row per operator, and last the
 * database's latest kernel-timing table where it holds one (written by bench_report.c, the
 * same writer as `bench kernels` prints); JUnit has one testcase per case so CI servers
 * list failures. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "reports/bench_report.h"
#include "reports/report.h"
#include "reports/xml.h"
#include "db/query_report.h"

/* The pass-rate cell of t: a dash when every case was skipped (no verdict to rate). */
static const char *pass_cell(const ug_tally *t, char *buf, size_t len) { return ug_tally_pass_cell(t, "—", buf, len); }

static const char *cert_cell(const ug_tally *t, char *buf, size_t len) { return ug_tally_cert_cell(t, "–", buf, len); }

static int ops_in_group(const ug_report *r, int g)
{
    int n = 0;
    for (int op = 0; op < UG_OP_COUNT; op++) n += (int)ug_op_group(op) == g && r->op[op].cases > 0;
    return n;
}

void ug_report_write_md(const ug_report *r, FILE *f)
{
    char cert[24], pass[24];
    fprintf(f, "# ulpgym run %ld\n\n", r->run_id);
    fprintf(f, "plan `%s` (hash %s), backend `%s`, build %s, host %s, %s – %s (%s)\n\n", r->plan, r->plan_hash,
            r->backend, r->git_rev, r->host, r->started, r->finished[0] ? r->finished : "…", r->status);
    if (r->primary[0])
        fprintf(f, "Every case's outcome was decided by the `%s` standard (`sweep --primary %s`), not by its op's own "
                   "primary standard.\n\n", r->primary, r->primary);
    fprintf(f, "## Generalization results\n\n"
               "| group | operators | cases | passed | failed | other | pass rate | certified pass rate |\n");
    fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int g = 0; g < UG_GROUP_COUNT; g++)
        if (r->group[g].cases)
            fprintf(f, "| %s | %d | %ld | %ld | %ld | %ld | %s | %s |\n", ug_group_name((ug_group)g),
                    ops_in_group(r, g), r->group[g].cases, r->group[g].pass, r->group[g].fail, r->group[g].other,
                    pass_cell(&r->group[g], pass, sizeof pass), cert_cell(&r->group[g], cert, sizeof cert));
    int nops = 0;
    for (int op = 0; op < UG_OP_COUNT; op++) nops += r->op[op].cases > 0;
    fprintf(f, "| **total** | %d | %ld | %ld | %ld | %ld | %s | %s |\n\n", nops, r->total.cases, r->total.pass,
            r->total.fail, r->total.other, pass_cell(&r->total, pass, sizeof pass), cert_cell(&r->total, cert, sizeof cert));
    fprintf(f, "Pass rate: cases whose outcome is PASS, decided by %s, among the cases not skipped (%ld SKIP, counted "
               "under other, are no verdict and left out of the denominator; — where every case was skipped). "
               "Certified pass rate: cases whose `certified` verdict is PASS among the %ld it judged (PASS or FAIL); "
               "NA cases (no numeric output) and cases without verdicts (SKIP, ERROR, CRASH, TIMEOUT) are left "
               "out.\n\n",
            r->primary[0] ? "the run's `--primary` standard" : "each op's primary standard", r->total.skip,
            r->total.cert_judged);
    if (r->regressions)
        fprintf(f, "Cases include %ld regression cases found by fuzzing (corpus/found/, origin fuzz) beside the plan's.\n\n",
                r->regressions);
    fprintf(f, "## Per operator\n\n"
               "| group | operator | cases | passed | failed | other | pass rate | certified pass rate |\n");
    fprintf(f, "|---|---|---:|---:|---:|---:|---:|---:|\n");
    for (int op = 0; op < UG_OP_COUNT; op++)
        if (r->op[op].cases)
            fprintf(f, "| %s | %s | %ld | %ld | %ld | %ld | %s | %s |\n", ug_group_name(ug_op_group(op)),
                    ug_op_name(op), r->op[op].cases, r->op[op].pass, r->op[op].fail, r->op[op].other,
                    pass_cell(&r->op[op], pass, sizeof pass), cert_cell(&r->op[op], cert, sizeof cert));
    size_t shown = r->failures.n < (size_t)r->top ? r->failures.n : (size_t)r->top;
    if (shown) {
        fprintf(f, "\n## Top failures\n\n| case | op | dtype | verdict | what decided | triage |\n|---|---|---|---|---|---|\n");
        for (size_t i = 0; i < shown; i++) {
            const ug_failure *x = &r->failures.v[i];
            char *line = ug_failure_id_ok(x->case_id) ? ug_report_triage_line(r, x->case_id) : NULL;
            fprintf(f, "| %s | %s | %s | %s | %s | `%s` |\n", x->case_id, x->op, x->dtype, x->verdict, x->figure,
                    line ? line : "");
            free(line);
        }
    }
    if (r->has_bench) {
        fputc('\n', f);
        ug_bench_write_md(&r->bench, f);
    }
}

static cJSON *tally_json(const ug_tally *t)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "cases", (double)t->cases);
    cJSON_AddNumberToObject(o, "passed", (double)t->pass);
    cJSON_AddNumberToObject(o, "failed", (double)t->fail);
    cJSON_AddNumberToObject(o, "other", (double)t->other);
    cJSON_AddNumberToObject(o, "skipped", (double)t->skip);
    if (ug_tally_pass_rate(t) >= 0) cJSON_AddNumberToObject(o, "pass_rate", ug_tally_pass_rate(t));
    else cJSON_AddNullToObject(o, "pass_rate"); /* every case skipped */
    cJSON_AddNumberToObject(o, "certified_judged", (double)t->cert_judged);
    cJSON_AddNumberToObject(o, "certified_passed", (double)t->cert_pass);
    if (t->cert_judged) cJSON_AddNumberToObject(o, "pass_rate_certified", ug_tally_cert_rate(t));
    else cJSON_AddNullToObject(o, "pass_rate_certified"); /* the certified standard judged no case */
    return o;
}

void ug_report_write_json(const ug_report *r, FILE *f)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "run_id", (double)r->run_id);
    cJSON_AddStringToObject(j, "started_at", r->started);
    cJSON_AddStringToObject(j, "finished_at", r->finished);
    cJSON_AddStringToObject(j, "status", r->status);
    cJSON_AddStringToObject(j, "backend", r->backend);
    cJSON_AddStringToObject(j, "plan", r->plan);
    cJSON_AddStringToObject(j, "plan_hash", r->plan_hash);
    cJSON_AddStringToObject(j, "git_rev", r->git_rev);
    if (r->primary[0]) cJSON_AddStringToObject(j, "primary_standard", r->primary);
    else cJSON_AddNullToObject(j, "primary_standard"); /* each op's own primary decided */
    cJSON_AddItemToObject(j, "total", tally_json(&r->total));
    cJSON_AddNumberToObject(j, "regression_cases", (double)r->regressions);
    cJSON *groups = cJSON_AddObjectToObject(j, "groups");
    for (int g = 0; g < UG_GROUP_COUNT; g++)
        if (r->group[g].cases) cJSON_AddItemToObject(groups, ug_group_name((ug_group)g), tally_json(&r->group[g]));
    cJSON *ops = cJSON_AddObjectToObject(j, "ops");
    for (int op = 0; op < UG_OP_COUNT; op++) {
        if (!r->op[op].cases) continue;
        cJSON *o = tally_json(&r->op[op]);
        cJSON *dts = cJSON_AddObjectToObject(o, "dtypes");
        for (int dt = 0; dt < UG_DT_COUNT; dt++)
            if (r->op_dtype[op][dt].cases) cJSON_AddItemToObject(dts, ug_dtype_name((ug_dtype)dt), tally_json(&r->op_dtype[op][dt]));
        cJSON *h = cJSON_AddObjectToObject(o, "max_ulp_histogram");
        for (int b = 0; b < UG_ULP_BUCKETS; b++) cJSON_AddNumberToObject(h, ug_ulp_bucket_names[b], (double)r->ulp_hist[op][b]);
        cJSON_AddItemToObject(ops, ug_op_name(op), o);
    }
    cJSON *fails = cJSON_AddArrayToObject(j, "failures");
    for (size_t i = 0; i < r->failures.n && i < (size_t)r->top; i++) {
        const ug_failure *x = &r->failures.v[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "case_id", x->case_id);
        cJSON_AddStringToObject(o, "op", x->op);
        cJSON_AddStringToObject(o, "dtype", x->dtype);
        cJSON_AddStringToObject(o, "verdict", x->verdict);
        cJSON_AddStringToObject(o, "figure", x->figure);
        if (x->has_metrics) cJSON_AddNumberToObject(o, "max_ulp", x->max_ulp);
        else cJSON_AddNullToObject(o, "max_ulp"); /* no metric: a crash, a timeout */
        cJSON_AddStringToObject(o, "message", x->message);
        cJSON_AddItemToArray(fails, o);
    }
    char *s = cJSON_Print(j);
    fprintf(f, "%s\n", s ? s : "{}");
    free(s);
    cJSON_Delete(j);
}

typedef struct {
    const ug_report *r;
    FILE *f;
    ug_db *db;
    char current[64]; /* the op whose <testsuite> is open, "" before the first */
} junit_state;

/* The spec's params as "k=v k=v" (escaped), so a CI page names the shape, not only the ID. */
static void junit_params(FILE *f, const char *spec_json)
{
    cJSON *j = cJSON_Parse(spec_json);
    for (const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "params") ? cJSON_GetObjectItemCaseSensitive(j, "params")->child : NULL;
         p; p = p->next) {
        char *v = cJSON_IsString(p) ? NULL : cJSON_PrintUnformatted(p);
        fputc(' ', f);
        ug_xml_escape(f, p->string);
        fputc('=', f);
        ug_xml_escape(f, v ? v : p->valuestring);
        free(v);
    }
    cJSON_Delete(j);
}

static int junit_output(const ug_db_output_figures *o, void *ctx)
{
    FILE *f = ctx;
    fprintf(f, "output ");
    ug_xml_escape(f, o->output);
    fprintf(f, ": %ld of %ld elements checked, max abs err %.6g, max rel err %.6g, max ulp %.6g%s\n", o->n_checked,
            o->n_total, o->max_abs, o->max_rel, o->max_ulp, o->nonfinite_mismatch ? ", NaN/Inf mismatches" : "");
    return 0;
}

/* The body of a non-PASS testcase: what GitLab and Jenkins show (GitLab ignores the
 * message attribute): the verdict, each output's figures, the thresholds applied, the
 * message and the command that triages it. */
static void junit_body(junit_state *js, const ug_db_case_row *row)
{
    FILE *f = js->f;
    char thresholds[4096], err[256];
    fprintf(f, "%s by %s (primary standard)\n", row->verdict, row->primary_standard);
    ug_db_report_case_figures(js->db, js->r->run_id, row->case_id, row->primary_standard, junit_output, f, thresholds,
                              sizeof thresholds, err, sizeof err);
    if (thresholds[0]) {
        fprintf(f, "thresholds: ");
        ug_xml_escape(f, thresholds);
        fputc('\n', f);
    }
    if (row->message[0]) {
        fprintf(f, "message: ");
        ug_xml_escape(f, row->message);
        fputc('\n', f);
    }
    char *line = ug_report_triage_line(js->r, row->case_id);
    fprintf(f, "triage: ");
    ug_xml_escape(f, line ? line : "");
    fputc('\n', f);
    free(line);
}

/* One <testcase>; opens the op's <testsuite> (closing the previous one) on a new op. */
static int junit_case(const ug_db_case_row *row, void *ctx)
{
    junit_state *js = ctx;
    FILE *f = js->f;
    const char *op = row->op, *verdict = row->verdict;
    int opi = ug_op_find(op);
    if (opi < 0) return 0;
    if (strcmp(js->current, op) != 0) {
        if (js->current[0]) fprintf(f, "  </testsuite>\n");
        snprintf(js->current, sizeof js->current, "%s", op);
        const ug_tally *t = &js->r->op[opi];
        fprintf(f, "  <testsuite name=\"%s.%s\" tests=\"%ld\" failures=\"%ld\" errors=\"%ld\" skipped=\"%ld\">\n",
                ug_group_name(ug_op_group(opi)), op, t->cases, t->fail, t->other - t->skip, t->skip);
    }
    fprintf(f, "    <testcase classname=\"%s.%s\" name=\"%s %s", ug_group_name(ug_op_group(opi)), op, row->case_id,
            row->dtype);
    junit_params(f, row->spec_json);
    fprintf(f, "\" time=\"%.6f\"", row->ms / 1e3);
    if (strcmp(verdict, "PASS") == 0) {
        fprintf(f, "/>\n");
        return 0;
    }
    const char *tag = strcmp(verdict, "FAIL") == 0 ? "failure" : strcmp(verdict, "SKIP") == 0 ? "skipped" : "error";
    fprintf(f, ">\n      <%s type=\"%s\" message=\"", tag, verdict);
    ug_xml_escape(f, row->message);
    fprintf(f, "\">");
    junit_body(js, row);
    fprintf(f, "</%s>\n    </testcase>\n", tag);
    return 0;
}

int ug_report_write_junit(ug_db *db, const ug_report *r, FILE *f, char *err, size_t errlen)
{
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f, "<testsuites name=\"ulpgym run %ld\" tests=\"%ld\" failures=\"%ld\" errors=\"%ld\" time=\"%.3f\">\n",
            r->run_id, r->total.cases, r->total.fail, r->total.other - r->total.skip, r->seconds_kernel + r->seconds_oracle);
    junit_state js = {r, f, db, ""};
    if (ug_db_report_cases(db, r->run_id, junit_case, &js, err, errlen)) return -1;
    if (js.current[0]) fprintf(f, "  </testsuite>\n");
    fprintf(f, "</testsuites>\n");
    return 0;
}
