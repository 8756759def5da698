/* bench_kernels.c — `ulpgym bench kernels`: runs the sim kernels (no oracle) on plan
 * cases or one spec file, times each run and prints its GFLOP/s where the op's flop
 * count is known, and with --digest a FNV-1a-64 digest of the raw bytes of every output
 * tensor. The digests are the bit-for-bit guard of kernel speed work
 * (tests/test_kernel_digests.sh compares them with tests/fixtures/kernel_digests.txt):
 * a faster kernel must print the same digest on every case. With --backend/--baseline (or
 * --scenes) the command is the kernel-timing table instead: cli/bench_table.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/bench_kernels.h"
#include "cli/bench_table.h"
#include "cli/cli.h"
#include "core/canon.h"
#include "gen/case.h"
#include "gen/plan.h"
#include "gen/plan_share.h"
#include "kernels/backend.h"

typedef struct {
    const char *variant; /* NULL: "sim"; "all": every variant of the op */
    int digest;
    int timing;
} bk_opts;

/* Seconds on clock id: CLOCK_MONOTONIC (wall) or CLOCK_PROCESS_CPUTIME_ID (this process's
 * CPU time, what one core gives a kernel however loaded the machine is). */
static double bk_now(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const int32_t *bk_i32(const ug_case *c, const char *name)
{
    const ug_tensor *t = ug_case_input(c, name);
    return t && t->dtype == UG_DT_INT32 ? t->data : NULL;
}

/* Query/key pairs of flash attention (causal: bottom-right aligned prefixes). */
static double bk_fa_pairs(const ug_case *c)
{
    const int32_t *cq = bk_i32(c, "cu_seqlens_q"), *ck = bk_i32(c, "cu_seqlens_k");
    const ug_tensor *t = ug_case_input(c, "cu_seqlens_q");
    if (!cq || !ck) return 0;
    long causal = ug_p_int(&c->params, "causal");
    double pairs = 0;
    for (size_t b = 0; b + 1 < t->numel; b++) {
        long lq = cq[b + 1] - cq[b], lk = ck[b + 1] - ck[b];
        for (long i = 0; i < lq; i++) {
            long n = causal ? i + 1 + lk - lq : lk;
            pairs += n < 0 ? 0 : n > lk ? lk : n;
        }
    }
    return pairs;
}

/* Query/key pairs of the decode kernels over the per-sequence lengths in tensor lens
 * (seq_lens, or page_attention's context_lens): MTP row i sees len - sq + 1 + i keys, at
 * most window of them (window 0: all). */
static double bk_decode_pairs(const ug_case *c, const char *lens, long window)
{
    const int32_t *sl = bk_i32(c, lens);
    const ug_tensor *t = ug_case_input(c, lens);
    if (!sl) return 0;
    long sq = ug_p_int(&c->params, "q_per_step");
    double pairs = 0;
    for (size_t b = 0; b < t->numel; b++)
        for (long i = 0; i < sq; i++) {
            long n = sl[b] - sq + 1 + i;
            pairs += window > 0 && n > window ? window : n;
        }
    return pairs;
}

/* Live (index != -1) query/key pairs of sparse attention among the read slots, per head. */
static double bk_sparse_pairs(const ug_case *c)
{
    const int32_t *idx = bk_i32(c, "indices"), *aq = bk_i32(c, "actual_q_len"), *ak = bk_i32(c, "actual_kv_len");
    const ug_tensor *t = ug_case_input(c, "indices");
    long topk = idx ? (long)t->shape[1] : 0, b = 0;
    double pairs = 0;
    for (long tok = 0; idx && tok < (long)t->shape[0]; tok++) {
        long e = topk; /* several sequences: only the first min(w, topk) slots are read */
        for (; aq && ak && tok >= aq[b]; b++) {}
        if (aq && ak) {
            long q0 = b ? aq[b - 1] : 0, w = (ak[b] - (b ? ak[b - 1] : 0)) - (aq[b] - q0) + 1 + (tok - q0);
            e = w < topk ? w : topk;
        }
        for (long i = 0; i < e; i++) pairs += idx[tok * topk + i] != -1;
    }
    return pairs;
}

/* Decode-family flops: 2*(dk + dv) per pair and head. */
static double bk_decode_flops(const ug_case *c, const char *op)
{
    if (!strcmp(op, "incre_flash_attention_mla")) {
        const ug_tensor *qn = ug_case_input(c, "q_nope"), *qr = ug_case_input(c, "q_rope");
        double dk = (double)(qn->shape[2] + qr->shape[2]), dv = (double)qn->shape[2];
        return 2 * (dk + dv) * (double)qn->shape[1] * bk_decode_pairs(c, "seq_lens", 0);
    }
    const ug_tensor *q = ug_case_input(c, "q");
    if (!strcmp(op, "sparse_flash_attention")) {
        double dv = (double)ug_case_output(c, "o")->shape[2];
        return 2 * ((double)q->shape[2] + dv) * (double)q->shape[1] * bk_sparse_pairs(c);
    }
    if (!strcmp(op, "gqa_decode_attn"))
        return 4 * (double)q->shape[2] * (double)q->shape[1] *
               bk_decode_pairs(c, "seq_lens", ug_p_int(&c->params, "window"));
    return 0;
}

/* Floating-point operations of the kernel (multiplies and adds of its matmuls: 2 per
 * product), 0 where the op has no formula here. Forward attention: q.k and p.v, 4*D per
 * visible pair and head (decode kernels: 2*(dk + dv)); the backward: q.k, dO.v, dV, dK,
 * dQ, 10*D. */
static double bk_flops(const ug_case *c)
{
    const char *op = ug_op_name(c->spec.op);
    double dec = bk_decode_flops(c, op);
    if (dec > 0) return dec;
    const ug_tensor *q = ug_case_input(c, "q");
    if (!q || q->ndim != 3) return 0;
    double hd = (double)q->shape[1] * (double)q->shape[2];
    if (!strcmp(op, "flash_attention_mha")) return 4 * hd * bk_fa_pairs(c);
    if (!strcmp(op, "flash_attention_mha_grad")) return 10 * hd * bk_fa_pairs(c);
    if (!strcmp(op, "page_attention")) return 4 * hd * bk_decode_pairs(c, "context_lens", 0);
    return 0;
}

/* Runs one variant on c (outputs zeroed first) and prints its line; 0, or -1 on a kernel error. */
static int bk_run_variant(ug_case *c, const char *id, const char *variant, const bk_opts *o)
{
    char spec[128], err[1024] = "";
    snprintf(spec, sizeof spec, "sim:%s", variant);
    ug_backend b;
    if (ug_backend_open(&b, spec, err, sizeof err)) return ug_cli_fail("bench kernels: %s", err), -1;
    for (int k = 0; k < c->n_out; k++) memset(c->out[k].data, 0, c->out[k].numel * ug_dtype_size(c->out[k].dtype));
    double t0 = bk_now(CLOCK_MONOTONIC), c0 = bk_now(CLOCK_PROCESS_CPUTIME_ID);
    int rc = ug_backend_run(&b, c, err, sizeof err);
    double t = bk_now(CLOCK_MONOTONIC) - t0, cpu = bk_now(CLOCK_PROCESS_CPUTIME_ID) - c0;
    ug_backend_close(&b);
    printf("%s %s %s", id, ug_op_name(c->spec.op), variant);
    if (o->digest) printf(" %016llx", rc ? 0ull : (unsigned long long)ug_case_outputs_digest(c));
    if (rc) printf(" status=%d", rc);
    if (o->timing) {
        double f = bk_flops(c);
        printf(" %.3f ms cpu %.3f ms", t * 1e3, cpu * 1e3);
        if (f > 0) printf(" %.3f GFLOP %.2f GFLOP/s", f / 1e9, f / 1e9 / (cpu > 0 ? cpu : 1e-9));
    }
    printf("\n");
    fflush(stdout);
    return rc < 0 ? -1 : 0;
}

/* Builds the case of one spec text and runs the selected variants on it. */
static int bk_case(const char *text, const char *id, const bk_opts *o)
{
    ug_spec s;
    ug_case c;
    char err[1024];
    if (ug_spec_parse(text, &s, err, sizeof err) || ug_case_build(&c, &s, err, sizeof err))
        return ug_cli_fail("bench kernels: case %s: %s", id, err), -1;
    int rc = 0;
    if (o->variant && !strcmp(o->variant, "all")) {
        for (const ug_kernel_variant *v = ug_op_variants(c.spec.op); v && v->name; v++)
            rc |= bk_run_variant(&c, id, v->name, o);
    } else
        rc = bk_run_variant(&c, id, o->variant ? o->variant : "sim", o);
    ug_case_free(&c);
    return rc;
}

static int bk_spec_file(const char *path, const bk_opts *o)
{
    char err[1024];
    char *text = ug_text_file_read(path, err, sizeof err);
    if (!text) return ug_cli_fail("bench kernels: %s", err);
    int rc = bk_case(text, "spec", o);
    free(text);
    return rc ? 1 : 0;
}

int ug_bench_kernels(int argc, char **argv)
{
    const char *plan_path = NULL, *limit = NULL, *spec_file = NULL, *mem = NULL, *share = NULL;
    ug_cli_input_cache_open(); /* its cases' inputs, drawn once (most of the table's wall time) */
    if (ug_bench_kernel_table_wanted(argc, argv)) return ug_bench_kernel_table(argc, argv);
    bk_opts o = {NULL, 0, 1};
    ug_cli_filter f = {0};
    const ug_cli_valopt value_opts[] = {{"--plan", &plan_path},
                                        {"--limit", &limit},
                                        {"--kernel-variant", &o.variant},
                                        {"--spec-file", &spec_file},
                                        {"--case-memory", &mem},
                                        {"--share", &share},
                                        {NULL, NULL}};
    for (int i = 2; i < argc; i++) {
        int m = ug_cli_filter_opt(&f, argc, argv, &i);
        if (m < 0) return UG_EXIT_USAGE;
        if (m) continue;
        if (ug_cli_flag(argv, i, "--digest"))
            o.digest = 1;
        else if (ug_cli_flag(argv, i, "--no-time"))
            o.timing = 0;
        else if ((m = ug_cli_opts(argc, argv, &i, value_opts))) {
            if (m < 0) return UG_EXIT_USAGE;
        } else
            return ug_cli_fail("bench kernels: unexpected argument \"%s\"", argv[i]);
    }
    if (ug_cli_case_memory(mem)) return UG_EXIT_USAGE;
    if (spec_file) return bk_spec_file(spec_file, &o);
    long per_op = limit ? ug_cli_long(limit) : 0;
    if (limit && per_op <= 0) return ug_cli_fail("bench kernels: --limit must be a positive number (cases per op)");
    long share_n = share ? ug_cli_long(share) : 0;
    if (share && share_n <= 0) return ug_cli_fail("bench kernels: --share must be a positive number (cases per op)");
    ug_plan p;
    char err[1024];
    if (ug_plan_load_only(plan_path ? plan_path : ug_plan_default_path(), -1, f.any_op ? f.ops : NULL, f.groups, &p,
                          err, sizeof err))
        return ug_cli_fail("%s", err);
    if (share_n && ug_plan_stratify(&p, (size_t)share_n, err, sizeof err)) {
        ug_plan_free(&p);
        return ug_cli_fail("bench kernels: %s", err);
    }
    long n[UG_OP_COUNT] = {0};
    int rc = 0;
    for (size_t i = 0; i < p.n; i++) {
        if (per_op && n[p.cases[i].op]++ >= per_op) continue;
        rc |= bk_case(p.cases[i].spec, p.cases[i].id, &o);
    }
    ug_plan_free(&p);
    return rc ? 1 : 0;
}
