/* test_case_memory.c — cases are refused by memory, not by element counts (gen/case_memory.h).
 *
 * Production shapes (DeepSeek-V3.2 MLA prolog decode, large paged caches, AdamW over a
 * 7168 x 24576 weight, RoPE over 4 x 128 x 8192 x 64, a chunked gated delta rule over a
 * million tokens, ...) pass validation and fit the default budget of a 24 GiB machine
 * (half of what it shows, 11.5 GiB); they are checked through the estimate, never allocated. A shape
 * over a small budget is refused by ug_case_build before any tensor exists, with a message
 * that gives the bytes needed and the budget. The --case-memory value parser takes K, M, G
 * and T suffixes. Exits 77 when the operators are not linked in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/ops.h"
#include "core/registry.h"
#include "gen/case.h"
#include "gen/case_memory.h"
#include "gen/plan.h"

#define GIB ((uint64_t)1 << 30)

/* "n,n,...,n" (count times) into buf. */
static const char *repeat(long n, int count, char *buf, size_t len)
{
    size_t at = 0;
    for (int i = 0; i < count && at < len; i++) at += (size_t)snprintf(buf + at, len - at, "%s%ld", i ? "," : "", n);
    return buf;
}

/* Parses params for op at dtype and estimates; 0 ok (m filled), else -1 with a message. */
static int estimate(const char *op, const char *dtype, const char *params, ug_case_memory *m, char *err, size_t errlen)
{
    const ug_op_def *d = ug_op_def_get(ug_op_find(op));
    if (!d) return snprintf(err, errlen, "op %s not linked in", op), -1;
    ug_params p;
    if (ug_params_parse_text(&d->decl, params, &p, err, errlen)) return -1;
    int rc = ug_case_memory_estimate(d, &p, ug_dtype_parse(dtype), m, err, errlen);
    if (!rc) rc = ug_case_memory_check(d, &p, ug_dtype_parse(dtype), err, errlen);
    ug_params_free(&p);
    return rc ? -1 : 0;
}

/* Every listed production shape validates and fits the default budget of a 24 GiB machine. */
static void production_shapes_accepted(void)
{
    char l1[2048], l2[2048], l3[2048];
    char fa[4096], pa16[4096], pa64[4096];
    snprintf(fa, sizeof fa, "{\"seqlens\":\"%s\",\"heads\":8,\"head_dim\":128}", repeat(4096, 8, l1, sizeof l1));
    snprintf(pa16, sizeof pa16,
             "{\"context_lens\":\"%s\",\"heads_kv\":4,\"group\":8,\"head_dim\":128,\"block_size\":128}",
             repeat(16384, 16, l2, sizeof l2));
    snprintf(pa64, sizeof pa64,
             "{\"context_lens\":\"%s\",\"heads_kv\":4,\"group\":8,\"head_dim\":128,\"block_size\":128}",
             repeat(8192, 64, l3, sizeof l3));
    const struct {
        const char *op, *dtype, *params;
    } fixed[] = {
        /* DeepSeek-V3.2 MLA prolog decode: 128 heads (q_lora*heads*(dn+dr) = 37.7M), 32,768-block cache */
        {"mla_prolog", "bf16",
         "{\"tokens\":128,\"h\":7168,\"q_lora\":1536,\"heads\":128,\"kv_lora\":512,\"d_nope\":128,\"d_rope\":64,"
         "\"block_size\":16,\"blocks\":32768}"},
        {"matmul_allreduce_add_rmsnorm", "bf16", "{\"tokens\":8,\"k\":6144,\"n\":5120,\"world\":4}"},
        {"matmul_allreduce_add_rmsnorm", "bf16", "{\"tokens\":8,\"k\":7168,\"n\":5120,\"world\":4}"},
        {"incre_flash_attention_mla", "bf16", "{\"batch\":32,\"ctx\":4096,\"heads\":128}"},
        {"incre_flash_attention_mla", "bf16", "{\"batch\":16,\"ctx\":8192,\"heads\":128}"},
        {"incre_flash_attention_mla", "bf16", "{\"batch\":64,\"ctx\":8192,\"heads\":128}"},
        {"lightning_indexer_prolog_quant_fp8", "bf16",
         "{\"tokens\":8192,\"hidden\":2560,\"heads\":64,\"d\":128,\"blocks\":64,\"block_size\":128}"},
        {"lightning_indexer_prolog_quant_mxfp8", "bf16",
         "{\"tokens\":8192,\"hidden\":2560,\"heads\":64,\"d\":128,\"blocks\":64,\"block_size\":128}"},
        {"lightning_indexer_prolog_quant_fp8", "bf16",
         "{\"tokens\":64,\"hidden\":7168,\"heads\":64,\"d\":128,\"blocks\":4096,\"block_size\":128}"},
        {"lightning_indexer_prolog_quant_mxfp8", "bf16",
         "{\"tokens\":192,\"hidden\":7168,\"heads\":64,\"d\":128,\"blocks\":12288,\"block_size\":128}"},
        {"sparse_flash_attention", "bf16", "{\"tokens\":4096,\"heads\":128,\"kv_len\":131072,\"topk\":2048}"},
        {"moe_grouped_gemm", "bf16", "{\"tokens\":4096,\"experts\":8,\"h\":3072,\"inter\":1536}"},
        {"apply_adamw", "bf16", "{\"rows\":7168,\"cols\":16384}"},
        {"apply_adamw", "fp32", "{\"rows\":7168,\"cols\":24576}"},
        {"interleave_rope", "bf16", "{\"b\":2,\"n\":128,\"s\":8192,\"d\":64}"},
        {"interleave_rope", "fp16", "{\"b\":4,\"n\":128,\"s\":8192,\"d\":64}"},
        {"rms_norm_rope", "bf16", "{\"t\":32768,\"hq\":128,\"hk\":128,\"d\":64}"},
        {"chunked_gated_delta_rule", "fp32", "{\"tokens\":262144,\"hv\":4,\"hqk\":2,\"dk\":128,\"dv\":128}"},
        {"chunked_gated_delta_rule", "fp32", "{\"tokens\":1048576,\"hv\":1,\"hqk\":1,\"dk\":128,\"dv\":128}"},
        {"flash_attention_mha", "bf16", fa},
        {"page_attention", "bf16", pa16},
        {"page_attention", "bf16", pa64},
    };
    ug_case_memory_set_budget(23 * GIB / 2); /* the default on a 24 GiB machine (23 GiB of it visible) */
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        ug_case_memory m;
        char err[1024] = "";
        int rc = estimate(fixed[i].op, fixed[i].dtype, fixed[i].params, &m, err, sizeof err);
        CHECK(rc == 0, "%s %s refused: %s", fixed[i].op, fixed[i].params, err);
        if (rc) continue;
        CHECK(m.total == m.tensors + m.values + m.scratch || m.total == m.tensors + m.values + m.scratch + 1,
              "%s: total %llu is the sum of its parts", fixed[i].op, (unsigned long long)m.total);
        CHECK(m.tensors > ((uint64_t)1 << 20), "%s: a production shape holds more than 1 MiB of tensors (%llu)",
              fixed[i].op, (unsigned long long)m.tensors);
        printf("  %-38s %6.2f GiB  %.90s\n", fixed[i].op, (double)m.total / (double)GIB, fixed[i].params);
    }
    ug_case_memory_set_budget(0);
}

/* The estimate counts what the declaration says: attn_softmax rows x cols of bf16 x, fp32
 * mask and bf16 y, each in its guarded buffer, fp64 copies of both inputs and the fixed base. */
static void estimate_terms(void)
{
    ug_case_memory m;
    char err[512];
    ug_case_memory_set_budget(GIB);
    CHECK(estimate("attn_softmax", "bf16", "{\"rows\":1000,\"cols\":100}", &m, err, sizeof err) == 0, "%s", err);
    CHECK(m.tensors == 100000 * (2 + 4 + 2) + 3 * ug_guard_overhead(), "tensors %llu", (unsigned long long)m.tensors);
    CHECK(m.values == 100000 * 2 * 8, "values %llu", (unsigned long long)m.values);
    CHECK(m.scratch >= UG_CASE_MEMORY_BASE && m.scratch < UG_CASE_MEMORY_BASE + 100000,
          "scratch %llu: the base and one row", (unsigned long long)m.scratch);
    CHECK(m.full_check == (uint64_t)100000 * UG_CASE_MEMORY_FULL_CHECK, "full check %llu",
          (unsigned long long)m.full_check);
    ug_case_memory_set_budget(0);
}

/* Over the budget: ug_case_build refuses before allocating (the spec's dist is empty, so a
 * build that went on would fail on the first input instead), naming op, bytes and budget. */
static void refused_over_budget(void)
{
    const char *spec = "{\"v\":1,\"op\":\"apply_adamw\",\"dtype\":\"fp32\",\"params\":{\"rows\":7168,\"cols\":24576},"
                       "\"dist\":{},\"seed\":1,\"plan\":\"t/1\"}";
    ug_case_memory_set_budget((uint64_t)512 << 20);
    ug_case_memory m;
    char err[1024] = "";
    CHECK(estimate("apply_adamw", "fp32", "{\"rows\":7168,\"cols\":24576}", &m, err, sizeof err) != 0, "not refused");
    ug_spec s;
    ug_case c;
    CHECK(ug_spec_parse(spec, &s, err, sizeof err) == 0, "spec: %s", err);
    int rc = ug_case_build(&c, &s, err, sizeof err);
    char bytes[64];
    snprintf(bytes, sizeof bytes, "%llu bytes", (unsigned long long)m.total);
    CHECK(rc == -2, "build rc %d: %s", rc, err);
    CHECK(strstr(err, "apply_adamw") && strstr(err, bytes) && strstr(err, "536870912 bytes") &&
              strstr(err, "--case-memory") && strstr(err, UG_CASE_MEMORY_ENV),
          "message names op, bytes needed (%s), budget and how to raise it: %s", bytes, err);
    CHECK(c.n_in == 0 && c.n_out == 0, "nothing allocated (%d inputs, %d outputs)", c.n_in, c.n_out);
    ug_case_free(&c);
    /* a small case under the same budget builds */
    const char *small =
        "{\"v\":1,\"op\":\"apply_adamw\",\"dtype\":\"fp32\",\"params\":{\"rows\":8,\"cols\":16},"
        "\"dist\":{\"w\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"g\":{\"kind\":\"normal\",\"mean\":0,"
        "\"std\":1},\"m\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"v\":{\"kind\":\"normal\",\"mean\":0,"
        "\"std\":1}},\"seed\":1,\"plan\":\"t/1\"}";
    CHECK(ug_spec_parse(small, &s, err, sizeof err) == 0, "spec: %s", err);
    rc = ug_case_build(&c, &s, err, sizeof err);
    CHECK(rc == 0, "small case refused: %s", err);
    ug_case_free(&c);
    ug_case_memory_set_budget(0);
}

static void parse_sizes(void)
{
    static const struct {
        const char *s;
        uint64_t want;
    } ok[] = {{"512M", (uint64_t)512 << 20},
              {"512m", (uint64_t)512 << 20},
              {"24G", 24 * GIB},
              {"24GiB", 24 * GIB},
              {"24GB", 24 * GIB},
              {"1048576", 1048576},
              {"4K", 4096},
              {"2T", (uint64_t)2 << 40},
              {"100b", 100}};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        uint64_t b = 0;
        CHECK(ug_case_memory_parse(ok[i].s, &b) == 0 && b == ok[i].want, "\"%s\" -> %llu", ok[i].s,
              (unsigned long long)b);
    }
    static const char *const bad[] = {"",         "M", "-1", "0", "1.5G", "12Q", "5 G", "3Gi", "99999999999999999999",
                                      "9000000T", NULL};
    for (int i = 0; bad[i]; i++) {
        uint64_t b;
        CHECK(ug_case_memory_parse(bad[i], &b) == -1, "\"%s\" accepted", bad[i]);
    }
    CHECK(ug_case_memory_parse(NULL, &(uint64_t){0}) == -1, "NULL accepted");
}

/* The budget: set > $ULPGYM_CASE_MEMORY > half the physical memory per worker. */
static void budget_sources(void)
{
    char err[256];
    unsetenv(UG_CASE_MEMORY_ENV);
    ug_case_memory_set_budget(0);
    ug_case_memory_set_workers(1);
    uint64_t one = ug_case_memory_default();
    CHECK(one > 0 && ug_case_memory_budget() == one, "default %llu", (unsigned long long)one);
    ug_case_memory_set_workers(4);
    CHECK(ug_case_memory_budget() == one / 4, "4 workers share it: %llu", (unsigned long long)ug_case_memory_budget());
    ug_case_memory_set_workers(1);
    setenv(UG_CASE_MEMORY_ENV, "3G", 1);
    CHECK(ug_case_memory_budget() == 3 * GIB, "env: %llu", (unsigned long long)ug_case_memory_budget());
    CHECK(ug_case_memory_configure("2G", err, sizeof err) == 0 && ug_case_memory_budget() == 2 * GIB,
          "option over env: %llu", (unsigned long long)ug_case_memory_budget());
    ug_case_memory_set_budget(0);
    setenv(UG_CASE_MEMORY_ENV, "lots", 1);
    CHECK(ug_case_memory_configure(NULL, err, sizeof err) == -2 && strstr(err, UG_CASE_MEMORY_ENV) &&
              strstr(err, "lots"),
          "junk env named: %s", err);
    CHECK(ug_case_memory_configure("12Q", err, sizeof err) == -2 && strstr(err, "--case-memory") && strstr(err, "12Q"),
          "junk option named: %s", err);
    unsetenv(UG_CASE_MEMORY_ENV);
    CHECK(ug_case_memory_configure(NULL, err, sizeof err) == 0 && ug_case_memory_budget() == one, "back to default");
}

/* No verdict of the default plan depends on the machine: every plan case, judged on every
 * element (the re-check near a tolerance), fits 1 GiB, the default budget of one worker on
 * a machine with 2 GiB per core. */
static void plan_fits_small_budgets(void)
{
    ug_plan p;
    char err[1024];
    if (ug_plan_load(ug_plan_default_path(), -1, &p, err, sizeof err)) {
        CHECK(0, "default plan: %s", err);
        return;
    }
    uint64_t worst = 0;
    const char *worst_id = "";
    for (size_t i = 0; i < p.n; i++) {
        ug_spec s;
        ug_params prm;
        ug_case_memory m;
        if (ug_spec_parse(p.cases[i].spec, &s, err, sizeof err)) {
            CHECK(0, "plan case %s: %s", p.cases[i].id, err);
            continue;
        }
        const ug_op_def *d = ug_op_def_get(s.op);
        int rc = d ? ug_params_parse(&d->decl, s.params, &prm, err, sizeof err) : -1;
        if (!rc) {
            rc = ug_case_memory_estimate(d, &prm, s.dtype, &m, err, sizeof err);
            ug_params_free(&prm);
        }
        CHECK(rc == 0, "plan case %s: %s", p.cases[i].id, err);
        if (!rc && m.total + m.full_check > worst) worst = m.total + m.full_check, worst_id = p.cases[i].id;
        ug_spec_free(&s);
    }
    CHECK(p.n > 1000 && worst <= GIB, "largest plan case %s needs %llu bytes with its full check", worst_id,
          (unsigned long long)worst);
    printf("  %zu plan cases; the largest, %s, needs %.1f MiB judged on every element\n", p.n, worst_id,
           (double)worst / (1 << 20));
    ug_plan_free(&p);
}

int main(void)
{
    if (!ug_op_def_get(ug_op_find("apply_adamw")) || !ug_op_def_get(ug_op_find("mla_prolog"))) {
        puts("operators not linked in: skipped");
        return 77;
    }
    unsetenv(UG_CASE_MEMORY_ENV);
    production_shapes_accepted();
    estimate_terms();
    refused_over_budget();
    parse_sizes();
    budget_sources();
    plan_fits_small_budgets();
    return check_done();
}
