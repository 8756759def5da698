/* inject.c — see inject.h. */
#include "gen/inject.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *const ug_special_names[UG_SPECIAL_COUNT] = {"zero",       "-zero", "max",  "-max", "subnormal",
                                                        "-subnormal", "inf",   "-inf", "nan"};

int ug_special_index(const char *name)
{
    for (int k = 0; k < UG_SPECIAL_COUNT; k++)
        if (strcmp(name, ug_special_names[k]) == 0) return k;
    return -1;
}

static int special_value(const char *name, ug_dtype dt, double *out)
{
    const ug_dtype_info *in = ug_dtype_get_info(dt);
    double tiny = in->is_float ? ldexp(1.0, in->emin - in->mant_bits) : 1.0;
    const double values[UG_SPECIAL_COUNT] = {0.0,       -0.0, in->max_finite, -in->max_finite, tiny, -tiny, INFINITY,
                                             -INFINITY, NAN};
    int k = ug_special_index(name);
    if (k < 0) return -1;
    *out = values[k];
    return 0;
}

int ug_inject_apply(ug_case *c, char *err, size_t errlen)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(c->spec.json, "inject");
    if (!list) return 0;
    if (!cJSON_IsArray(list)) {
        snprintf(err, errlen, "case spec: \"inject\" must be an array");
        return -2;
    }
    int k = 0;
    for (const cJSON *e = list->child; e; e = e->next, k++) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "input"), *i = cJSON_GetObjectItemCaseSensitive(e, "i");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "v");
        ug_tensor *t = NULL;
        for (int n = 0; cJSON_IsString(name) && n < c->n_in; n++)
            if (strcmp(c->in[n].name, name->valuestring) == 0) t = &c->in[n];
        if (!t || !cJSON_GetObjectItemCaseSensitive(c->spec.dist, t->name)) {
            snprintf(err, errlen, "case spec: inject[%d] names no random input (\"input\" must be one of \"dist\")", k);
            return -2;
        }
        int all = cJSON_IsString(i) && strcmp(i->valuestring, "all") == 0;
        if (!(all || (cJSON_IsNumber(i) && i->valuedouble >= 0)) || t->numel == 0) {
            snprintf(err, errlen, "case spec: inject[%d] needs an index \"i\" >= 0 or \"all\"", k);
            return -2;
        }
        double value;
        if (cJSON_IsNumber(v))
            value = v->valuedouble;
        else if (!cJSON_IsString(v) || special_value(v->valuestring, t->dtype, &value)) {
            snprintf(err, errlen, "case spec: inject[%d] \"v\" must be a number or zero|max|subnormal|inf|nan (with -)",
                     k);
            return -2;
        }
        if (all)
            for (size_t n = 0; n < t->numel; n++) ug_dtype_store(t->dtype, t->data, n, value); /* rounds: to dtype */
        else
            ug_dtype_store(t->dtype, t->data, (size_t)fmod(i->valuedouble, (double)t->numel), value);
    }
    return 0;
}
