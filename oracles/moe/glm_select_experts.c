/* glm_select_experts.c — param checks and exact oracle of glm_select_experts, the GLM-4.5
 * MoE router after the gate (the reference: hicann/pypto-gym
 * tests/ops/glm_v4_5/test_glm_select_experts.py; the group rule of the model: sum of the
 * two largest biased scores per group, as the DeepSeek-V3 router):
 *
 *     s = sigmoid(logits), b = s + bias, groups kept by max(b) or top-2 sum(b),
 *     ids = top_k of b over the kept groups' experts, w = s[ids] (/ sum s[ids]) * rsf.
 *
 * Ids are a set judged under the declared tie rule, which the oracle applies itself: the
 * reference suite compares ids elementwise (assert_allclose), which fails a kernel that
 * returns the same experts in another order (its torch.topk(sorted=False) promises none)
 * or picks the other of two tied experts, while it would pass a kernel whose id differs
 * by one (atol 5e-3 on integers is equality, but a wrong set whose weights still match
 * is not caught by the weights either). Ours: the kernel's ids (any order) must be a
 * top-k the exact scores allow: every id distinct, in a group whose exact group score is
 * within 3d of the topk_group-th (with every group clearly above it kept), and within d
 * of the k-th exact score of its kept groups, where d = 2^-20 (1 + max finite |b|) bounds
 * a device's fp32 sigmoid (4 ulps) and bias add for both scores compared
 * (ug_topk_set_ok does the expert stage). The selection is decided in double before any
 * arithmetic (d is 10^9 times the double error), so every arithmetic sees one decision.
 *
 * Staged rule (docs/STANDARDS.md): the oracle reads the kernel's topk_ids. Where the set is
 * legal it emits the kernel's id at each position, so the exact compare passes, and each
 * weight is the exact weight of the id the kernel chose there (renormalised over the
 * kernel's set). Where it is not, it emits the exact top-k (a kernel id that is in it
 * keeps its position, the others take the remaining exact ids), so the ids compare fails
 * and the weights are judged against the exact choice. The declared compare is `exact`
 * on these emitted ids: the verdict module's topk_set compare is not wired into the
 * judge yet (docs/STANDARDS.md, "topk_set never judges"). The ideal backend's first pass
 * sees zero ids (illegal: duplicates) and writes the exact choice; its second pass
 * accepts it. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "oracles/oracle.h"
#include "oracles/verdict.h"

#define OP "glm_select_experts"
#define SE_MAX_E 1024
#define SE_MAX_G 64
#define SE_MAX_K 64

typedef struct {
    long T, E, k, ng, tg, per;
    int top2, renorm;
    double rsf; /* fp32 value */
} se_params;

static void read_params(const ug_params *P, se_params *p)
{
    p->T = ug_p_int(P, "tokens");
    p->E = ug_p_int(P, "experts");
    p->k = ug_p_int(P, "top_k");
    p->ng = ug_p_int(P, "num_expert_group");
    p->tg = ug_p_int(P, "topk_group");
    p->per = p->E / p->ng;
    p->top2 = ug_p_is(P, "group_score", "top2_sum");
    p->renorm = (int)ug_p_int(P, "renormalize");
    p->rsf = ug_p_num(P, "routed_scaling_factor");
}

static int check(const ug_params *P, char *err, size_t errlen)
{
    se_params p;
    read_params(P, &p);
    const char *why = NULL, *name = NULL;
    if (p.E % p.ng) name = "num_expert_group", why = "does not divide experts into equal groups";
    else if (p.tg > p.ng) name = "topk_group", why = "exceeds num_expert_group";
    else if (p.k > p.E) name = "top_k", why = "exceeds experts";
    else if (p.k > p.tg * p.per) name = "top_k", why = "exceeds the experts of topk_group groups";
    if (!name) return 0;
    snprintf(err, errlen, "%s: param %s %s (experts %ld, top_k %ld, num_expert_group %ld, topk_group %ld)", OP, name,
             why, p.E, p.k, p.ng, p.tg);
    return -2;
}

/* a ranks before b (index ia, ib): NaN first (as torch.topk), then larger, ties to the
 * lower index. */
static int before(double a, long ia, double b, long ib)
{
    if (isnan(a) || isnan(b)) return isnan(a) && (!isnan(b) || ia < ib);
    return a > b || (a == b && ia < ib);
}

/* The n best of v over the candidates cand[0..nc), in rank order, into out. */
static void top_n(const double *v, const long *cand, long nc, long n, long *out)
{
    unsigned char used[SE_MAX_E] = {0};
    for (long r = 0; r < n; r++) {
        long best = -1;
        for (long i = 0; i < nc; i++)
            if (!used[i] && (best < 0 || before(v[cand[i]], cand[i], v[cand[best]], cand[best]))) best = i;
        used[best] = 1;
        out[r] = cand[best];
    }
}

/* Token t's scores in double (the decision only): s, b, group scores G; returns d. */
static double token_scores(const se_params *p, const ug_tensor *x, const ug_tensor *bias, long t, double *s,
                           double *b, double *G)
{
    double amax = 0;
    for (long e = 0; e < p->E; e++) {
        s[e] = 1.0 / (1.0 + exp(-x->values[t * p->E + e]));
        b[e] = s[e] + bias->values[e];
        if (isfinite(b[e])) amax = fmax(amax, fabs(b[e]));
    }
    long all[SE_MAX_E], two[2];
    for (long e = 0; e < p->E; e++) all[e] = e;
    for (long g = 0; g < p->ng; g++) {
        long n = p->top2 && p->per > 1 ? 2 : 1;
        top_n(b, all + g * p->per, p->per, n, two);
        G[g] = n == 2 ? b[two[0]] + b[two[1]] : b[two[0]];
    }
    return ldexp(1.0 + amax, -20);
}

/* The exact choice: topk_group groups by G, then top_k of b over their experts. */
static void exact_choice(const se_params *p, const double *b, const double *G, const unsigned char *keep_in,
                         long *ids)
{
    long groups[SE_MAX_G] = {0}, kept[SE_MAX_G] = {0}, cand[SE_MAX_E], nc = 0;
    unsigned char keep[SE_MAX_G] = {0};
    if (keep_in) memcpy(keep, keep_in, (size_t)p->ng);
    else {
        for (long g = 0; g < p->ng; g++) groups[g] = g;
        top_n(G, groups, p->ng, p->tg, kept);
        for (long i = 0; i < p->tg; i++) keep[kept[i]] = 1;
    }
    for (long e = 0; e < p->E; e++)
        if (keep[e / p->per]) cand[nc++] = e;
    top_n(b, cand, nc, p->k, ids);
}

static int has_nan(const double *v, long n)
{
    for (long i = 0; i < n; i++)
        if (isnan(v[i])) return 1;
    return 0;
}

static int same_set(const long *a, const int *kid, long k)
{
    for (long i = 0; i < k; i++) {
        int found = 0;
        for (long j = 0; j < k; j++) found |= a[i] == kid[j];
        if (!found) return 0;
    }
    return 1;
}

/* 1 when the kernel's ids kid are a legal top-k under the tie rule (file header). */
static int legal_ids(const se_params *p, const double *b, const double *G, double d, const int *kid, const long *ex)
{
    for (long j = 0; j < p->k; j++) {
        if (kid[j] < 0 || kid[j] >= p->E) return 0;
        for (long i = 0; i < j; i++)
            if (kid[i] == kid[j]) return 0;
    }
    if (has_nan(b, p->E) || has_nan(G, p->ng)) return same_set(ex, kid, p->k);
    long groups[SE_MAX_G] = {0}, kept[SE_MAX_G] = {0}, ns = 0, os[SE_MAX_K];
    for (long g = 0; g < p->ng; g++) groups[g] = g;
    top_n(G, groups, p->ng, p->tg, kept);
    double gk = G[kept[p->tg - 1]], dg = 3 * d;
    unsigned char in[SE_MAX_G] = {0};
    for (long g = 0; g < p->ng; g++) /* groups clearly above the deciding one are kept by every kernel */
        if (G[g] > gk + dg) in[g] = 1, ns++;
    for (long j = 0; j < p->k; j++) {
        long g = kid[j] / p->per;
        if (in[g]) continue;
        if (G[g] < gk - dg) return 0; /* a group no correct kernel keeps */
        in[g] = 1, ns++;
    }
    if (ns > p->tg) return 0;
    while (ns < p->tg) { /* the other kept groups: the borderline ones with the weakest experts */
        long pick = -1;
        double pick_max = INFINITY;
        for (long g = 0; g < p->ng; g++) {
            if (in[g] || G[g] < gk - dg) continue;
            double m = -INFINITY;
            for (long e = g * p->per; e < (g + 1) * p->per; e++) m = fmax(m, b[e]);
            if (pick < 0 || m < pick_max) pick = g, pick_max = m;
        }
        in[pick] = 1, ns++;
    }
    exact_choice(p, b, G, in, os);
    double sc[SE_MAX_E];
    int oi[SE_MAX_K];
    for (long e = 0; e < p->E; e++) sc[e] = b[e];
    for (long j = 0; j < p->k; j++) oi[j] = (int)os[j];
    return ug_topk_set_ok(kid, oi, (int)p->k, sc, (int)p->E, d);
}

/* The ids the oracle emits for token t (file header, staged rule). */
static void token_ids(const se_params *p, const ug_case *c, long t, long *emit)
{
    double s[SE_MAX_E], b[SE_MAX_E], G[SE_MAX_G];
    double d = token_scores(p, ug_case_input(c, "router_logits"), ug_case_input(c, "e_score_correction_bias"), t, s,
                            b, G);
    long ex[SE_MAX_K];
    int kid[SE_MAX_K];
    exact_choice(p, b, G, NULL, ex);
    const ug_tensor *ko = ug_case_output(c, "topk_ids");
    for (long j = 0; j < p->k; j++) kid[j] = (int)ug_tload(ko, (size_t)(t * p->k + j));
    if (legal_ids(p, b, G, d, kid, ex)) {
        for (long j = 0; j < p->k; j++) emit[j] = kid[j];
        return;
    }
    unsigned char taken[SE_MAX_K] = {0};
    for (long j = 0; j < p->k; j++) { /* a kernel id in the exact set keeps its place */
        emit[j] = -1;
        for (long i = 0; i < p->k; i++)
            if (!taken[i] && ex[i] == kid[j]) emit[j] = ex[i], taken[i] = 1, i = p->k;
    }
    for (long j = 0, i = 0; j < p->k; j++) {
        if (emit[j] >= 0) continue;
        while (taken[i]) i++;
        emit[j] = ex[i], taken[i] = 1;
    }
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    se_params p;
    read_params(&c->params, &p);
    const ug_tensor *x = ug_case_input(c, "router_logits");
    long emit[SE_MAX_K];
    ug_num w[SE_MAX_K];
    for (int o = 0; o < 2; o++) { /* 0 topk_weights, 1 topk_ids */
        long have = -1;
        size_t mark = ug_ar_mark(ar);
        for (size_t pos = 0; pos < sel->n[o]; pos++) {
            long t = (long)(sel->idx[o][pos] / (size_t)p.k), j = (long)(sel->idx[o][pos] % (size_t)p.k);
            if (t != have) {
                ug_ar_release(ar, mark);
                token_ids(&p, c, t, emit);
                if (o == 0) {
                    for (long i = 0; i < p.k; i++) w[i] = ug_sigmoid(ar, ug_c(ar, x->values[t * p.E + emit[i]]));
                    ug_num total = ug_sum(ar, w, (size_t)p.k), rsf = ug_c(ar, p.rsf);
                    for (long i = 0; i < p.k; i++)
                        w[i] = ug_mul(ar, p.renorm ? ug_div(ar, w[i], total) : w[i], rsf);
                }
                have = t;
            }
            ug_ar_emit(ar, o, pos, o == 0 ? w[j] : ug_c(ar, (double)emit[j]));
        }
        ug_ar_release(ar, mark);
    }
    return 0;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    ug_geom_last_dim(&c->out[out], 1, (size_t)c->out[out].shape[1], g);
}

/* Scratch for the case memory estimate: the sim kernel's fp32 copies of the logits and
 * the bias, and its per-token rows. */
static double scratch(const ug_params *P)
{
    double T = (double)ug_p_int(P, "tokens"), E = (double)ug_p_int(P, "experts");
    return 4 * (T * E + 4 * E);
}

const ug_op_def ug_opdef_glm_select_experts = {.op = UG_OP_GLM_SELECT_EXPERTS,
                                              .decl.check = check,
                                              .oracle = oracle,
                                              .geometry = geometry,
                                              .scratch = scratch};
