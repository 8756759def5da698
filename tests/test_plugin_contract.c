/* test_plugin_contract.c — the contract `ulpgym ops show OP --json` prints is the truth
 * for a plugin: every implemented op is declared (params, tensors), and for EVERY case of
 * the default plan the params_json a kernel receives carries every declared param
 * (defaults written in), and the declared tensors evaluated from that text alone — names,
 * order, role, dtype for the case dtype, every dimension — are exactly the tensors the
 * case hands the kernel. Also: the formula language on known values, and bad params
 * (unknown, out of range, wrong type, not a choice, malformed list) refused with exit-2
 * style errors that name op and param. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "gen/case.h"
#include "core/standard.h"
#include "gen/plan.h"
#include "op_params.h"

/* The tensors of a built case against the declaration evaluated on its params_json. */
static void check_case(const ug_case *c)
{
    const ug_op_decl *d = &c->def->decl;
    char err[512];
    ug_params p;
    CHECK(ug_params_parse_text(d, c->params_json, &p, err, sizeof err) == 0, "case %s: %s", c->spec.id, err);
    cJSON *json = cJSON_Parse(c->params_json);
    for (int i = 0; d->params[i].name; i++)
        CHECK(cJSON_GetObjectItemCaseSensitive(json, d->params[i].name) != NULL,
              "case %s: params_json lacks declared param %s", c->spec.id, d->params[i].name);
    cJSON_Delete(json);
    int in = 0, out = 0;
    for (const ug_tensor_decl *t = d->tensors; t->name; t++) {
        ug_dtype dt;
        int ndim;
        int64_t shape[8];
        int rc = ug_decl_tensor_shape(&p, t, c->spec.dtype, &dt, &ndim, shape, err, sizeof err);
        CHECK(rc >= 0, "case %s: %s", c->spec.id, err);
        if (rc) continue;
        const ug_tensor *x = t->role == UG_TENSOR_OUTPUT ? (out < c->n_out ? &c->out[out++] : NULL)
                                                         : (in < c->n_in ? &c->in[in++] : NULL);
        CHECK(x && strcmp(x->name, t->name) == 0, "case %s: declared tensor %s is not the case's next tensor (%s)",
              c->spec.id, t->name, x ? x->name : "none");
        if (!x) continue;
        CHECK(x->dtype == dt && x->ndim == ndim, "case %s tensor %s: dtype/rank differ from the declaration",
              c->spec.id, t->name);
        for (int k = 0; k < ndim && k < x->ndim; k++)
            CHECK(x->shape[k] == shape[k], "case %s tensor %s dim %d: declared %lld, case has %lld", c->spec.id,
                  t->name, k, (long long)shape[k], (long long)x->shape[k]);
    }
    CHECK(in == c->n_in && out == c->n_out, "case %s: %d+%d tensors, the declaration names %d+%d", c->spec.id, c->n_in,
          c->n_out, in, out);
    ug_params_free(&p);
}

static void check_plan(void)
{
    ug_plan p;
    char err[1024];
    CHECK(ug_plan_load(ug_plan_default_path(), -1, &p, err, sizeof err) == 0, "plan: %s", err);
    size_t checked[UG_OP_COUNT] = {0};
    for (size_t i = 0; i < p.n; i++) {
        ug_spec s;
        ug_case c;
        if (ug_spec_parse(p.cases[i].spec, &s, err, sizeof err) || ug_case_build(&c, &s, err, sizeof err)) {
            CHECK(0, "plan case %s: %s", p.cases[i].id, err);
            ug_case_free(&c);
            continue;
        }
        if (c.def->decl.tensors) check_case(&c), checked[c.spec.op]++;
        ug_case_free(&c);
    }
    for (int op = 0; op < UG_OP_COUNT; op++) {
        const ug_op_def *d = ug_op_def_get(op);
        if (!d) continue;
        CHECK(d->decl.params && d->decl.tensors, "%s is implemented but not declared", ug_op_name(op));
        CHECK(d->decl.op && strcmp(d->decl.op, ug_op_name(op)) == 0, "%s: decl.op is %s", ug_op_name(op), d->decl.op);
        CHECK(checked[op] > 0, "%s: no plan case checked", ug_op_name(op));
    }
    ug_plan_free(&p);
}

/* A small declaration to test the formula language and the validation on. */
static const ug_param_decl t_params[] = {
    {"n", UG_PARAM_INT, "3", 1, 100, NULL, "count"},
    {"k", UG_PARAM_INT, "cdiv(n,2)+1", 1, 100, NULL, "dependent default"},
    {"s", UG_PARAM_F32, "1/sqrt(k)", -UG_DECL_INF, UG_DECL_INF, NULL, "fp32 attribute"},
    {"mode", UG_PARAM_ENUM, "a", 0, 0, "a|b", "a choice"},
    {"lens", UG_PARAM_INT_LIST, "5,7", 0, 1000, NULL, "lengths"},
    {"seq", UG_PARAM_PAIR_LIST, "2:3,4", 1, 1000, NULL, "pairs"},
    {NULL},
};
static const ug_derived_decl t_derived[] = {{"blocks", "sumcdiv(lens,4)", NULL}, {"tq", "sum(seq.q)", NULL}, {NULL}};
static const ug_tensor_decl t_tensors[] = {
    {"x", UG_TENSOR_INPUT, "case", "n, k", NULL},
    {"y", UG_TENSOR_OUTPUT, "bf16:fp32,fp16:fp16", "blocks, tq + len(seq)", NULL, "is(mode, b)"},
    {NULL},
};
static const ug_op_decl t_decl = {"t_op", t_params, t_derived, t_tensors, NULL};

static double eval(const ug_params *p, const char *f)
{
    char err[256];
    double v = NAN;
    CHECK(ug_decl_eval(p, f, &v, err, sizeof err) == 0, "%s: %s", f, err);
    return v;
}

static void check_formulas(void)
{
    char err[512];
    ug_params p;
    CHECK(ug_params_parse_text(&t_decl, "{}", &p, err, sizeof err) == 0, "%s", err);
    CHECK(strcmp(p.json,
                 "{\"k\":3,\"lens\":\"5,7\",\"mode\":\"a\",\"n\":3,\"s\":0.5773502691896258,\"seq\":\"2:3,4\"}") == 0,
          "defaults written in: %s", p.json);
    CHECK(ug_p_int(&p, "k") == 3 && ug_p_int(&p, "blocks") == 4 && ug_p_int(&p, "tq") == 6, "derived values");
    CHECK(ug_p_num(&p, "s") == ug_dtype_round(UG_DT_FP32, 1 / sqrt(3.0)), "fp32 attribute rounded once");
    CHECK(eval(&p, "2+3*4") == 14 && eval(&p, "(2+3)*4") == 20 && eval(&p, "-n+1") == -2, "precedence");
    CHECK(eval(&p, "fdiv(7,2)") == 3 && eval(&p, "cdiv(7,2)") == 4 && eval(&p, "min(n,2)") == 2, "integer functions");
    CHECK(eval(&p, "len(lens)") == 2 && eval(&p, "maxof(lens)") == 7 && eval(&p, "minof(lens)") == 5 &&
              eval(&p, "sum(seq.k)") == 7 && eval(&p, "minof(seq.q)") == 2,
          "list functions");
    CHECK(eval(&p, "n == 3") == 1 && eval(&p, "n < 3") == 0 && eval(&p, "n >= 3") == 1, "comparisons");
    CHECK(eval(&p, "is(mode, a)") == 1 && eval(&p, "is(mode, b)") == 0, "enum test");
    double v;
    CHECK(ug_decl_eval(&p, "nope + 1", &v, err, sizeof err) == -2 && strstr(err, "nope"), "unknown name: %s", err);
    CHECK(ug_decl_eval(&p, "n / 0", &v, err, sizeof err) == -2, "division by zero");
    CHECK(ug_decl_eval(&p, "n n", &v, err, sizeof err) == -2, "trailing text");
    CHECK(ug_decl_eval(&p, "sum(n)", &v, err, sizeof err) == -2, "a list function on a scalar");
    CHECK(ug_decl_eval(&p, "is(mode, c)", &v, err, sizeof err) == -2, "is() with a choice the param lacks");
    CHECK(ug_decl_eval(&p, "mode + 1", &v, err, sizeof err) == -2, "an enum outside is()");
    ug_dtype dt;
    int ndim;
    int64_t shape[8];
    CHECK(ug_decl_tensor_shape(&p, &t_tensors[1], UG_DT_BF16, &dt, &ndim, shape, err, sizeof err) == 1, "when: absent");
    ug_params_free(&p);
    CHECK(ug_params_parse_text(&t_decl, "{\"n\":5,\"mode\":\"b\"}", &p, err, sizeof err) == 0, "%s", err);
    CHECK(ug_decl_tensor_shape(&p, &t_tensors[1], UG_DT_BF16, &dt, &ndim, shape, err, sizeof err) == 0 &&
              dt == UG_DT_FP32 && ndim == 2 && shape[0] == 4 && shape[1] == 8,
          "a mapped dtype and formula dims");
    CHECK(ug_decl_tensor_shape(&p, &t_tensors[1], UG_DT_FP32, &dt, &ndim, shape, err, sizeof err) == -2,
          "no dtype for an unlisted case dtype");
    ug_params_free(&p);
}

static void expect_refused(const char *params, const char *needle)
{
    char err[512] = "";
    ug_params p;
    int rc = ug_params_parse_text(&t_decl, params, &p, err, sizeof err);
    CHECK(rc == -2 && strstr(err, "t_op") && strstr(err, needle), "%s: rc %d, message \"%s\" should name %s", params,
          rc, err, needle);
}

static void check_bad_params(void)
{
    expect_refused("{\"bogus\":1}", "bogus");
    expect_refused("{\"n\":0}", "\"n\"");
    expect_refused("{\"n\":101}", "allowed [1, 100]");
    expect_refused("{\"n\":2.5}", "integer");
    expect_refused("{\"n\":\"3\"}", "number");
    expect_refused("{\"mode\":\"c\"}", "a|b");
    expect_refused("{\"lens\":\"5,,7\"}", "lens");
    expect_refused("{\"lens\":\"5,1001\"}", "lens");
    expect_refused("{\"seq\":\"0:3\"}", "seq");
    expect_refused("[1]", "object");
    /* a real op through the case builder: the message reaches the user */
    ug_spec s;
    ug_case c;
    char err[512];
    const char *spec = "{\"v\":1,\"op\":\"attn_softmax\",\"dtype\":\"fp32\",\"params\":{\"rows\":2,\"cols\":3,"
                       "\"mask\":\"sideways\"},\"dist\":{\"x\":{\"kind\":\"uniform\",\"lo\":-1,\"hi\":1}},\"seed\":1,"
                       "\"plan\":\"t\"}";
    CHECK(ug_spec_parse(spec, &s, err, sizeof err) == 0, "%s", err);
    CHECK(ug_case_build(&c, &s, err, sizeof err) == -2 && strstr(err, "attn_softmax") && strstr(err, "mask"),
          "attn_softmax mask refused: %s", err);
    ug_case_free(&c);
}

/* The declaration loader (core/opdecl_json.c): a small declaration reads back field by
 * field, and each kind of malformed file is refused with a message naming what is wrong. */
#define T_DECL_HEAD "{\"op\":\"t_op\",\"summary\":\"s\",\"dtypes\":\"fp32\",\"semantics\":[\"One.\",\"Two.\"],"
#define T_DECL_PARAMS "\"params\":[{\"name\":\"n\",\"type\":\"int\",\"default\":\"4\",\"min\":1}],"
#define T_DECL_TENSORS                                                                                                 \
    "\"tensors\":[{\"name\":\"x\",\"role\":\"input\",\"dtype\":\"case\",\"shape\":\"n\"},"                             \
    "{\"name\":\"y\",\"role\":\"output\",\"dtype\":\"case\",\"shape\":\"n, 2\"}],"
#define T_DECL_OUTPUTS "\"outputs\":[{\"name\":\"y\",\"compare\":\"boundary_aware\",\"pypto_atol\":1}]}"

static void expect_load_refused(const char *json, const char *needle)
{
    ug_op_def d = {0};
    char err[512] = "";
    int rc = ug_op_def_load(&d, "t_op", json, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "t_op") && strstr(err, needle), "load refused: rc %d, \"%s\" should name %s", rc, err,
          needle);
}

static void check_declaration_loader(void)
{
    ug_op_def d = {0};
    char err[512] = "";
    CHECK(ug_op_def_load(&d, "t_op", T_DECL_HEAD T_DECL_PARAMS T_DECL_TENSORS T_DECL_OUTPUTS, err, sizeof err) == 0,
          "%s", err);
    CHECK(d.decl.op && strcmp(d.decl.op, "t_op") == 0 && strcmp(d.semantics, "One. Two.") == 0, "head fields");
    CHECK(d.decl.params[0].type == UG_PARAM_INT && d.decl.params[0].min == 1 && d.decl.params[0].max == UG_DECL_INF &&
              !d.decl.params[1].name,
          "params");
    CHECK(d.decl.tensors[1].role == UG_TENSOR_OUTPUT && strcmp(d.decl.tensors[1].shape, "n, 2") == 0 &&
              !d.decl.tensors[2].name,
          "tensors");
    CHECK(d.n_outputs == 1 && d.outputs[0].cmp == UG_CMP_BOUNDARY && d.outputs[0].pypto_atol == 1 &&
              d.outputs[0].pypto_budget == 0,
          "outputs");
    expect_load_refused("{\"op\":", "not valid JSON");
    expect_load_refused("{\"op\":\"other\"}", "other");
    expect_load_refused(T_DECL_HEAD "\"parms\":[]," T_DECL_TENSORS T_DECL_OUTPUTS, "parms");
    expect_load_refused(T_DECL_HEAD "\"params\":[{\"name\":\"n\",\"type\":\"integer\"}]," T_DECL_TENSORS T_DECL_OUTPUTS,
                        "integer");
    expect_load_refused(T_DECL_HEAD
                        "\"params\":[{\"name\":\"n\",\"type\":\"int\",\"max\":\"9\"}]," T_DECL_TENSORS T_DECL_OUTPUTS,
                        "params[0]");
    expect_load_refused(T_DECL_HEAD "\"params\":[{\"name\":\"m\",\"type\":\"enum\"}]," T_DECL_TENSORS T_DECL_OUTPUTS,
                        "choices");
    expect_load_refused(
        T_DECL_HEAD T_DECL_PARAMS
        "\"tensors\":[{\"name\":\"y\",\"role\":\"scratch\",\"dtype\":\"case\",\"shape\":\"n\"}]," T_DECL_OUTPUTS,
        "scratch");
    expect_load_refused(T_DECL_HEAD T_DECL_PARAMS T_DECL_TENSORS
                        "\"outputs\":[{\"name\":\"x\",\"compare\":\"numeric\"}]}",
                        "names no tensor of role output");
    expect_load_refused(
        T_DECL_HEAD T_DECL_PARAMS T_DECL_TENSORS "\"outputs\":[{\"name\":\"y\",\"compare\":\"close\"}]}", "close");
    expect_load_refused(T_DECL_HEAD "\"params_from\":\"no_such_op\"," T_DECL_TENSORS T_DECL_OUTPUTS, "no_such_op");
    /* views: "of" names an output tensor, and the view's own name is no tensor's */
    CHECK(ug_op_def_load(&d, "t_op",
                         T_DECL_HEAD T_DECL_PARAMS T_DECL_TENSORS
                         "\"outputs\":[{\"name\":\"y\",\"compare\":\"numeric\"},"
                         "{\"name\":\"y@own\",\"of\":\"y\",\"compare\":\"numeric\"}]}",
                         err, sizeof err) == 0 &&
              d.n_outputs == 2 && !d.outputs[0].of && d.outputs[1].of && strcmp(d.outputs[1].of, "y") == 0,
          "a view loads: %s", err);
    expect_load_refused(T_DECL_HEAD T_DECL_PARAMS T_DECL_TENSORS
                        "\"outputs\":[{\"name\":\"y@own\",\"of\":\"x\",\"compare\":\"numeric\"}]}",
                        "its \"of\"");
    expect_load_refused(T_DECL_HEAD T_DECL_PARAMS T_DECL_TENSORS
                        "\"outputs\":[{\"name\":\"x\",\"of\":\"y\",\"compare\":\"numeric\"}]}",
                        "must not take a tensor's name");
}

/* "primary" and "check_all": how ulpgym decides the op's outcome, declared as data (read
 * strictly; absent: pypto, a sample). */
static void check_primary_and_check_all(void)
{
    ug_op_def d = {0}, plain = {0};
    char err[512] = "";
    CHECK(ug_op_def_load(&d, "t_op",
                         T_DECL_HEAD
                         "\"primary\":\"certified\",\"check_all\":true," T_DECL_PARAMS T_DECL_TENSORS T_DECL_OUTPUTS,
                         err, sizeof err) == 0 &&
              d.primary == UG_STD_CERTIFIED && d.check_all == 1,
          "primary and check_all read: %s (primary %d, check_all %d)", err, d.primary, d.check_all);
    CHECK(ug_op_def_load(&plain, "t_op", T_DECL_HEAD T_DECL_PARAMS T_DECL_TENSORS T_DECL_OUTPUTS, err, sizeof err) ==
                  0 &&
              plain.primary == UG_STD_PYPTO && plain.check_all == 0,
          "absent: pypto, no check_all: %s", err);
    expect_load_refused(T_DECL_HEAD "\"primary\":\"certifed\"," T_DECL_PARAMS T_DECL_TENSORS T_DECL_OUTPUTS,
                        "\"primary\" is \"certifed\", not a numeric standard");
    expect_load_refused(T_DECL_HEAD "\"primary\":\"exact\"," T_DECL_PARAMS T_DECL_TENSORS T_DECL_OUTPUTS,
                        "not a numeric standard");
    expect_load_refused(T_DECL_HEAD "\"primary\":7," T_DECL_PARAMS T_DECL_TENSORS T_DECL_OUTPUTS,
                        "\"primary\" must be a string");
    expect_load_refused(T_DECL_HEAD "\"check_all\":1," T_DECL_PARAMS T_DECL_TENSORS T_DECL_OUTPUTS,
                        "\"check_all\" must be true or false");
    /* every op's definition is its own op (core/ops.c names it by ug_opdef_<name>) */
    for (int op = 0; op < UG_OP_COUNT; op++) {
        const ug_op_def *def = ug_op_def_get(op);
        CHECK(!def || (int)def->op == op, "%s: definition says op %d", ug_op_name(op), def ? (int)def->op : -1);
    }
}

/* "sim_variants": the sim kernel's variants as the declaration lists them, each given its
 * code (the generated ug_variant_code of its name) when the definitions load (core/ops.c). */
#define T_DECL_VARIANTS(rows) T_DECL_HEAD T_DECL_PARAMS T_DECL_TENSORS "\"sim_variants\":[" rows "]," T_DECL_OUTPUTS
static void check_sim_variants(void)
{
    static const char *const codes[] = {"sim", "mut_q", "mut_x"}, *const fewer[] = {"sim", "mut_q"};
    ug_op_def d = {0}, swapped = {0};
    char err[512] = "";
    CHECK(ug_op_def_load(&d, "t_op",
                         T_DECL_VARIANTS("{\"name\":\"sim\",\"desc\":\"right\"},"
                                         "{\"name\":\"mut_x\",\"desc\":\"wrong\",\"beyond_plan\":true}"),
                         err, sizeof err) == 0,
          "%s", err);
    CHECK(d.n_variants == 2 && strcmp(d.variants[1].desc, "wrong") == 0 && d.variants[1].beyond_plan &&
              !d.variants[0].beyond_plan && !d.variants[2].name,
          "sim_variants read back");
    CHECK(ug_op_join_variants(&d, codes, 3, err, sizeof err) == 0 && d.variants[0].bug == 0 && d.variants[1].bug == 2,
          "joined by name: %s", err);
    CHECK(ug_op_join_variants(&d, fewer, 2, err, sizeof err) == -1 && strstr(err, "\"mut_x\" has no variant code"),
          "a variant without a code: %s", err);
    CHECK(
        ug_op_def_load(&swapped, "t_op",
                       T_DECL_VARIANTS("{\"name\":\"mut_x\",\"desc\":\"wrong\"},{\"name\":\"sim\",\"desc\":\"right\"}"),
                       err, sizeof err) == 0 &&
            ug_op_join_variants(&swapped, codes, 3, err, sizeof err) == -1 &&
            strstr(err, "[0] \"mut_x\" is out of place"),
        "sim not first: %s", err);
    ug_op_def twice = {0};
    CHECK(ug_op_def_load(&twice, "t_op",
                         T_DECL_VARIANTS("{\"name\":\"sim\",\"desc\":\"right\"},{\"name\":\"mut_x\",\"desc\":\"a\"},"
                                         "{\"name\":\"mut_x\",\"desc\":\"b\"}"),
                         err, sizeof err) == 0 &&
              ug_op_join_variants(&twice, codes, 3, err, sizeof err) == -1 &&
              strstr(err, "[2] \"mut_x\" is listed twice"),
          "a variant listed twice: %s", err);
    /* the legal variants' codes are 1 .. UG_VAR_LEGAL_END - 1 (a sim kernel's ug_sim_legal) */
    for (int code = 0; code < UG_VAR_COUNT; code++)
        CHECK(ug_variant_legal(ug_variant_names[code]) == (code > UG_VAR_SIM && code < UG_VAR_LEGAL_END), "code %d: %s",
              code, ug_variant_names[code]);
    /* every op's variants carry the codes of their own names, "sim" (0) first */
    for (int op = 0; op < UG_OP_COUNT; op++) {
        const ug_kernel_variant *v = ug_op_variants(op);
        for (int i = 0; v && v[i].name; i++)
            CHECK(v[i].bug >= 0 && v[i].bug < UG_VAR_COUNT && strcmp(ug_variant_names[v[i].bug], v[i].name) == 0 &&
                      (i == 0) == (v[i].bug == UG_VAR_SIM),
                  "%s %s: code %d", ug_op_name(op), v[i].name, v[i].bug);
    }
    expect_load_refused(T_DECL_VARIANTS("{\"name\":\"sim\"}"), "desc");
    expect_load_refused(T_DECL_VARIANTS("{\"name\":\"sim\",\"desc\":\"d\",\"beyond_plan\":1}"), "beyond_plan");
    expect_load_refused(T_DECL_VARIANTS("{\"name\":\"sim\",\"desc\":\"d\",\"bug\":1}"), "bug");
}

int main(void)
{
    check_declaration_loader();
    check_sim_variants();
    check_primary_and_check_all();
    check_formulas();
    check_bad_params();
    check_plan();
    return check_done();
}
