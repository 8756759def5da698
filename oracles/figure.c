/* figure.c — the deciding figure and the severity of a verdict, read off each standard's
 * thresholds JSON (see figure.h; the keys are those oracles/verdict.c writes). Every
 * standard's reading is one function from the parsed object to a phrase, a fail flag and a
 * severity; the figures are numbers from a file that may come from anywhere, so a missing
 * key, a wrong type or a null (a figure that was not finite) is handled, never trusted. */
#include "oracles/figure.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#define NONFINITE_WORDS "NaN/Inf mismatches (not finite where the exact value is, or the reverse)"

/* What one output's figures say under one standard. */
typedef struct {
    int fails;
    double severity;
    char text[400]; /* the phrase after "OUTPUT: " */
    size_t used;
} reading;

static void say(reading *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(reading *g, const char *fmt, ...)
{
    if (g->used >= sizeof g->text) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(g->text + g->used, sizeof g->text - g->used, fmt, ap);
    va_end(ap);
    g->used = n < 0 ? sizeof g->text : g->used + (size_t)n;
}

/* Starts a failing part of a reading (a standard may fail on several figures: joined by ", "). */
static void part(reading *g, double severity)
{
    if (g->fails) say(g, ", ");
    g->fails = 1;
    g->severity = fmax(g->severity, severity);
}

/* Number under key: 1 with *v; a null (a figure stored as not finite) reads +inf; 0 when
 * the key is missing or not a number. */
static int num(const cJSON *o, const char *key, double *v)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsNull(x)) {
        *v = INFINITY;
        return 1;
    }
    if (!cJSON_IsNumber(x)) return 0;
    *v = x->valuedouble;
    return 1;
}

/* "N of M checked elements" (M left out when unknown). */
static void count_of(reading *g, double n, size_t n_checked, const char *what)
{
    if (n_checked)
        say(g, "%.0f of %zu checked %s", n, n_checked, what);
    else
        say(g, "%.0f %s", n, what);
}

/* A count allowed up to `allowed`: severity failed / (allowed + 1), 1 at the first failing count. */
static double count_severity(double failed, double allowed) { return failed / (fmax(allowed, 0.0) + 1.0); }

/* pypto, reference, allclose: elements beyond atol + rtol*|g|, up to `allowed` of them. */
static void read_tolerance(int s, const cJSON *o, size_t n, reading *g)
{
    double atol, rtol, failed, allowed = 0;
    if (!num(o, "atol", &atol) || !num(o, "rtol", &rtol) || !num(o, "failed", &failed)) return;
    if (s != UG_STD_ALLCLOSE && !num(o, "allowed", &allowed)) return;
    if (!(failed > allowed)) return;
    part(g, count_severity(failed, allowed));
    count_of(g, failed, n, "elements");
    say(g, " beyond %satol %.2g + rtol %.2g * |g|", s == UG_STD_REFERENCE ? "the reference test's " : "", atol, rtol);
    const cJSON *golden = cJSON_GetObjectItemCaseSensitive(o, "golden");
    if (cJSON_IsString(golden) && strcmp(golden->valuestring, "exact or test") == 0)
        say(g, " of both the exact value and the test's golden");
    if (s == UG_STD_ALLCLOSE)
        say(g, " (none allowed)");
    else
        say(g, " (%.0f allowed)", allowed);
}

/* reference on ids (the test's topk_idx_compare): groups with more golden ids missing than allowed. */
static void read_id_groups(const cJSON *o, reading *g)
{
    double group, allowed, worst, failed;
    if (!num(o, "group", &group) || !num(o, "allowed", &allowed) || !num(o, "worst_group", &worst) ||
        !num(o, "failed", &failed) || !(failed > 0))
        return;
    part(g, count_severity(worst, allowed));
    say(g, "%.0f group%s of %.0f ids missing more than %.0f of the golden's ids (worst %.0f)", failed,
        failed == 1 ? "" : "s", group, allowed, worst);
}

static void read_certified(const cJSON *o, size_t n, reading *g)
{
    double violations, worst = 0;
    if (!num(o, "violations", &violations) || !(violations > 0)) return;
    num(o, "worst", &worst);
    part(g, isnan(worst) ? INFINITY : fmax(worst, 1.0));
    count_of(g, violations, n, "elements");
    say(g, " outside the certified bound (worst %.3g x)", worst);
}

static void read_dual(const cJSON *o, reading *g)
{
    double t, share;
    if (!num(o, "t", &t) || !num(o, "share", &share) || !(t > 0) || share < t) return;
    part(g, share / t);
    say(g, "%.3g%% of checked elements with relative error above %.2g (limit %.3g%%)", 100 * share, t, 100 * t);
}

static void read_mixed(const cJSON *o, reading *g)
{
    double matched, over, atol = 0, rtol = 0, floor_ = 0;
    if (!num(o, "matched", &matched) || !num(o, "over_max", &over)) return;
    num(o, "atol", &atol);
    num(o, "rtol", &rtol);
    num(o, "floor", &floor_);
    if (!(matched >= 0.99)) {
        part(g, (1.0 - matched) / 0.01);
        say(g, "%.3g%% of checked elements within atol %.2g + rtol %.2g * |g| (needs 99%%)", 100 * matched, atol, rtol);
    }
    if (over > 0) {
        part(g, over);
        say(g, "%.0f elements beyond max(%.2g, 32 ulp)", over, floor_);
    }
}

static void read_mere_mare(const cJSON *o, reading *g)
{
    double t, mere, mare, small = 0;
    if (!num(o, "T", &t) || !num(o, "mere", &mere) || !num(o, "mare", &mare) || !(t > 0)) return;
    num(o, "small_beyond_atol", &small);
    if (!(mere < t)) {
        part(g, mere / t);
        say(g, "MERE %.3g (limit %.3g)", mere, t);
    }
    if (!(mare < 10 * t)) {
        part(g, mare / (10 * t));
        say(g, "MARE %.3g (limit %.3g)", mare, 10 * t);
    }
    if (small > 0) {
        part(g, small);
        say(g, "%.0f small values beyond their atol", small);
    }
}

static void read_ulp(const cJSON *o, reading *g)
{
    double limit, share, mean;
    if (!num(o, "ulp_limit", &limit) || !num(o, "share_above", &share) || !num(o, "mean_ulp", &mean)) return;
    if (limit > 1) { /* fp32: fails only when both the mean and the share are over */
        if (mean < 64 || share < 0.05) return;
        part(g, fmin(mean / 64, share / 0.05));
        say(g, "mean %.3g ulp (limit 64) and %.3g%% of checked elements above %g ulp (limit 5%%)", mean, 100 * share,
            limit);
    } else if (!(share < 0.001)) {
        part(g, share / 0.001);
        say(g, "%.3g%% of checked elements above %g ulp (limit 0.1%%)", 100 * share, limit);
    }
}

/* One benchmark ratio against its limit: a failing part when over. */
static void bench_part(const cJSON *o, const char *key, const char *max_key, const char *fmt, reading *g)
{
    double v, max;
    if (!num(o, key, &v) || !num(o, max_key, &max) || v <= max) return;
    part(g, max > 0 ? v / max : INFINITY);
    say(g, fmt, v, max);
}

static void read_benchmark(const cJSON *o, reading *g)
{
    bench_part(o, "mare_ratio", "mare_max", "MARE %.3g x the naive evaluation's (limit %g)", g);
    bench_part(o, "mere_ratio", "mere_max", "MERE %.3g x the naive evaluation's (limit %g)", g);
    bench_part(o, "rmse_ratio", "rmse_max", "RMSE %.3g x the naive evaluation's (limit %g)", g);
    bench_part(o, "small_errs", "small_max", "%.0f small-value errors (limit %g)", g);
    bench_part(o, "max_abs", "max_abs_limit", "max abs error %.3g (limit %.3g)", g);
}

/* The discrete compares, by their keys: certified holds a discrete output to its own
 * compare and stores that compare's figures (verdict.c). 1 when o was one of them. */
static int read_discrete(const cJSON *o, size_t n, reading *g)
{
    double v, legal = 0;
    if (num(o, "illegal", &v)) {
        num(o, "legal_flips", &legal);
        if (v > 0) {
            part(g, v);
            say(g, "%.0f codes differ beyond a flip at a rounding boundary (%.0f legal flips)", v, legal);
        }
        return 1;
    }
    if (!num(o, "differ", &v)) return 0;
    if (v > 0) {
        part(g, v);
        if (cJSON_GetObjectItemCaseSensitive(o, "rule"))
            say(g, "%.0f indices outside the top-k set up to ties", v);
        else {
            count_of(g, v, n, "codes");
            say(g, " differ (bitwise compare)");
        }
    }
    return 1;
}

static void read_figures(int s, const cJSON *o, size_t n, reading *g)
{
    double v;
    if (num(o, "nonfinite_mismatch", &v)) {
        if (v > 0) {
            part(g, INFINITY);
            say(g, "%.0f " NONFINITE_WORDS, v);
        }
        return;
    }
    if (read_discrete(o, n, g)) return;
    switch (s) {
    case UG_STD_REFERENCE:
        if (cJSON_GetObjectItemCaseSensitive(o, "group"))
            read_id_groups(o, g);
        else
            read_tolerance(s, o, n, g);
        break;
    case UG_STD_PYPTO:
    case UG_STD_ALLCLOSE: read_tolerance(s, o, n, g); break;
    case UG_STD_CERTIFIED: read_certified(o, n, g); break;
    case UG_STD_DUAL_THOUSANDTH: read_dual(o, g); break;
    case UG_STD_MIXED_TOLERANCE: read_mixed(o, g); break;
    case UG_STD_MERE_MARE: read_mere_mare(o, g); break;
    case UG_STD_ULP: read_ulp(o, g); break;
    case UG_STD_BENCHMARK: read_benchmark(o, g); break;
    default: break;
    }
}

static void read_output(int s, const char *json, size_t n, reading *g)
{
    memset(g, 0, sizeof *g);
    cJSON *o = json ? cJSON_Parse(json) : NULL;
    if (cJSON_IsObject(o)) read_figures(s, o, n, g);
    cJSON_Delete(o);
    if (g->fails && isnan(g->severity)) g->severity = INFINITY;
}

int ug_figure_of_output(int standard, const char *output, const char *thresholds_json, size_t n_checked, char *buf,
                        size_t len)
{
    reading g;
    read_output(standard, thresholds_json, n_checked, &g);
    if (len) buf[0] = 0;
    if (g.fails && len) snprintf(buf, len, "%s: %s", output ? output : "?", g.text);
    return g.fails;
}

double ug_figure_severity_of_output(int standard, const char *thresholds_json)
{
    reading g;
    read_output(standard, thresholds_json, 0, &g);
    return g.fails ? g.severity : 0.0;
}

/* Appends text to buf (used bytes *n), "; " between phrases. */
static void join(char *buf, size_t len, size_t *n, const char *text)
{
    if (!text[0] || *n + 1 >= len) return;
    int w = snprintf(buf + *n, len - *n, "%s%s", *n ? "; " : "", text);
    *n = w < 0 || (size_t)w >= len - *n ? len - 1 : *n + (size_t)w;
}

static void standard_figure_at(const ug_result *r, int s, char *buf, size_t len, size_t *n)
{
    char one[512];
    for (int k = 0; s >= 0 && s < UG_STD_COUNT && k < r->n_out && k < UG_MAX_TENSORS; k++)
        if (ug_figure_of_output(s, r->out[k].name, r->out[k].thresholds[s], r->out[k].m.n, one, sizeof one))
            join(buf, len, n, one);
}

void ug_standard_figure(const ug_result *r, int s, char *buf, size_t len)
{
    size_t n = 0;
    if (!len) return;
    buf[0] = 0;
    standard_figure_at(r, s, buf, len, &n);
}

static void nonfinite_figure(const ug_result *r, char *buf, size_t len, size_t *n)
{
    char one[160];
    for (int k = 0; k < r->n_out && k < UG_MAX_TENSORS; k++)
        if (r->out[k].m.n_nonfinite_mismatch) {
            snprintf(one, sizeof one, "%.40s: %zu " NONFINITE_WORDS, r->out[k].name, r->out[k].m.n_nonfinite_mismatch);
            join(buf, len, n, one);
        }
}

int ug_verdict_deciding(const ug_result *r, int list[UG_STD_COUNT])
{
    int m = 0;
    if (r->primary >= 0 && r->primary < UG_STD_COUNT && r->verdict[r->primary] == UG_V_FAIL) list[m++] = r->primary;
    for (int s = 0; s < UG_STD_COUNT; s++)
        if (ug_standard_is_discrete(s) && s != r->primary && r->verdict[s] == UG_V_FAIL) list[m++] = s;
    return m;
}

void ug_verdict_figure(const ug_result *r, char *buf, size_t len)
{
    size_t n = 0;
    if (!len) return;
    buf[0] = 0;
    if (r->outcome == UG_OUT_NONFINITE) nonfinite_figure(r, buf, len, &n);
    if (n) return;
    if (r->outcome != UG_OUT_FAIL && r->outcome != UG_OUT_NONFINITE) {
        snprintf(buf, len, "%s", r->message);
        return;
    }
    int list[UG_STD_COUNT], m = ug_verdict_deciding(r, list);
    for (int i = 0; i < m; i++) standard_figure_at(r, list[i], buf, len, &n);
    for (int i = 0; i < m && !n; i++) /* the figures say nothing (cut, missing): name the standards */
        snprintf(buf, len, "fails %s", ug_standard_name(list[i]));
    if (!buf[0]) snprintf(buf, len, "%s", r->message);
}

static double standard_severity(const ug_result *r, int s)
{
    double worst = 0.0;
    for (int k = 0; k < r->n_out && k < UG_MAX_TENSORS; k++)
        worst = fmax(worst, ug_figure_severity_of_output(s, r->out[k].thresholds[s]));
    return worst;
}

double ug_verdict_severity(const ug_result *r, int standard)
{
    if (standard >= 0) return standard < UG_STD_COUNT ? standard_severity(r, standard) : 0.0;
    if (r->outcome == UG_OUT_PASS || r->outcome == UG_OUT_SKIP) return 0.0;
    if (r->outcome != UG_OUT_FAIL) return INFINITY;
    int list[UG_STD_COUNT], m = ug_verdict_deciding(r, list);
    double worst = 0.0;
    for (int i = 0; i < m; i++) worst = fmax(worst, standard_severity(r, list[i]));
    return worst > 0 ? worst : 1.0; /* a FAIL whose figures say nothing: at the edge */
}

/* The "used" figure of one output's thresholds text under standard s: NaN when absent. */
static double output_used(const ug_output_result *o, int s)
{
    if (o->m.n_nonfinite_mismatch) return INFINITY;
    cJSON *j = cJSON_Parse(o->thresholds[s]);
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "used");
    double v = cJSON_IsNumber(u) ? u->valuedouble : cJSON_IsNull(u) ? INFINITY : NAN; /* null: an infinite figure */
    if (o->verdict[s] == UG_V_FAIL && isnan(v) && ug_standard_is_discrete(s)) v = INFINITY;
    cJSON_Delete(j);
    return v;
}

double ug_verdict_used(const ug_result *r)
{
    double worst = NAN;
    if (r->outcome != UG_OUT_PASS && r->outcome != UG_OUT_FAIL && r->outcome != UG_OUT_NONFINITE) return NAN;
    for (int k = 0; k < r->n_out && k < UG_MAX_TENSORS; k++) {
        const ug_output_result *o = &r->out[k];
        if (o->not_provided) continue;
        double u = output_used(o, r->primary >= 0 && r->primary < UG_STD_COUNT ? r->primary : 0);
        for (int s = 0; s < UG_STD_COUNT; s++) /* a discrete output's own compare decides it */
            if (ug_standard_is_discrete(s) && o->verdict[s] == UG_V_FAIL) u = INFINITY;
        if (!isnan(u)) worst = isnan(worst) ? u : fmax(worst, u);
    }
    return worst;
}

/* The output of r called name, added when r has none (NULL when r is full). */
static ug_output_result *output_named(ug_result *r, const char *name)
{
    for (int k = 0; k < r->n_out && k < UG_MAX_TENSORS; k++)
        if (strncmp(r->out[k].name, name, sizeof r->out[k].name - 1) == 0) return &r->out[k];
    if (r->n_out < 0 || r->n_out >= UG_MAX_TENSORS) return NULL;
    ug_output_result *o = &r->out[r->n_out++];
    memset(o, 0, sizeof *o);
    snprintf(o->name, sizeof o->name, "%s", name);
    return o;
}

int ug_result_put_stored_thresholds(ug_result *r, int standard, const char *json)
{
    cJSON *j = json ? cJSON_Parse(json) : NULL;
    if (!cJSON_IsObject(j) || standard < 0 || standard >= UG_STD_COUNT) {
        cJSON_Delete(j);
        return -1;
    }
    for (const cJSON *c = j->child; c; c = c->next) {
        ug_output_result *o = c->string ? output_named(r, c->string) : NULL;
        char *text = o ? cJSON_PrintUnformatted(c) : NULL;
        if (o) snprintf(o->thresholds[standard], sizeof o->thresholds[standard], "%s", text ? text : "{}");
        cJSON_free(text);
    }
    cJSON_Delete(j);
    return 0;
}
