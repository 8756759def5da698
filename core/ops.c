/* ops.c — the operator tables built from ops.def: names, groups, definitions and kernel
 * variants, each linked in or not (see ops.h). */
#include "core/ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/canon.h"
#include "op_params.h"

/* Weak references: an operator whose definition is not linked in reads as NULL. The
 * library is a CMake OBJECT library, so every object is linked and nothing is dropped. */
#define UG_OP(E, name, group)                                                                                          \
    extern const ug_op_def ug_opdef_##name __attribute__((weak));                                                      \
    extern const ug_kernel_fn ug_sim_##name __attribute__((weak));
#include "core/ops.def"
#undef UG_OP

_Static_assert(UG_OP_COUNT == 34, "docs/OPERATORS.md lists 34 priority operators");

static const struct {
    const char *name;
    ug_group group;
    const ug_op_def *def;
    const ug_kernel_fn *sim;
} op_table[UG_OP_COUNT] = {
#define UG_OP(E, name, group) {#name, UG_GROUP_##group, &ug_opdef_##name, &ug_sim_##name},
#include "core/ops.def"
#undef UG_OP
};

static const char *group_names[UG_GROUP_COUNT] = {"DeepSeek", "GLM", "Operator", "GreenLight"};

/* The definitions as used: each linked-in oracle file's functions with its declaration
 * file read in, built once on first use (before any worker forks, or in each worker). */
static ug_op_def loaded[UG_OP_COUNT];
static int loaded_ok;

static void die(const char *what, const char *op)
{
    fprintf(stderr, "ulpgym build error: %s%s\n", what, op);
    exit(70);
}

int ug_op_join_variants(ug_op_def *d, const char *const *codes, int n_codes, char *err, size_t errlen)
{
    for (int i = 0; i < d->n_variants; i++) {
        const char *name = d->variants[i].name;
        int code = 0, twice = 0;
        while (code < n_codes && strcmp(codes[code], name) != 0) code++;
        for (int j = 0; j < i; j++) twice |= strcmp(d->variants[j].name, name) == 0;
        if (code == n_codes || twice || (i == 0) != (strcmp(name, "sim") == 0)) {
            snprintf(err, errlen, "declaration of %s: \"sim_variants\"[%d] \"%s\" %s", d->decl.op, i, name,
                     code == n_codes ? "has no variant code (cmake/op_params.cmake makes them; rebuild)"
                     : twice         ? "is listed twice"
                                     : "is out of place: \"sim\" comes first, once");
            return -1;
        }
        d->variants[i].bug = code;
    }
    return 0;
}

static void load_definitions(void)
{
    char err[512];
    for (const ug_embedded_decl *e = ug_embedded_decls; e->op; e++) {
        int op = ug_op_find(e->op);
        if (op < 0) die("a declaration file names no operator of core/ops.def: ", e->op);
        if (!op_table[op].def) die("declared, but no oracle file defines ug_opdef_", e->op);
        loaded[op] = *op_table[op].def;
        loaded[op].op = (ug_op)op; /* the oracle file's definition is named for it (ug_opdef_<name>) */
        if (ug_op_def_load(&loaded[op], e->op, e->json, err, sizeof err)) die(err, "");
    }
    for (int op = 0; op < UG_OP_COUNT; op++) {
        if (op_table[op].def && !loaded[op].decl.op) die("no declaration file oracles/<family>/", op_table[op].name);
        if (op_table[op].def && op_table[op].sim &&
            ug_op_join_variants(&loaded[op], ug_variant_names, UG_VAR_COUNT, err, sizeof err))
            die(err, "");
    }
    loaded_ok = 1;
}

const char *ug_op_name(int op) { return op >= 0 && op < UG_OP_COUNT ? op_table[op].name : "?"; }
ug_group ug_op_group(int op) { return op_table[op].group; }
const ug_op_def *ug_op_def_get(int op)
{
    if (op < 0 || op >= UG_OP_COUNT || !op_table[op].def) return NULL;
    if (!loaded_ok) load_definitions();
    return &loaded[op];
}

const ug_output_rule *ug_op_output_rule(const ug_op_def *d, const char *name)
{
    for (int i = 0; i < d->n_outputs; i++)
        if (strcmp(d->outputs[i].name, name) == 0) return &d->outputs[i];
    return NULL;
}
const char *ug_group_name(ug_group g) { return (unsigned)g < UG_GROUP_COUNT ? group_names[g] : "?"; }

int ug_op_find(const char *name)
{
    for (int i = 0; name && i < UG_OP_COUNT; i++)
        if (strcmp(op_table[i].name, name) == 0) return i;
    return -1;
}

int ug_group_find(const char *name)
{
    for (int i = 0; name && i < UG_GROUP_COUNT; i++)
        if (strcasecmp(group_names[i], name) == 0) return i;
    return -1;
}

static void hot_add(ug_geom *g, size_t r)
{
    if (r >= g->rows || g->n_hot >= UG_GEOM_HOT) return;
    for (size_t i = 0; i < g->n_hot; i++)
        if (g->hot[i] == r) return;
    g->hot[g->n_hot++] = r;
}

void ug_geom_hot(ug_geom *g, size_t r, int neighbours)
{
    hot_add(g, r);
    if (!neighbours) return;
    if (r > 0) hot_add(g, r - 1);
    hot_add(g, r + 1);
}

const ug_kernel_variant *ug_op_variants(int op)
{
    if (op < 0 || op >= UG_OP_COUNT) return NULL;
    if (!op_table[op].sim || !ug_op_def_get(op)) return NULL;
    return loaded[op].variants;
}

const ug_kernel_variant *ug_op_variant(const ug_op_def *d, const char *name)
{
    const ug_kernel_variant *v = ug_op_variants(d->op);
    for (int i = 0; v && v[i].name; i++)
        if (strcmp(v[i].name, name ? name : "sim") == 0) return &v[i];
    return NULL;
}

int ug_op_run_variant(int op, const ug_kernel_variant *v, const ulpgym_call *call, char *err, size_t errlen)
{
    if (op < 0 || op >= UG_OP_COUNT || !op_table[op].sim) {
        snprintf(err, errlen, "op %s has no sim kernel linked in",
                 op < 0 || op >= UG_OP_COUNT ? "?" : op_table[op].name);
        return -2;
    }
    return (*op_table[op].sim)(call, err, errlen, v->bug);
}

const ug_op_decl *ug_op_decl_find(const char *name)
{
    const ug_op_def *d = ug_op_def_get(ug_op_find(name));
    return d && d->decl.params ? &d->decl : NULL;
}

int ug_op_contract_digest(int op, char out[17])
{
    out[0] = 0;
    if (op < 0 || op >= UG_OP_COUNT || !ug_op_def_get(op)) return -1;
    for (const ug_embedded_decl *e = ug_embedded_decls; e->op; e++) {
        if (strcmp(e->op, ug_op_name(op)) != 0) continue;
        cJSON *tree = cJSON_Parse(e->json); /* the build checked it parses (load_definitions) */
        /* not the contract: the sim kernel's variants, and how ulpgym decides the outcome */
        static const char *const not_contract[] = {"sim_variants", "primary", "check_all"};
        for (size_t k = 0; tree && k < sizeof not_contract / sizeof *not_contract; k++)
            cJSON_DeleteItemFromObjectCaseSensitive(tree, not_contract[k]);
        char *canon = tree ? ug_json_canonical(tree) : NULL;
        cJSON_Delete(tree);
        if (!canon) return -1;
        snprintf(out, 17, "%016llx", (unsigned long long)ug_hash64(canon, strlen(canon)));
        free(canon);
        return 0;
    }
    return -1;
}

int ug_variant_legal(const char *name) { return name && strncmp(name, "legal_", 6) == 0; }
