/* csv.c — `report --format csv`: one row per case x output of a run, what Ascend users
 * compare in. Columns are named as msprobe's accuracy checker names them where it has the
 * metric (API Name, DEVICE Dtype, Shape, Cosine, MaxAbsErr, MaxRelativeErr, MERE, MARE,
 * RMSE, Status, Message; docs/REPORTS.md maps each to ours). RFC 4180: CRLF line ends, a
 * field quoted when it holds a comma, quote or line break, quotes doubled; UTF-8 (bytes
 * that are not become \xNN); a text field that a spreadsheet would run as a formula
 * (leading = + - @) gets a leading '. A case that stored no output (CRASH, ERROR,
 * TIMEOUT, SKIP) has one row with the output's fields empty. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ops.h"
#include "db/query_report.h"
#include "oracles/figure.h"
#include "reports/formats.h"
#include "reports/report.h"

static const char *const columns[] = {
    "Case ID", "API Name", "Group",         "Dtype",   "Output",    "DEVICE Dtype",   "Shape",     "Params",
    "Verdict", "Standard", "Headroom Used", "Status",  "MaxAbsErr", "MaxRelativeErr", "MaxUlpErr", "Cosine",
    "MERE",    "MARE",     "RMSE",          "Checked", "Total",     "Message"};

/* The case whose params were parsed last: its outputs' shapes come from its declaration. */
typedef struct {
    FILE *f;
    char case_id[UG_ID_LEN + 1];
    const ug_op_def *def;
    ug_params params;
    int parsed;
    ug_dtype dtype;
    char *params_json; /* the spec's params, compact; NULL when the spec does not parse */
    /* the case's thresholds under its deciding standard, then each discrete compare (parsed once per case) */
    cJSON *thr[1 + UG_DB_DISCRETE_STANDARDS];
} csv_state;

/* One field; text guards against spreadsheet formulas. The first field of a row has no comma before it. */
static void field(FILE *f, const char *s, int first, int text)
{
    char *clean = ug_failure_clean_utf8(s ? s : "");
    const char *t = clean ? clean : "";
    if (!first) fputc(',', f);
    int guard = text && strchr("=+-@", t[0]) && t[0];
    if (!guard && !strpbrk(t, ",\"\r\n")) {
        fputs(t, f);
        free(clean);
        return;
    }
    fputc('"', f);
    if (guard) fputc('\'', f);
    for (const char *p = t; *p; p++) {
        if (*p == '"') fputc('"', f);
        fputc(*p, f);
    }
    fputc('"', f);
    free(clean);
}

static void num_field(FILE *f, double x)
{
    char buf[32];
    field(f, isnan(x) ? "" : ug_report_num(x, buf), 0, 0);
}

static void long_field(FILE *f, long x, int has)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", x);
    field(f, has ? buf : "", 0, 0);
}

static void forget_case(csv_state *s)
{
    if (s->parsed) ug_params_free(&s->params);
    free(s->params_json);
    for (int k = 0; k <= UG_DB_DISCRETE_STANDARDS; k++) cJSON_Delete(s->thr[k]), s->thr[k] = NULL;
    s->parsed = 0, s->params_json = NULL, s->case_id[0] = 0;
}

/* Parses a new case's spec: its params (compact JSON) and, for an op this build has, the parsed params. */
static void load_case(csv_state *s, const ug_db_output_row *row)
{
    if (strcmp(s->case_id, row->case_id) == 0 && s->case_id[0]) return;
    forget_case(s);
    snprintf(s->case_id, sizeof s->case_id, "%s", row->case_id);
    s->thr[0] = cJSON_Parse(row->primary_thresholds);
    for (int k = 0; k < UG_DB_DISCRETE_STANDARDS; k++) s->thr[1 + k] = cJSON_Parse(row->discrete_thresholds[k]);
    cJSON *spec = cJSON_Parse(row->spec_json);
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(spec, "params");
    if (params) s->params_json = cJSON_PrintUnformatted(params);
    int op = ug_op_find(row->op), dt = ug_dtype_parse(row->dtype);
    s->def = op >= 0 ? ug_op_def_get(op) : NULL;
    s->dtype = (ug_dtype)dt;
    char err[256];
    if (s->def && dt >= 0 && cJSON_IsObject(params))
        s->parsed = ug_params_parse(&s->def->decl, params, &s->params, err, sizeof err) == 0;
    cJSON_Delete(spec);
}

/* The output's shape as "[3, 257]" from the op's declaration; "" when it cannot be told. */
static void shape_text(const csv_state *s, const char *output, char *buf, size_t len)
{
    buf[0] = 0;
    if (!s->parsed || !output) return;
    for (const ug_tensor_decl *t = s->def->decl.tensors; t && t->name; t++) {
        if (t->role != UG_TENSOR_OUTPUT || strcmp(t->name, output) != 0) continue;
        ug_dtype dt;
        int ndim;
        int64_t shape[8];
        char err[256];
        if (ug_decl_tensor_shape(&s->params, t, s->dtype, &dt, &ndim, shape, err, sizeof err) != 0) return;
        size_t n = (size_t)snprintf(buf, len, "[");
        for (int d = 0; d < ndim && n < len; d++)
            n += (size_t)snprintf(buf + n, len - n, "%s%lld", d ? ", " : "", (long long)shape[d]);
        if (n < len) snprintf(buf + n, len - n, "]");
        return;
    }
}

/* Whether a standard judged the output: figures stored, not {}, a note or "provided": false. */
static int judged(const cJSON *o)
{
    return o && o->child && !cJSON_GetObjectItemCaseSensitive(o, "note") &&
           !cJSON_GetObjectItemCaseSensitive(o, "provided");
}

/* Judges one output under standard s from the case's parsed thresholds: *fails, *was_judged;
 * the "used" figure when asked (NaN when absent, +inf when stored as null: not finite). */
static void judge_under(int s, const cJSON *thresholds, const ug_db_output_row *row, int *fails, int *was_judged,
                        double *used)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(thresholds, row->output);
    if (!cJSON_IsObject(o)) o = NULL;
    char *text = o ? cJSON_PrintUnformatted(o) : NULL, phrase[512];
    if (text && ug_figure_of_output(s, row->output, text, (size_t)(row->n_checked > 0 ? row->n_checked : 0), phrase,
                                    sizeof phrase))
        *fails = 1;
    *was_judged |= judged(o);
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(o, "used");
    if (used) *used = cJSON_IsNumber(u) ? u->valuedouble : cJSON_IsNull(u) ? INFINITY : NAN;
    free(text);
}

/* The output's status under what decides it (its deciding standard, and the discrete compare
 * that judges a discrete output) and its headroom used (oracles/figure.h ug_verdict_used). */
static const char *output_status(const csv_state *st, const ug_db_output_row *row, double *used)
{
    *used = NAN;
    if (!row->output) return "";
    if (row->nonfinite_mismatch > 0) {
        *used = INFINITY;
        return "NONFINITE";
    }
    int primary = ug_standard_find(row->primary_standard), fails = 0, was_judged = 0;
    if (primary < 0) return "";
    judge_under(primary, st->thr[0], row, &fails, &was_judged, used);
    for (int k = 0; k < UG_DB_DISCRETE_STANDARDS; k++) {
        int s = row->discrete_standard[k], discrete_fails = 0;
        if (s < 0 || s == primary) continue;
        judge_under(s, st->thr[1 + k], row, &discrete_fails, &was_judged, NULL);
        if (discrete_fails) fails = 1, *used = INFINITY; /* a discrete output's own compare decides it */
    }
    return fails ? "FAIL" : was_judged ? "PASS" : "NA";
}

static int csv_row(const ug_db_output_row *row, void *ctx)
{
    csv_state *s = ctx;
    FILE *f = s->f;
    char shape[160];
    double used;
    load_case(s, row);
    shape_text(s, row->output, shape, sizeof shape);
    const char *status = output_status(s, row, &used);
    int has = row->output != NULL;
    field(f, row->case_id, 1, 1);
    field(f, row->op, 0, 1);
    field(f, row->group, 0, 1);
    field(f, row->dtype, 0, 1);
    field(f, has ? row->output : "", 0, 1);
    field(f, has ? row->output_dtype : "", 0, 1);
    field(f, shape, 0, 0);
    field(f, s->params_json ? s->params_json : "", 0, 1);
    field(f, row->verdict, 0, 1);
    field(f, row->primary_standard, 0, 1);
    num_field(f, used);
    field(f, status, 0, 1);
    num_field(f, row->max_abs);
    num_field(f, row->max_rel);
    num_field(f, row->max_ulp);
    num_field(f, row->cosine);
    num_field(f, row->mere);
    num_field(f, row->mare);
    num_field(f, row->rmse);
    long_field(f, row->n_checked, has);
    long_field(f, row->n_total, has);
    field(f, row->message, 0, 1);
    fputs("\r\n", f);
    return 0;
}

int ug_report_write_csv(ug_db *db, const ug_report *r, FILE *f, char *err, size_t errlen)
{
    for (size_t c = 0; c < sizeof columns / sizeof *columns; c++) field(f, columns[c], c == 0, 0);
    fputs("\r\n", f);
    csv_state s = {.f = f};
    int rc = ug_db_report_outputs(db, r->run_id, csv_row, &s, err, errlen);
    forget_case(&s);
    return rc ? -1 : 0;
}
