/* apply_adamw.c — sim kernel and planted-bug mutants for apply_adamw, one AdamW step:
 *     m' = b1*m + (1-b1)*g,  v' = b2*v + (1-b2)*g^2
 *     w' = w - lr*( (m'/(1-b1^t)) / (sqrt(v'/(1-b2^t)) + eps) + wd*w )
 *
 * Device model (the factoring of torch's fused AdamW and CANN's ApplyAdamW): the host
 * computes the step scalars in double and hands them over as fp32 — decay = 1 - lr*wd,
 * step_size = lr/(1-b1^t), bc2_sqrt = sqrt(1-b2^t); each element then runs in fp32:
 * w *= decay; m' and v' with one fp32 multiply per product and fp32 adds;
 * denom = sqrt(v')/bc2_sqrt + eps; w' = w - step_size * (m'/denom); w' is rounded to
 * w's dtype, m' and v' stay fp32. A non-finite w therefore gives w*decay - ...: the
 * semantics the oracle states.
 * Legal variant legal_fma: the moment updates and the step as fused multiply-adds over the
 * other fp32 product (m' = fma(b1, m, (1-b1)*g), ..., w' = fma(-step_size, m'/denom, w*decay)). */
#include <math.h>
#include <stdlib.h>

#include "core/ops.h"
#include "core/registry.h"
#include "kernels/sim/simlib.h"
#include "op_params.h"

#define ADAMW_CHUNK 1024

typedef struct {
    float b1, b2, omb1, omb2, eps, wd, decay, step_size, bc2_sqrt;
} adamw_scalars;

/* Host-side scalars: computed in double, handed to the device as fp32. */
static void host_scalars(const ug_params *p, ug_variant_code bug, adamw_scalars *s)
{
    const ug_apply_adamw_params *params = UG_P(apply_adamw, p);
    float lr = (float)params->lr, b1 = (float)params->beta1; /* exact: fp32 values */
    float b2 = (float)params->beta2;
    double t = (double)params->step;
    s->b1 = b1;
    s->b2 = b2;
    s->omb1 = 1.0f - b1; /* rounds: fp32 (exact for b in [0.5, 1]) */
    s->omb2 = 1.0f - b2;
    s->eps = (float)params->eps;
    s->wd = (float)params->weight_decay;
    s->decay = bug == UG_VAR_MUT_L2_DECAY ? 1.0f : (float)(1.0 - (double)lr * s->wd); /* rounds: fp32 scalar */
    if (bug == UG_VAR_MUT_NO_BIAS_CORRECTION) { /* bug: moments used without bias correction */
        s->step_size = lr;
        s->bc2_sqrt = 1.0f;
    } else {
        s->step_size = (float)((double)lr / (1.0 - pow((double)b1, t))); /* rounds: fp32 scalar */
        s->bc2_sqrt = (float)sqrt(1.0 - pow((double)b2, t));             /* rounds: fp32 scalar */
    }
}

/* One element in fp32; w, m, v updated in place. */
static void adamw_elem(const adamw_scalars *s, ug_variant_code bug, float g, float *w, float *m, float *v)
{
    if (bug == UG_VAR_MUT_L2_DECAY) g = g + s->wd * *w; /* bug: L2 penalty folded into the gradient */
    float wd = *w * s->decay;                           /* rounds: fp32 */
    if (bug == UG_VAR_LEGAL_FMA) {
        *m = fmaf(s->b1, *m, s->omb1 * g);       /* rounds: fp32 mul, one fused multiply-add */
        *v = fmaf(s->b2, *v, s->omb2 * (g * g)); /* rounds: fp32 mul, mul, one fused multiply-add */
    } else {
        *m = s->b1 * *m + s->omb1 * g;       /* rounds: fp32 mul, mul, add */
        *v = s->b2 * *v + s->omb2 * (g * g); /* rounds: fp32 mul, mul, mul, add */
    }
    float denom;
    if (bug == UG_VAR_MUT_EPS_INSIDE_SQRT) /* bug: sqrt(v_hat + eps) instead of sqrt(v_hat) + eps */
        denom = sqrtf(*v / (s->bc2_sqrt * s->bc2_sqrt) + s->eps);
    else
        denom = sqrtf(*v) / s->bc2_sqrt + s->eps; /* rounds: fp32 sqrt, div, add */
    if (bug == UG_VAR_LEGAL_FMA)
        *w = fmaf(-s->step_size, *m / denom, wd); /* rounds: fp32 div, one fused multiply-add */
    else
        *w = wd - s->step_size * (*m / denom); /* rounds: fp32 div, mul, sub */
}

static int adamw_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    adamw_scalars s;
    host_scalars(&p, bug, &s);
    ug_params_free(&p);
    const ulpgym_tensor *w, *g, *m, *v, *wo, *mo, *vo, **slots[] = {&w, &g, &m, &v, &wo, &mo, &vo};
    if (ug_sim_bind(call, "w g m v w_out m_out v_out", slots, err, errlen)) return -2;
    size_t n = ug_abi_numel(w);
    float *buf = malloc(4 * ADAMW_CHUNK * sizeof *buf);
    if (!buf) return -1;
    float *bw = buf, *bg = bw + ADAMW_CHUNK, *bm = bg + ADAMW_CHUNK, *bv = bm + ADAMW_CHUNK;
    for (size_t off = 0; off < n; off += ADAMW_CHUNK) {
        size_t len = n - off < ADAMW_CHUNK ? n - off : ADAMW_CHUNK;
        ug_sim_load(w, off, len, bw); /* exact widening */
        ug_sim_load(g, off, len, bg);
        ug_sim_load(m, off, len, bm);
        ug_sim_load(v, off, len, bv);
        for (size_t i = 0; i < len; i++) adamw_elem(&s, bug, bg[i], &bw[i], &bm[i], &bv[i]);
        ug_sim_store(wo, off, len, bw); /* rounds: w's dtype */
        ug_sim_store(mo, off, len, bm);
        ug_sim_store(vo, off, len, bv);
    }
    free(buf);
    return 0;
}

const ug_kernel_fn ug_sim_apply_adamw = adamw_kernel;
