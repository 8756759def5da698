/* delta_rule_io.c — reading and checking the shared params and tensor contract of the two
 * gated-delta-rule kernels (q, k [T,Hqk,Dk]; v [T,Hv,Dv]; g, beta [T,Hv]; h0, ht
 * [B*Hv,Dv,Dk] with B the sequences of chunked_gated_delta_rule's seqlens, 1 otherwise;
 * o [T,Hv,Dv]). A plugin built from the kernels gets the same checks. */
#include "kernels/sim/delta_rule/delta_rule_io.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/sim/simlib.h"

static int same3(const ulpgym_tensor *t, size_t a, size_t b, size_t c)
{
    return (size_t)t->shape[0] == a && (size_t)t->shape[1] == b && (size_t)t->shape[2] == c;
}

int ug_delta_io_open(ug_delta_io *io, const ulpgym_call *call, char *err, size_t errlen)
{
    if (ug_sim_params_parse(call, &io->params, err, errlen)) return -2;
    const ug_params *P = &io->params;
    io->tokens = (size_t)ug_p_int(P, "tokens");
    io->hv = (size_t)ug_p_int(P, "hv");
    io->hqk = (size_t)ug_p_int(P, "hqk");
    io->dk = (size_t)ug_p_int(P, "dk");
    io->dv = (size_t)ug_p_int(P, "dv");
    io->scale = (float)ug_p_num(P, "scale"); /* exact: an fp32 value */
    io->qk_l2 = !strcmp(ug_p_str(P, "qk_norm"), "l2");
    io->qk_eps = (float)ug_p_num(P, "qk_eps"); /* exact: an fp32 value */
    io->seqs = 1, io->seqlens = NULL, io->fn_ulps = 0;
    if (ug_p_has(P, "seqlens")) { /* the default "0": one sequence of all tokens */
        size_t n = ug_p_list(P, "seqlens", &io->seqlens);
        if (n == 1 && io->seqlens[0] == 0)
            io->seqlens = NULL;
        else
            io->seqs = n;
    }
    const ulpgym_tensor **slots[] = {&io->q, &io->k, &io->v, &io->g, &io->beta, &io->h0, &io->o, &io->ht};
    if (ug_sim_bind(call, "q k v g beta h0 o ht", slots, err, errlen)) {
        ug_params_free(&io->params);
        return -2;
    }
    if (!same3(io->q, io->tokens, io->hqk, io->dk) || !same3(io->k, io->tokens, io->hqk, io->dk) ||
        !same3(io->v, io->tokens, io->hv, io->dv) || !same3(io->o, io->tokens, io->hv, io->dv) ||
        !same3(io->h0, io->seqs * io->hv, io->dv, io->dk) || !same3(io->ht, io->seqs * io->hv, io->dv, io->dk) ||
        (size_t)io->g->shape[0] != io->tokens || (size_t)io->g->shape[1] != io->hv ||
        (size_t)io->beta->shape[0] != io->tokens || (size_t)io->beta->shape[1] != io->hv) {
        snprintf(err, errlen,
                 "gated delta rule: tensor shapes disagree with the params (need q,k [T,Hqk,Dk], "
                 "v,o [T,Hv,Dv], g,beta [T,Hv], h0,ht [B*Hv,Dv,Dk])");
        ug_params_free(&io->params);
        return -2;
    }
    return 0;
}

void ug_delta_io_close(ug_delta_io *io) { ug_params_free(&io->params); }

size_t ug_delta_io_seq_len(const ug_delta_io *io, size_t b)
{
    return io->seqlens ? (size_t)io->seqlens[b] : io->tokens;
}

size_t ug_delta_io_qk_head(const ug_delta_io *io, size_t h) { return h / (io->hv / io->hqk); }

void ug_delta_io_load(const ulpgym_tensor *t, size_t off, size_t n, float *dst)
{
    ug_sim_load(t, off, n, dst);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(dst[i])) dst[i] = NAN;
}

void ug_delta_io_qk_norm(const ug_delta_io *io, float *x, size_t n)
{
    if (!io->qk_l2) return;
    float ss = 0.0f;
    for (size_t j = 0; j < n; j++) ss += x[j] * x[j];    /* rounds: fp32 mul and add */
    float r = 1.0f / sqrtf(ss + io->qk_eps);             /* rounds: fp32 add, sqrt, div (rsqrt) */
    r = ug_sim_fn_ulps(r, ss + io->qk_eps, io->fn_ulps); /* legal_fn_ulps: a device's rsqrt (0: r as is) */
    for (size_t j = 0; j < n; j++) x[j] *= r;            /* rounds: fp32 */
}
