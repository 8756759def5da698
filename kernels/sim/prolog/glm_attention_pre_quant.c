/* glm_attention_pre_quant.c — sim kernel and planted-bug mutants of
 * glm_attention_pre_quant, the GLM-4.5 attention prolog (r = x + residual, input norm
 * with bias, static int8 quant, int8 GEMM + int32 bias, q/k head norms, partial RoPE).
 * The device computation of one token is kernels/sim/prolog/glm_pre_quant.c (shared with
 * glm_attention_fusion); this file binds the tensors, walks the tokens and stores every
 * exported stage: residual_res, n, n_i8, qk_mm, qk_norm, then q, k, v.
 *
 * Mutants, bug classes of a hand-written quantised prolog: round half away from zero in
 * the quantiser (differs from rint only on exact .5 ties: the ties cases), an int8 cast
 * that wraps instead of saturating (codes beyond +-127), the int32 bias added after the
 * dequant scale, GPT-J interleaved RoPE pairs instead of rotate-half, q/k head norms
 * without their bias, and fp32 squares without pre-scaling (overflow only for the
 * near-overflow inputs, |r| above ~1.8e19). */
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/prolog/glm_pre_quant.h"
#include "kernels/sim/simlib.h"

typedef struct {
    const ulpgym_tensor *x, *res, *cos, *sin, *q, *k, *v, *rr, *n, *n8, *qkmm, *qkn;
} pq_io;

static int pq_bind(const ulpgym_call *call, pq_io *io, ug_gpq_dev *m, char *err, size_t errlen)
{
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    m->H = (size_t)ug_p_int(&p, "hidden"), m->Nq = (size_t)ug_p_int(&p, "q_heads");
    m->Nk = (size_t)ug_p_int(&p, "kv_heads"), m->D = (size_t)ug_p_int(&p, "head_dim");
    m->R = (size_t)ug_p_int(&p, "rotary_dim"), m->eps = (float)ug_p_num(&p, "eps"); /* exact: an fp32 value */
    ug_params_free(&p);
    const ulpgym_tensor **slots[] = {&io->x, &io->res, &io->cos, &io->sin, &io->q,    &io->k,
                                     &io->v, &io->rr,  &io->n,   &io->n8,  &io->qkmm, &io->qkn};
    return ug_sim_bind(call, "x residual cos sin q k v residual_res n n_i8 qk_mm qk_norm", slots, err, errlen) ? -2
                                                                                                              : 0;
}

/* Stores token t's exported values (rounds: bf16 stores of values already bf16, exact;
 * residual_res from the fp32 r). */
static void pq_store(const pq_io *io, const ug_gpq_dev *m, const ug_gpq_tok *tk, size_t t, float *codes)
{
    size_t H = m->H, qs = m->Nq * m->D, kv = m->Nk * m->D, qk = qs + kv;
    for (size_t i = 0; i < H; i++) codes[i] = tk->code[i]; /* exact */
    ug_sim_store(io->rr, t * H, H, tk->r);                  /* rounds: bf16 */
    ug_sim_store(io->n, t * H, H, tk->n);
    ug_sim_store(io->n8, t * H, H, codes);
    ug_sim_store(io->qkmm, t * qk, qk, tk->mm);
    ug_sim_store(io->v, t * kv, kv, tk->mm + qk);
    ug_sim_store(io->qkn, t * qk, qk, tk->qkn);
    ug_sim_store(io->q, t * qs, qs, tk->qk);
    ug_sim_store(io->k, t * kv, kv, tk->qk + qs);
}

static int pq_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    pq_io io;
    ug_gpq_dev m = {0};
    ug_gpq_tok tk = {0};
    int rc = pq_bind(call, &io, &m, err, errlen);
    if (rc) return rc;
    size_t T = (size_t)io.x->shape[0], H = m.H, hr = m.R / 2;
    float *row = malloc((3 * H + 2 * hr + 1) * sizeof *row);
    if (!row || ug_gpq_dev_load(&m, call) || ug_gpq_tok_alloc(&m, &tk)) rc = -1;
    for (size_t t = 0; t < T && !rc; t++) {
        float *xr = row, *rs = xr + H, *codes = rs + H, *cs = codes + H, *sn = cs + hr;
        ug_sim_load(io.x, t * H, H, xr);
        ug_sim_load(io.res, t * H, H, rs);
        ug_sim_load(io.cos, t * hr, hr, cs);
        ug_sim_load(io.sin, t * hr, hr, sn);
        ug_gpq_dev_token(&m, xr, rs, cs, sn, &tk, (ug_gpq_bug)bug);
        pq_store(&io, &m, &tk, t, codes);
    }
    free(row);
    ug_gpq_tok_free(&tk);
    ug_gpq_dev_free(&m);
    return rc;
}

const ug_kernel_variant ug_variants_glm_attention_pre_quant[] = {
    {"sim", "fp32 add and norms (64-lane sums, pre-scaled above 2^32), fp32 n*s+o with rint and int8 saturation, "
            "exact int GEMM + int32 bias, fp32 dequant, bf16 between stages, fp32 RoPE_half",
     pq_kernel, 0, UG_GPQ_OK},
    {"mut_half_away", "the quantiser rounds half away from zero (roundf) instead of half to even: only exact .5 ties",
     pq_kernel, 0, UG_GPQ_HALF_AWAY},
    {"mut_wrap", "the int8 cast wraps (two's complement) instead of saturating at -128/127", pq_kernel, 0,
     UG_GPQ_WRAP},
    {"mut_bias_after_deq", "the int32 bias is added after the dequant scale: acc*deq + bias", pq_kernel, 0,
     UG_GPQ_BIAS_AFTER_DEQ},
    {"mut_rope_interleaved", "RoPE rotates the interleaved pairs (2i, 2i+1) instead of rotate-half (i, i+R/2)",
     pq_kernel, 0, UG_GPQ_ROPE_INTERLEAVE},
    {"mut_qk_norm_no_bias", "the q/k head norms leave out q_norm_bias / k_norm_bias", pq_kernel, 0,
     UG_GPQ_QK_NO_BIAS},
    {"mut_sumsq_overflow", "the norms square in fp32 without pre-scaling: inf for |r| above ~1.8e19 (near-overflow)",
     pq_kernel, 0, UG_GPQ_SUMSQ_OVERFLOW},
    {NULL, NULL, NULL},
};
