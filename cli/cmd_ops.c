/* cmd_ops.c — `ulpgym ops`: the operator catalogue and each op's contract.
 *
 * `ops show OP --json` is what a plugin author codes against (run/op_contract.c builds it,
 * from the same declaration the case builder allocates from, so it cannot drift from the
 * code); `ops show OP` prints the same as text. Every key is documented in docs/PLUGINS.md. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "gen/fuzzspace.h"
#include "oracles/verdict.h"
#include "run/mutant_scan.h"
#include "run/op_contract.h"
#include "run/tightness.h"

static const char *cmp_name(ug_cmp c) { return ug_cmp_name((int)c); }

static int n_variants(const ug_op_def *d)
{
    int n = 0;
    while (ug_op_variants(d->op)[n].name) n++;
    return n;
}

static int print_json(cJSON *j)
{
    char *s = cJSON_Print(j);
    puts(s ? s : "null");
    free(s);
    cJSON_Delete(j);
    return 0;
}

/* The declaration as text: params (type, default, range), derived sizes, tensors. */
/* The inputs the contract leaves outside its device model (gen/ops/OP.json fuzz_domain). */
static void print_domain(const cJSON *dom)
{
    if (!cJSON_GetArraySize(dom)) return;
    printf(
        "  outside the device model (the fuzzer does not draw these; a verdict there says nothing about a kernel):\n");
    for (const cJSON *e = dom->child; e; e = e->next) {
        char ex[240] = "";
        size_t n = 0;
        for (const cJSON *v = cJSON_GetObjectItem(e, "excluded_specials")->child; v && n < sizeof ex; v = v->next)
            n += (size_t)snprintf(ex + n, sizeof ex - n, "%s%s", n ? ", " : "", v->valuestring);
        const cJSON *whole = cJSON_GetObjectItem(e, "excluded_whole")->child;
        for (const cJSON *v = whole; v && n < sizeof ex; v = v->next)
            n += (size_t)snprintf(ex + n, sizeof ex - n, "%s%s%s", n ? ", " : "",
                                  v == whole ? "the whole input at " : "", v->valuestring);
        const char *input = cJSON_GetObjectItem(e, "input")->valuestring;
        int gen = cJSON_IsTrue(cJSON_GetObjectItem(e, "generated_draws"));
        printf("    %-14s %s%s: %s\n", strcmp(input, "*") == 0 ? "other inputs" : input, ex,
               gen ? ""
               : n ? "; magnitudes beyond the space's own draws"
                   : "magnitudes beyond the space's own draws",
               cJSON_GetObjectItem(e, "why")->valuestring);
    }
}

static void print_decl(const ug_op_def *d)
{
    cJSON *j = ug_decl_json(&d->decl, d->dtypes);
    printf("  params (missing ones get their default, written into params_json):\n");
    for (const cJSON *p = cJSON_GetObjectItem(j, "params")->child; p; p = p->next) {
        const cJSON *def = cJSON_GetObjectItem(p, "default"), *ch = cJSON_GetObjectItem(p, "choices");
        const cJSON *lo = cJSON_GetObjectItem(p, "min"), *hi = cJSON_GetObjectItem(p, "max");
        char range[96] = "";
        if (ch)
            snprintf(range, sizeof range, " in %s", ch->valuestring);
        else if (lo || hi)
            snprintf(range, sizeof range, " in [%.17g, %.17g]", lo ? lo->valuedouble : -INFINITY,
                     hi ? hi->valuedouble : INFINITY);
        printf("    %-12s %-9s default %s%s: %s\n", cJSON_GetObjectItem(p, "name")->valuestring,
               cJSON_GetObjectItem(p, "type")->valuestring, def ? def->valuestring : "(required)", range,
               cJSON_GetObjectItem(p, "doc") ? cJSON_GetObjectItem(p, "doc")->valuestring : "");
    }
    for (const cJSON *x = cJSON_GetObjectItem(j, "derived")->child; x; x = x->next)
        printf("    derived %-12s = %s\n", x->string, cJSON_GetObjectItem(x, "formula")->valuestring);
    printf("  tensors (C order; shapes as formulas of the params; dtype per case dtype):\n");
    for (const cJSON *t = cJSON_GetObjectItem(j, "tensors")->child; t; t = t->next) {
        char shape[256] = "[", dts[128] = "";
        size_t n = 1, m = 0;
        for (const cJSON *x = cJSON_GetObjectItem(t, "shape")->child; x && n < sizeof shape; x = x->next)
            n += (size_t)snprintf(shape + n, sizeof shape - n, "%s%s",
                                  x->prev && x != cJSON_GetObjectItem(t, "shape")->child ? ", " : "", x->valuestring);
        if (n < sizeof shape) snprintf(shape + n, sizeof shape - n, "]");
        for (const cJSON *x = cJSON_GetObjectItem(t, "dtype")->child; x && m < sizeof dts; x = x->next)
            m += (size_t)snprintf(dts + m, sizeof dts - m, "%s%s->%s", m ? " " : "", x->string, x->valuestring);
        const cJSON *when = cJSON_GetObjectItem(t, "when"), *doc = cJSON_GetObjectItem(t, "doc");
        printf("    %-6s %-14s %-34s %s%s%s\n", cJSON_GetObjectItem(t, "role")->valuestring,
               cJSON_GetObjectItem(t, "name")->valuestring, shape, dts, when ? "  when " : "",
               when ? when->valuestring : "");
        if (cJSON_IsTrue(cJSON_GetObjectItem(t, "optional"))) /* its math and rounding: the contract of an extra */
            printf("           optional (judged when the kernel writes it, else NA: docs/PLUGINS.md): %s\n",
                   doc ? doc->valuestring : "");
    }
    if (d->semantics) printf("  semantics: %s\n", d->semantics);
    cJSON_Delete(j);
    cJSON *domain = ug_fuzz_domain_json(d->op);
    print_domain(domain);
    cJSON_Delete(domain);
}

/* `ops show OP --mutants`: per kernel variant, the share of the op's default-plan cases
 * that catch it and the first few catching IDs (each triageable), so a test author sees
 * what the plan covers and what only the fuzzer reaches (beyond-plan mutants). ERROR and
 * SKIP outcomes are not catches (run/mutant_scan.h); their counts follow when non-zero.
 * -2 if the op or the plan is unusable. */
static int print_mutant_scan(int op, FILE *f)
{
    ug_plan p;
    char err[512];
    if (ug_mutant_scan_plan(op, &p, err, sizeof err)) {
        fprintf(stderr, "ulpgym: %s\n", err);
        return -2;
    }
    int n;
    ug_variant_scan *s = ug_mutant_scan(op, &p, NULL, &n);
    fprintf(f,
            "  plan cases catching each kernel variant (%zu cases of the default plan), under the primary "
            "standard (%s) and under certified, then of the cases whose outputs the variant changes (any bit\n"
            "  differs from the correct kernel's) how many the primary standard catches:\n",
            p.n, ug_standard_name(ug_op_def_get(op)->primary));
    for (int v = 0; v < n; v++) {
        if (s[v].unavailable) continue;
        fprintf(f, "    %-24s %4zu/%zu (%5.1f%%)  certified %4zu/%zu (%5.1f%%)", s[v].variant, s[v].caught, p.n,
                p.n ? 100.0 * (double)s[v].caught / (double)p.n : 0.0, s[v].caught_certified, p.n,
                p.n ? 100.0 * (double)s[v].caught_certified / (double)p.n : 0.0);
        if (v == 0)
            fprintf(f, "  <- the correct kernel: must be 0 and 0");
        else if (s[v].legal)
            fprintf(f, "  <- legal: must be 0 and 0; changes %zu", s[v].changed);
        else
            fprintf(f, "  changes %zu, caught %zu (%5.1f%%)", s[v].changed, s[v].caught_changed,
                    s[v].changed ? 100.0 * (double)s[v].caught_changed / (double)s[v].changed : 0.0);
        for (size_t k = 0; k < s[v].n_first; k++) fprintf(f, "%s%s", k ? " " : "  e.g. ", s[v].first[k]);
        if (s[v].beyond_plan) fprintf(f, "  (beyond the plan by design: see corpus/found/%s)", ug_op_name(op));
        fputc('\n', f);
        if (s[v].errors || s[v].skips || s[v].other)
            fprintf(f, "      not counted as caught: %zu ERROR, %zu SKIP, %zu other; first: %s\n", s[v].errors,
                    s[v].skips, s[v].other, s[v].message);
    }
    free(s);
    ug_plan_free(&p);
    return 0;
}

/* One tightness cell as text: "0.412 (sim, CASE)", or why there is none. */
static void tight_cell_text(const ug_tight_cell *c, char *buf, size_t len)
{
    if (isnan(c->worst))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%-9.3g %s %s", c->worst, c->case_id, c->variant);
}

static cJSON *tight_cell_json(const ug_tight_cell *c)
{
    cJSON *j = cJSON_CreateObject();
    if (isnan(c->worst))
        cJSON_AddNullToObject(j, "worst");
    else
        cJSON_AddNumberToObject(j, "worst", isinf(c->worst) ? 1e308 : c->worst);
    if (!isnan(c->worst)) {
        cJSON_AddStringToObject(j, "case_id", c->case_id);
        cJSON_AddStringToObject(j, "kernel", c->variant);
    }
    cJSON_AddNumberToObject(j, "judged", (double)c->n_judged);
    return j;
}

static cJSON *tightness_json(const ug_tightness *t, long long seed)
{
    cJSON *j = cJSON_CreateObject(), *outs = cJSON_AddArrayToObject(j, "outputs");
    cJSON_AddStringToObject(j, "op", ug_op_name(t->op));
    cJSON_AddStringToObject(j, "primary", ug_standard_name(t->primary));
    if (seed >= 0)
        cJSON_AddNumberToObject(j, "seed", (double)seed);
    else
        cJSON_AddNullToObject(j, "seed");
    cJSON_AddNumberToObject(j, "cases", (double)t->n_cases);
    cJSON_AddNumberToObject(j, "legal_kernels", t->n_kernels);
    cJSON_AddNumberToObject(j, "false_alarms", (double)t->false_alarms);
    cJSON_AddNumberToObject(j, "not_judged", (double)t->not_judged);
    for (int k = 0; k < t->n_out; k++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", t->out[k].name);
        cJSON_AddBoolToObject(o, "numeric", t->out[k].numeric);
        if (t->out[k].numeric) {
            cJSON_AddItemToObject(o, "primary", tight_cell_json(&t->out[k].primary));
            cJSON_AddItemToObject(o, "certified", tight_cell_json(&t->out[k].certified));
        }
        cJSON_AddItemToArray(outs, o);
    }
    return j;
}

/* `ops show OP --tightness`: per output, the worst share of its allowance a legal kernel
 * used over the op's plan cases (run/tightness.h). */
static int print_tightness(int op, long long seed, int json)
{
    ug_tightness t;
    char err[512];
    if (ug_tightness_scan(op, seed, &t, err, sizeof err)) return ug_cli_fail("%s", err);
    if (json) return print_json(tightness_json(&t, seed));
    printf("  tightness: the worst share of its allowance a legal kernel used (1 = at the limit; a bug\n"
           "  whose error is below 1/tightness of the allowance can pass), over %zu plan cases x %d legal\n"
           "  kernels (the correct one and the legal_* variants) at %s:\n",
           t.n_cases, t.n_kernels, seed >= 0 ? "the --seed given" : "the plan's own seed");
    printf("    %-12s %-44s %s\n", "output", ug_standard_name(t.primary), "certified");
    printf("    %-12s %-44s %s\n", "", "worst     case             kernel", "worst     case             kernel");
    for (int k = 0; k < t.n_out; k++) {
        char a[96], b[96];
        if (!t.out[k].numeric) {
            printf("    %-12s discrete compare: an exact rule against the oracle\n", t.out[k].name);
            continue;
        }
        tight_cell_text(&t.out[k].primary, a, sizeof a);
        tight_cell_text(&t.out[k].certified, b, sizeof b);
        printf("    %-12s %-44s %s\n", t.out[k].name, a, b);
    }
    printf("  false alarms (a legal kernel failing a case): %zu%s\n", t.false_alarms,
           t.not_judged ? "; some cases not judged (ERROR/SKIP)" : "");
    return t.false_alarms ? 1 : 0;
}

static int show(const char *name, int json, int mutants, int tightness, long long seed)
{
    int op = ug_op_find(name);
    if (op < 0) return ug_cli_fail("unknown op \"%s\" (see `ulpgym ops`)", name);
    if (tightness) return print_tightness(op, seed, json);
    if (json) return print_json(ug_op_contract_json(op, 1));
    const ug_op_def *d = ug_op_def_get(op);
    printf("%s  (%s)\n", ug_op_name(op), ug_group_name(ug_op_group(op)));
    if (!d) {
        printf("  status: planned — not implemented yet; see docs/OPERATORS.md for its math\n");
        return 0;
    }
    char digest[17];
    if (ug_op_contract_digest(op, digest)) snprintf(digest, sizeof digest, "?");
    printf("  %s\n  dtypes: %s\n  primary standard: %s\n", d->summary, d->dtypes, ug_standard_name(d->primary));
    printf("  contract: %s (a plugin names it in ulpgym_implements; docs/PLUGINS.md)\n", digest);
    print_decl(d);
    printf("  outputs:\n");
    for (int i = 0; i < d->n_outputs; i++) {
        const ug_output_rule *o = &d->outputs[i];
        printf("    %-8s %-14s pypto atol %g rtol %g budget %g\n", o->name, cmp_name(o->cmp), o->pypto_atol,
               o->pypto_rtol, o->pypto_budget);
        if (o->source) printf("    %-8s %-14s why: %s\n", "", "", o->source);
        if (o->has_reference && o->reference_group > 0) { /* a topk output's id compare (core/ops.h) */
            printf("    %-8s %-14s reference: groups of %ld ids, at most %ld golden ids missing a group (%s)\n", "", "",
                   o->reference_group, (long)((double)o->reference_group * o->reference_atol), o->reference_source);
            printf("    %-8s %-14s reference golden (the ids compared): %s\n", "", "", o->reference_golden);
        } else if (o->has_reference) {
            printf("    %-8s %-14s reference atol %g rtol %g budget %g (%s)\n", "", "", o->reference_atol,
                   o->reference_rtol, o->reference_budget, o->reference_source);
            if (o->reference_golden) /* within the rule of the exact value or of this golden passes */
                printf("    %-8s %-14s reference golden (an element passes within the rule of it or of the exact "
                       "value): %s\n",
                       "", "", o->reference_golden);
        } else if (o->reference_unjudged)
            printf("    %-8s %-14s reference: not judged: %s\n", "", "", o->reference_unjudged);
        else
            printf("    %-8s %-14s reference: none (no reference test judges this output)\n", "", "");
    }
    printf("  kernel variants (--kernel-variant NAME):\n");
    for (int i = 0; ug_op_variants(d->op)[i].name; i++)
        printf("    %-18s %s\n", ug_op_variants(d->op)[i].name, ug_op_variants(d->op)[i].desc);
    return mutants && print_mutant_scan(op, stdout) ? UG_EXIT_USAGE : 0;
}

static int ug_cmd_ops(int argc, char **argv)
{
    int json = 0, mutants = 0, tightness = 0;
    long long seed = -1;
    ug_cli_filter f = {0};
    const char *show_op = NULL;
    for (int i = 1; i < argc; i++) {
        int m = ug_cli_filter_opt(&f, argc, argv, &i);
        if (m < 0) return UG_EXIT_USAGE;
        if (m) continue;
        if (ug_cli_flag(argv, i, "--json"))
            json = 1;
        else if (ug_cli_flag(argv, i, "--mutants"))
            mutants = 1;
        else if (ug_cli_flag(argv, i, "--tightness"))
            tightness = 1;
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            char *end;
            seed = strtoll(argv[++i], &end, 10);
            if (*end || end == argv[i] || seed < 0)
                return ug_cli_fail("ops: --seed wants a plan seed >= 0, not \"%s\"", argv[i]);
        } else if (strcmp(argv[i], "show") == 0 && i + 1 < argc)
            show_op = argv[++i];
        else
            return ug_cli_fail("ops: unexpected argument \"%s\" (see ulpgym ops -h)", argv[i]);
    }
    if ((tightness || seed >= 0) && !show_op) return ug_cli_fail("ops: --tightness and --seed go with `ops show OP`");
    if (seed >= 0 && !tightness) return ug_cli_fail("ops: --seed goes with --tightness");
    if (show_op) return show(show_op, json, mutants, tightness, seed);
    cJSON *arr = json ? cJSON_CreateArray() : NULL;
    if (!json) printf("%-11s %-38s %-12s %-16s %-10s %s\n", "group", "op", "status", "dtypes", "primary", "variants");
    for (int op = 0; op < UG_OP_COUNT; op++) {
        if (f.groups && !(f.groups >> ug_op_group(op) & 1u)) continue;
        if (f.any_op && !f.ops[op]) continue;
        const ug_op_def *d = ug_op_def_get(op);
        if (json) {
            cJSON_AddItemToArray(arr, ug_op_contract_json(op, 0));
            continue;
        }
        printf("%-11s %-38s %-12s %-16s %-10s %d\n", ug_group_name(ug_op_group(op)), ug_op_name(op),
               d ? "implemented" : "planned", d ? d->dtypes : "-", d ? ug_standard_name(d->primary) : "-",
               d ? n_variants(d) : 0);
    }
    return json ? print_json(arr) : 0;
}

const ug_command ug_command_ops = {
    "ops", ug_cmd_ops, "list the 34 operators, or show one",
    "usage: ulpgym ops [--group G] [--json]\n"
    "       ulpgym ops show OP [--json] [--mutants]\n"
    "       ulpgym ops show OP --tightness [--seed S] [--json]\n"
    "  show: the math, dtypes, tensors and params (the plugin contract), output rules,\n"
    "  primary standard and kernel variants (mutants).\n"
    "  --mutants  also run the op's plan cases with every variant and report which catch\n"
    "             each mutant (share and example case IDs)\n"
    "  --tightness run the op's plan cases with the correct kernel and every legal variant\n"
    "             (legal_*) and print per output the worst share of its allowance a legal\n"
    "             kernel used, under the primary standard and under certified (1 = at the\n"
    "             limit; docs/STANDARDS.md \"Tightness\"); exit 1 if a legal kernel fails a case\n"
    "  --seed S   with --tightness: draw the plan's cases at plan seed S\n"};
