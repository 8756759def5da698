/* delta_rule_io.c — reading and checking the shared tensor contract of the two
 * gated-delta-rule kernels (q, k [T,Hqk,Dk]; v [T,Hv,Dv]; g, beta [T,Hv]; h0, ht
 * [Hv,Dv,Dk]; o [T,Hv,Dv]). A plugin built from the kernels gets the same checks. */
#include "kernels/sim/delta_rule/delta_rule_io.h"

#include <math.h>
#include <stdio.h>

#include "kernels/sim/simlib.h"

static int same3(const ulpgym_tensor *t, size_t a, size_t b, size_t c)
{
    return (size_t)t->shape[0] == a && (size_t)t->shape[1] == b && (size_t)t->shape[2] == c;
}

int ug_delta_io_open(ug_delta_io *io, const ulpgym_call *call, char *err, size_t errlen)
{
    io->q = ug_sim_in(call, "q", 3, err, errlen);
    io->k = io->q ? ug_sim_in(call, "k", 3, err, errlen) : NULL;
    io->v = io->k ? ug_sim_in(call, "v", 3, err, errlen) : NULL;
    io->g = io->v ? ug_sim_in(call, "g", 2, err, errlen) : NULL;
    io->beta = io->g ? ug_sim_in(call, "beta", 2, err, errlen) : NULL;
    io->h0 = io->beta ? ug_sim_in(call, "h0", 3, err, errlen) : NULL;
    io->o = io->h0 ? ug_sim_out(call, "o", 3, err, errlen) : NULL;
    io->ht = io->o ? ug_sim_out(call, "ht", 3, err, errlen) : NULL;
    if (!io->ht) return -2;
    io->tokens = (size_t)io->q->shape[0];
    io->hqk = (size_t)io->q->shape[1];
    io->dk = (size_t)io->q->shape[2];
    io->hv = (size_t)io->v->shape[1];
    io->dv = (size_t)io->v->shape[2];
    if (!io->hqk || !io->hv || io->hv % io->hqk || !same3(io->k, io->tokens, io->hqk, io->dk) ||
        !same3(io->v, io->tokens, io->hv, io->dv) || !same3(io->o, io->tokens, io->hv, io->dv) ||
        !same3(io->h0, io->hv, io->dv, io->dk) || !same3(io->ht, io->hv, io->dv, io->dk) ||
        (size_t)io->g->shape[0] != io->tokens || (size_t)io->g->shape[1] != io->hv ||
        (size_t)io->beta->shape[0] != io->tokens || (size_t)io->beta->shape[1] != io->hv) {
        snprintf(err, errlen, "gated delta rule: tensor shapes disagree (need q,k [T,Hqk,Dk], v,o [T,Hv,Dv], "
                              "g,beta [T,Hv], h0,ht [Hv,Dv,Dk], Hv a multiple of Hqk)");
        return -2;
    }
    ug_sim_params p;
    if (ug_sim_params_open(&p, call, err, errlen)) return -2;
    io->scale = (float)ug_sim_num(&p, "scale", 1.0 / sqrt((double)(io->dk ? io->dk : 1)));
    ug_sim_params_close(&p);
    return 0;
}

size_t ug_delta_io_qk_head(const ug_delta_io *io, size_t h) { return h / (io->hv / io->hqk); }
