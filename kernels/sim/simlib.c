/* simlib.c — see simlib.h. */
#include "kernels/sim/simlib.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/dtype.h"
#include "core/ops.h"

int ug_sim_params_parse(const ulpgym_call *call, ug_params *p, char *err, size_t errlen)
{
    const ug_op_decl *d = ug_op_decl_find(call->op);
    if (!d) {
        snprintf(err, errlen, "op \"%s\" has no declaration", call->op ? call->op : "(null)");
        return -2;
    }
    return ug_params_parse_text(d, call->params_json, p, err, errlen);
}

static const ulpgym_tensor *find(const ulpgym_tensor *v, int n, const char *name, int ndim, char *err, size_t errlen)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0) {
            if (ndim >= 0 && v[i].ndim != ndim) {
                snprintf(err, errlen, "tensor %s has %d dims, expected %d", name, v[i].ndim, ndim);
                return NULL;
            }
            return &v[i];
        }
    snprintf(err, errlen, "missing tensor %s", name);
    return NULL;
}

static int any_named(const ulpgym_tensor *v, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0) return 1;
    return 0;
}

const ulpgym_tensor *ug_sim_in(const ulpgym_call *call, const char *name, int ndim, char *err, size_t errlen)
{
    return find(call->inputs, call->n_inputs, name, ndim, err, errlen);
}

const ulpgym_tensor *ug_sim_out(const ulpgym_call *call, const char *name, int ndim, char *err, size_t errlen)
{
    return find(call->outputs, call->n_outputs, name, ndim, err, errlen);
}

/* The declared rank of t: the number of comma-separated dims of its shape. */
static int declared_rank(const ug_tensor_decl *t)
{
    int n = t->shape[0] != 0;
    for (const char *c = t->shape; *c; c++) n += *c == ',';
    return n;
}

/* The first declaration of tensor name[0..len) after `from` (NULL: from the start). A name
 * declared twice is a pair of alternatives selected by their "when" (e.g. position-built
 * or given cos/sin tables of different ranks). */
static const ug_tensor_decl *declared_tensor(const ug_op_decl *d, const char *name, size_t len,
                                             const ug_tensor_decl *from)
{
    for (const ug_tensor_decl *t = from ? from + 1 : d->tensors; t->name; t++)
        if (strlen(t->name) == len && strncmp(t->name, name, len) == 0) return t;
    return NULL;
}

/* v (tensor name[0..len)) has the rank of one of its declarations, else err says which. */
static int rank_declared(const ug_op_decl *d, const ulpgym_tensor *v, const char *name, size_t len, char *err,
                         size_t errlen)
{
    char want[64] = "";
    size_t n = 0;
    for (const ug_tensor_decl *t = declared_tensor(d, name, len, NULL); t; t = declared_tensor(d, name, len, t)) {
        if (declared_rank(t) == v->ndim) return 1;
        n += (size_t)snprintf(want + n, n < sizeof want ? sizeof want - n : 0, "%s%d", n ? " or " : "",
                              declared_rank(t));
    }
    snprintf(err, errlen, "tensor %s has %d dims, expected %s", v->name, v->ndim, want);
    return 0;
}

int ug_sim_bind(const ulpgym_call *call, const char *names, const ulpgym_tensor **slots[], char *err, size_t errlen)
{
    const ug_op_decl *d = ug_op_decl_find(call->op);
    if (!d) return snprintf(err, errlen, "op \"%s\" has no declaration", call->op ? call->op : "(null)"), -2;
    for (int i = 0; *(names += strspn(names, " ")); i++) {
        size_t len = strcspn(names, " ");
        int optional = names[len - 1] == '?';
        size_t nlen = len - (size_t)optional;
        const ug_tensor_decl *t = declared_tensor(d, names, nlen, NULL);
        if (!t) return snprintf(err, errlen, "%s declares no tensor %.*s", d->op, (int)len, names), -2;
        const ulpgym_tensor *v = t->role == UG_TENSOR_OUTPUT ? call->outputs : call->inputs;
        int n = t->role == UG_TENSOR_OUTPUT ? call->n_outputs : call->n_inputs;
        *slots[i] = NULL;
        if (!optional || any_named(v, n, t->name)) {
            *slots[i] = find(v, n, t->name, -1, err, errlen);
            if (!*slots[i] || !rank_declared(d, *slots[i], names, nlen, err, errlen)) return -2;
        }
        names += len;
    }
    return 0;
}

/* bf16 bits widened to fp32 (exact: the top half of the fp32 pattern); NaN: -1, left to
 * the generic decode (which quiets a signalling NaN). */
static int widen_bf16(uint16_t h, float *f)
{
    uint32_t u = (uint32_t)h << 16;
    if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu)) return -1;
    memcpy(f, &u, sizeof u);
    return 0;
}

/* fp16 bits widened to fp32 (exact: subnormals are man * 2^-24, normals re-biased); NaN:
 * -1, left to the generic decode. */
static int widen_fp16(uint16_t h, float *f)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1Fu, man = h & 0x3FFu, u;
    if (e == 0x1F && man) return -1;
    if (e == 0) {
        float v = (float)man * 0x1p-24f; /* exact: man < 2^10, times a power of two */
        *f = sign ? -v : v;
        return 0;
    }
    u = sign | (e == 0x1F ? 0x7F800000u : (e + 112u) << 23 | man << 13);
    memcpy(f, &u, sizeof u);
    return 0;
}

void ug_sim_load(const ulpgym_tensor *t, size_t off, size_t n, float *dst)
{
    int bf = t->dtype == ULPGYM_BF16, hf = t->dtype == ULPGYM_FP16;
    const uint16_t *h = (const uint16_t *)t->data + off;
    for (size_t i = 0; i < n; i++) {
        uint16_t b;
        if (bf || hf) memcpy(&b, h + i, sizeof b);
        if ((bf && !widen_bf16(b, &dst[i])) || (hf && !widen_fp16(b, &dst[i]))) continue; /* exact */
        dst[i] = (float)ug_dtype_load((ug_dtype)t->dtype, t->data, off + i);              /* exact */
    }
}

void ug_sim_store(const ulpgym_tensor *t, size_t off, size_t n, const float *src)
{
    uint16_t *h = (uint16_t *)t->data + off;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &src[i], sizeof u);
        if (t->dtype == ULPGYM_BF16 && ((u & 0x7F800000u) != 0x7F800000u || !(u & 0x007FFFFFu))) {
            uint16_t b = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16); /* rounds: RNE to bf16, inf on overflow */
            memcpy(h + i, &b, sizeof b);
            continue;
        }
        ug_dtype_store((ug_dtype)t->dtype, t->data, off + i, src[i]); /* rounds: RNE */
    }
}

float ug_sim_round_bf16(float x) { return (float)ug_dtype_round(UG_DT_BF16, x); }
float ug_sim_round_fp16(float x) { return (float)ug_dtype_round(UG_DT_FP16, x); }
float ug_sim_round_to(int dt, float x) { return (float)ug_dtype_round((ug_dtype)dt, x); }

float ug_sim_trunc_to(int dt, float x)
{
    const ug_dtype_info *in = ug_dtype_get_info((ug_dtype)dt);
    if (!in->is_float || !isfinite(x)) return ug_sim_round_to(dt, x);
    double u = ug_dtype_ulp((ug_dtype)dt, x), t = trunc(x / u) * u; /* exact: x/u is x scaled by a power of two */
    return (float)(fabs(t) > in->max_finite ? copysign(in->max_finite, x) : t);
}

float ug_sim_sumsq_lanes(const float *v, size_t n)
{
    enum { LANES = 64 };
    float lane[LANES] = {0};
    for (size_t i = 0; i < n; i++) lane[i % LANES] += v[i] * v[i]; /* rounds: fp32 */
    for (size_t w = LANES / 2; w > 0; w /= 2)
        for (size_t l = 0; l < w; l++) lane[l] += lane[l + w]; /* rounds: fp32 */
    return lane[0];
}

float ug_sim_sumsq_seq_fma(const float *v, size_t n)
{
    float acc = 0.0f;
    for (size_t i = 0; i < n; i++) acc = fmaf(v[i], v[i], acc); /* rounds: fp32, once per element */
    return acc;
}

float ug_sim_fn_ulps(float r, float arg, int ulps)
{
    if (ulps <= 0 || !(fabsf(r) >= FLT_MIN) || !isfinite(r)) return r; /* 0, subnormal, inf, NaN: as they are */
    uint32_t h;
    memcpy(&h, &arg, sizeof h);
    h ^= h >> 16; /* a 32-bit integer hash (lowbias32): neighbouring arguments go either way */
    h *= 0x7feb352dU;
    h ^= h >> 15;
    h *= 0x846ca68bU;
    h ^= h >> 16;
    float to = h & 1u ? copysignf(INFINITY, r) : copysignf(0.0f, r); /* away from zero, or toward it */
    for (int i = 0; i < ulps; i++) {
        float n = nextafterf(r, to); /* exact: the neighbouring fp32 value */
        if (!(fabsf(n) >= FLT_MIN) || isinf(n)) break;
        r = n;
    }
    return r;
}

void ug_sim_reverse_rows(float *rows, size_t n, size_t width)
{
    for (size_t a = 0, z = n ? n - 1 : 0; a < z; a++, z--)
        for (size_t d = 0; d < width; d++) {
            float t = rows[a * width + d];
            rows[a * width + d] = rows[z * width + d];
            rows[z * width + d] = t;
        }
}
