/* registry.c — the case's tensor bookkeeping: allocation in guarded buffers (core/guard.h)
 * and their checks, lookups, and the views a kernel call gets. */
#include "core/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static ug_tensor *add_tensor(ug_tensor *t, int *count, const char *role, const char *name, ug_dtype dt, int ndim,
                             const int64_t *shape, char *err, size_t errlen)
{
    if (*count >= UG_MAX_TENSORS || ndim > ULPGYM_MAX_DIMS || ndim < 0) {
        snprintf(err, errlen, "internal: too many tensors or dims for \"%s\"", name);
        return NULL;
    }
    ug_tensor *x = &t[*count];
    memset(x, 0, sizeof *x);
    snprintf(x->name, sizeof x->name, "%s", name);
    x->dtype = dt;
    x->ndim = ndim;
    x->numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || shape[i] > (int64_t)1 << 31) {
            snprintf(err, errlen, "tensor \"%s\": dimension %d is %lld", name, i, (long long)shape[i]);
            return NULL;
        }
        x->shape[i] = shape[i];
        /* Size is limited by the case memory budget (gen/case_memory.h), checked before any
         * allocation; this only keeps the element and byte counts from overflowing. */
        if (shape[i] && x->numel > SIZE_MAX / 64 / (size_t)shape[i]) {
            snprintf(err, errlen, "tensor \"%s\": its elements overflow a byte count", name);
            return NULL;
        }
        x->numel *= (size_t)shape[i];
    }
    char what[64];
    snprintf(what, sizeof what, "%s %s", role, name);
    if (ug_guard_alloc(&x->guard, x->numel * (size_t)ug_dtype_size(dt), what)) {
        snprintf(err, errlen, "out of memory for tensor \"%s\"", name);
        return NULL;
    }
    x->data = x->guard.data;
    (*count)++;
    return x;
}

ug_tensor *ug_case_alloc_input(ug_case *c, const char *name, ug_dtype dt, int ndim, const int64_t *shape, char *err,
                               size_t errlen)
{
    return add_tensor(c->in, &c->n_in, "input", name, dt, ndim, shape, err, errlen);
}

ug_tensor *ug_case_add_output(ug_case *c, const char *name, ug_dtype dt, int ndim, const int64_t *shape, char *err,
                              size_t errlen)
{
    return add_tensor(c->out, &c->n_out, "output", name, dt, ndim, shape, err, errlen);
}

/* The sentinel code of dt, little-endian, in its element width (registry.h). */
static uint32_t sentinel_code(ug_dtype dt)
{
    switch (dt) {
    case UG_DT_FP32: return 0x7FA5A5A5u; /* exponent all ones, quiet bit 22 clear: signalling NaN */
    case UG_DT_FP16: return 0x7DA5u;     /* quiet bit 9 clear */
    case UG_DT_BF16: return 0x7FA5u;     /* quiet bit 6 clear */
    default: return 0xA5A5A5A5u;         /* the byte 0xA5 in every byte */
    }
}

void ug_tensor_fill_sentinel(ug_tensor *t)
{
    size_t w = (size_t)ug_dtype_size(t->dtype);
    uint32_t code = sentinel_code(t->dtype);
    unsigned char *p = t->data;
    for (size_t i = 0; i < t->numel; i++)
        for (size_t b = 0; b < w; b++) p[i * w + b] = (unsigned char)(code >> (8 * b));
}

int ug_tensor_provided(const ug_tensor *t)
{
    if (!t->optional) return 1;
    size_t w = (size_t)ug_dtype_size(t->dtype);
    uint32_t code = sentinel_code(t->dtype);
    const unsigned char *p = t->data;
    for (size_t i = 0; i < t->numel * w; i++)
        if (p[i] != (unsigned char)(code >> (8 * (i % w)))) return 1;
    return 0;
}

size_t ug_tensor_unwritten(const ug_tensor *t)
{
    size_t w = (size_t)ug_dtype_size(t->dtype), n = 0;
    uint32_t code = sentinel_code(t->dtype);
    const unsigned char *p = t->data;
    int per_element = t->dtype == UG_DT_FP32 || t->dtype == UG_DT_FP16 || t->dtype == UG_DT_BF16;
    for (size_t i = 0; i < t->numel; i++) {
        uint32_t v = 0;
        for (size_t b = 0; b < w; b++) v |= (uint32_t)p[i * w + b] << (8 * b);
        n += v == (w == 4 ? code : code & ((1u << (8 * w)) - 1));
    }
    return per_element || n == t->numel ? n : 0;
}

void ug_case_seal_inputs(ug_case *c)
{
    for (int i = 0; i < c->n_in; i++) ug_guard_seal(&c->in[i].guard);
}

/* Appends "what role name" ("wrote after output y") to msg, after "; " when msg is not empty. */
static void add_damage(char *msg, size_t len, const char *what, const char *role, const char *name)
{
    size_t at = strlen(msg);
    if (at + 1 < len) snprintf(msg + at, len - at, "%s%s %s %s", at ? "; " : "", what, role, name);
}

int ug_case_guard_check(const ug_case *c, char *msg, size_t len)
{
    int n = 0;
    if (len) msg[0] = 0;
    for (int side = 0; side < 2; side++)
        for (int k = 0; k < (side ? c->n_out : c->n_in); k++) {
            const ug_tensor *t = side ? &c->out[k] : &c->in[k];
            const char *role = side ? "output" : "input";
            int damage = ug_guard_canaries(&t->guard), changed = ug_guard_changed(&t->guard);
            if (damage & UG_GUARD_BEFORE) add_damage(msg, len, "wrote before", role, t->name);
            if (damage & UG_GUARD_AFTER) add_damage(msg, len, "wrote after", role, t->name);
            if (changed) add_damage(msg, len, "modified", role, t->name);
            n += damage || changed;
        }
    return n;
}

ug_tensor *ug_case_input_mut(ug_case *c, const char *name)
{
    for (int i = 0; i < c->n_in; i++)
        if (strcmp(c->in[i].name, name) == 0) return &c->in[i];
    return NULL;
}

const ug_tensor *ug_case_input(const ug_case *c, const char *name) { return ug_case_input_mut((ug_case *)c, name); }

const ug_tensor *ug_case_output(const ug_case *c, const char *name)
{
    for (int i = 0; i < c->n_out; i++)
        if (strcmp(c->out[i].name, name) == 0) return &c->out[i];
    return NULL;
}

static int output_index(const ug_case *c, const char *name)
{
    for (int i = 0; i < c->n_out; i++)
        if (strcmp(c->out[i].name, name) == 0) return i;
    return -1;
}

/* The rule of the view judged as output k (k >= n_out), NULL if none. */
static const ug_output_rule *view_rule(const ug_case *c, int k)
{
    if (!c->def || k < c->n_out) return NULL;
    for (int i = 0, n = c->n_out; i < c->def->n_outputs; i++) {
        const ug_output_rule *r = &c->def->outputs[i];
        if (r->of && output_index(c, r->of) >= 0 && n++ == k) return r;
    }
    return NULL;
}

int ug_case_n_judged(const ug_case *c)
{
    int n = c->n_out;
    while (n < UG_MAX_TENSORS && view_rule(c, n)) n++;
    return n;
}

int ug_case_judged_tensor(const ug_case *c, int k)
{
    if (k >= 0 && k < c->n_out) return k;
    const ug_output_rule *r = view_rule(c, k);
    return r ? output_index(c, r->of) : -1;
}

const char *ug_case_judged_name(const ug_case *c, int k)
{
    if (k >= 0 && k < c->n_out) return c->out[k].name;
    const ug_output_rule *r = view_rule(c, k);
    return r ? r->name : NULL;
}

int ug_case_judged_find(const ug_case *c, const char *name)
{
    for (int k = 0, n = ug_case_n_judged(c); k < n; k++)
        if (strcmp(ug_case_judged_name(c, k), name) == 0) return k;
    return -1;
}

uint64_t ug_case_outputs_digest(const ug_case *c)
{
    uint64_t h = 14695981039346656037ull;
    for (int k = 0; k < c->n_out; k++) {
        const unsigned char *b = c->out[k].data;
        size_t n = b ? c->out[k].numel * ug_dtype_size(c->out[k].dtype) : 0;
        for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    }
    return h;
}

void ug_case_free(ug_case *c)
{
    if (!c) return;
    for (int i = 0; i < c->n_in; i++) {
        ug_guard_free(&c->in[i].guard);
        free(c->in[i].values);
    }
    for (int i = 0; i < c->n_out; i++) {
        if (c->out[i].data != c->out[i].guard.data) free(c->out[i].data); /* a snapshot (ug_guard_snapshot) */
        ug_guard_free(&c->out[i].guard);
    }
    free(c->params_json);
    ug_params_free(&c->params);
    ug_spec_free(&c->spec);
    memset(c, 0, sizeof *c);
}

static void make_view(const ug_tensor *t, ulpgym_tensor *v)
{
    v->name = t->name;
    v->dtype = (int32_t)t->dtype;
    v->ndim = t->ndim;
    v->shape = t->shape;
    v->strides = NULL;
    v->data = t->data;
}

void ug_case_make_call(const ug_case *c, ulpgym_tensor *ins, ulpgym_tensor *outs, ulpgym_call *call)
{
    for (int i = 0; i < c->n_in; i++) make_view(&c->in[i], &ins[i]);
    for (int i = 0; i < c->n_out; i++) make_view(&c->out[i], &outs[i]);
    call->abi_version = ULPGYM_ABI_VERSION;
    call->op = ug_op_name(c->spec.op);
    call->params_json = c->params_json;
    call->n_inputs = c->n_in;
    call->inputs = ins;
    call->n_outputs = c->n_out;
    call->outputs = outs;
}

static const ulpgym_tensor *find_view(const ulpgym_tensor *v, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0) return &v[i];
    return NULL;
}

const ulpgym_tensor *ug_call_input(const ulpgym_call *call, const char *name)
{
    return find_view(call->inputs, call->n_inputs, name);
}

const ulpgym_tensor *ug_call_output(const ulpgym_call *call, const char *name)
{
    return find_view(call->outputs, call->n_outputs, name);
}

size_t ug_abi_numel(const ulpgym_tensor *t)
{
    size_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= (size_t)t->shape[i];
    return n;
}
