/* case.c — a case from its spec (see case.h). The order of the declared tensors is part
 * of the case identity: input i's values are drawn from Philox stream i, so inputs are
 * allocated in declaration order. A case whose memory estimate exceeds the budget
 * (case_memory.h) is refused before its first tensor is allocated. */
#include "gen/case.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/case_memory.h"
#include "gen/dist.h"
#include "gen/inject.h"
#include "gen/input_cache.h"

static int fill_input(ug_case *c, ug_tensor *t, int index, char *err, size_t errlen)
{
    const cJSON *dist = cJSON_GetObjectItemCaseSensitive(c->spec.dist, t->name);
    if (!dist) {
        snprintf(err, errlen, "case spec: \"dist\" has no distribution for input \"%s\"", t->name);
        return -2;
    }
    /* drawn, or read back where an earlier process drew the same tensor (gen/input_cache.h) */
    return ug_input_cache_fill(dist, c->spec.seed, (uint32_t)index, t->dtype, t->data, t->numel, err, errlen) ? -2 : 0;
}

/* Allocates every declared tensor present in this case, drawing the random inputs. */
static int alloc_declared(ug_case *c, char *err, size_t errlen)
{
    for (const ug_tensor_decl *td = c->def->decl.tensors; td->name; td++) {
        ug_dtype dt;
        int ndim;
        int64_t shape[8];
        int rc = ug_decl_tensor_shape(&c->params, td, c->spec.dtype, &dt, &ndim, shape, err, errlen);
        if (rc == 1) continue;
        if (rc) return rc;
        if (td->role == UG_TENSOR_OUTPUT) {
            ug_tensor *t = ug_case_add_output(c, td->name, dt, ndim, shape, err, errlen);
            if (!t) return -2;
            t->optional = td->optional;
            /* every output starts as the sentinel, never zeros: an optional one left so was not provided,
             * a required element left so was never written (run/exec.c says which) */
            ug_tensor_fill_sentinel(t);
            continue;
        }
        int index = c->n_in;
        ug_tensor *t = ug_case_alloc_input(c, td->name, dt, ndim, shape, err, errlen);
        if (!t) return -2;
        if (td->role == UG_TENSOR_INPUT && fill_input(c, t, index, err, errlen)) return -2;
    }
    return 0;
}

/* Whether dt is in a comma-separated dtype list. */
static int dtype_listed(const char *list, ug_dtype dt)
{
    const char *name = ug_dtype_name(dt);
    size_t n = strlen(name);
    for (const char *c = list; c && *c;) {
        size_t len = strcspn(c, ",");
        if (len == n && strncmp(c, name, n) == 0) return 1;
        c += len + (c[len] == ',');
    }
    return 0;
}

static int decode_inputs(ug_case *c, char *err, size_t errlen)
{
    for (int i = 0; i < c->n_in; i++) { /* decode once: oracles read inputs many times */
        ug_tensor *t = &c->in[i];
        t->values = malloc((t->numel ? t->numel : 1) * sizeof *t->values);
        if (!t->values) {
            snprintf(err, errlen, "out of memory decoding input \"%s\"", t->name);
            return -1;
        }
        ug_dtype_decode_block(t->dtype, t->data, t->numel, t->values);
    }
    return 0;
}

int ug_case_build(ug_case *c, ug_spec *spec, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->spec = *spec;
    memset(spec, 0, sizeof *spec);
    c->def = ug_op_def_get(c->spec.op);
    if (!c->def) {
        snprintf(err, errlen, "op \"%s\" is not implemented", ug_op_name(c->spec.op));
        return -2;
    }
    if (!dtype_listed(c->def->dtypes, c->spec.dtype)) {
        snprintf(err, errlen, "%s: dtype %s is not one of its dtypes (%s)", ug_op_name(c->spec.op),
                 ug_dtype_name(c->spec.dtype), c->def->dtypes);
        return -2;
    }
    if (ug_params_parse(&c->def->decl, c->spec.params, &c->params, err, errlen)) return -2;
    /* Refused by what it costs, before anything is allocated (case_memory.h). */
    if (ug_case_memory_check(c->def, &c->params, c->spec.dtype, err, errlen)) return -2;
    c->params_json = strdup(c->params.json);
    if (!c->params_json) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = alloc_declared(c, err, errlen);
    /* Special values go into the drawn inputs before the builder derives anything from them
     * (flash_attention_mha_grad's o and lse are the forward of q, k and v): a built tensor
     * made from the inputs before the injection would disagree with them. */
    if (!rc) rc = ug_inject_apply(c, err, errlen);
    if (!rc && c->def->build) rc = c->def->build(c, err, errlen);
    if (rc) return rc < 0 ? rc : -2;
    return decode_inputs(c, err, errlen);
}
