/* plugin_decl.c — a case's params against a plugin's ulpgym_implements declaration
 * (plugin_decl.h). Per param of the case: listed as "any", taken; listed with values, taken
 * when its value is one of them; not listed, taken only when its value is the op's default
 * (the value a kernel that never heard of the param computes with), found by parsing the
 * params once more without it. The declared contract digest, when it differs from this
 * ulpgym's, is named in the reason. */
#include "kernels/plugin_decl.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/opdecl.h"
#include "core/ops.h"

/* The value param `name` takes by default in a case with these params: the op's declaration
 * evaluated on the params less that key. NULL when it has no default (required) or no
 * declaration; else a cJSON the caller deletes. */
static cJSON *default_of(const char *op, const cJSON *params, const char *name)
{
    const ug_op_decl *decl = ug_op_decl_find(op);
    if (!decl) return NULL;
    cJSON *less = cJSON_Duplicate(params, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(less, name);
    ug_params p;
    char err[256];
    cJSON *value = NULL;
    if (less && ug_params_parse(decl, less, &p, err, sizeof err) == 0) {
        value = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(p.tree, name), 1);
        ug_params_free(&p);
    }
    cJSON_Delete(less);
    return value;
}

static int in_list(const cJSON *list, const cJSON *value)
{
    for (const cJSON *x = list->child; x; x = x->next)
        if (cJSON_Compare(x, value, 1)) return 1;
    return 0;
}

/* " (it was written to contract X; this ulpgym's is Y)" when the declared digest differs. */
static void contract_note(const cJSON *d, const char *op, char *buf, size_t len)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(d, "contract");
    char now[17];
    buf[0] = 0;
    if (cJSON_IsString(c) && ug_op_contract_digest(ug_op_find(op), now) == 0 && strcmp(c->valuestring, now) != 0)
        snprintf(buf, len, " (it was written to contract %.16s of %s; this ulpgym's is %s)", c->valuestring, op, now);
}

/* 0 param `p` of the case is inside the declaration; 1 not, with the reason; -1 the entry is malformed. */
static int param_declines(const cJSON *listed, const char *op, const cJSON *params, const cJSON *p, const char *note,
                          char *err, size_t errlen)
{
    char *v = cJSON_PrintUnformatted(p);
    int out = 0;
    if (cJSON_IsString(listed) && strcmp(listed->valuestring, "any") == 0) {
        out = 0;
    } else if (cJSON_IsArray(listed)) {
        if (!in_list(listed, p)) {
            char *l = cJSON_PrintUnformatted(listed);
            snprintf(err, errlen, "the plugin implements %s's param %s only as %.120s; this case has %s = %.80s%s", op,
                     p->string, l ? l : "?", p->string, v ? v : "?", note);
            free(l);
            out = 1;
        }
    } else if (listed) {
        snprintf(err, errlen,
                 "the plugin's ulpgym_implements(\"%s\") lists param %s as neither \"any\" nor an "
                 "array of values (docs/PLUGINS.md)",
                 op, p->string);
        out = -1;
    } else {
        cJSON *def = default_of(op, params, p->string);
        if (!def || !cJSON_Compare(def, p, 1)) {
            char *dv = def ? cJSON_PrintUnformatted(def) : NULL;
            snprintf(err, errlen,
                     "the plugin declares no param %s for %s (written to an older contract?); this case "
                     "has %s = %.80s, the default is %.80s%s",
                     p->string, op, p->string, v ? v : "?", dv ? dv : "none", note);
            free(dv);
            out = 1;
        }
        cJSON_Delete(def);
    }
    free(v);
    return out;
}

int ug_plugin_declines(const char *decl, const char *op, const char *params_json, char *err, size_t errlen)
{
    if (!decl) return 0;
    cJSON *d = cJSON_Parse(decl), *params = cJSON_Parse(params_json ? params_json : "{}");
    const cJSON *listed = cJSON_GetObjectItemCaseSensitive(d, "params");
    int out = 0;
    if (!cJSON_IsObject(d) || (listed && !cJSON_IsObject(listed))) {
        snprintf(err, errlen,
                 "the plugin's ulpgym_implements(\"%s\") is not a JSON object with an object \"params\" "
                 "(docs/PLUGINS.md)",
                 op);
        out = -1;
    } else if (cJSON_IsObject(params)) {
        char note[120];
        contract_note(d, op, note, sizeof note);
        for (const cJSON *p = params->child; p && !out; p = p->next)
            out = param_declines(cJSON_GetObjectItemCaseSensitive(listed, p->string), op, params, p, note, err, errlen);
    }
    cJSON_Delete(d);
    cJSON_Delete(params);
    return out;
}
