/* ops.c — the operator tables built from ops.def: names, groups, definitions and kernel
 * variants, each linked in or not (see ops.h). */
#include "core/ops.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Weak references: an operator whose definition is not linked in reads as NULL. The
 * library is a CMake OBJECT library, so every object is linked and nothing is dropped. */
#define UG_OP(E, name, group)                                                                                   \
    extern const ug_op_def ug_opdef_##name __attribute__((weak));                                              \
    extern const ug_kernel_variant ug_variants_##name[] __attribute__((weak));
#include "core/ops.def"
#undef UG_OP

_Static_assert(UG_OP_COUNT == 34, "docs/OPERATORS.md lists 34 priority operators");

static const struct {
    const char *name;
    ug_group group;
    const ug_op_def *def;
    const ug_kernel_variant *variants;
} op_table[UG_OP_COUNT] = {
#define UG_OP(E, name, group) {#name, UG_GROUP_##group, &ug_opdef_##name, ug_variants_##name},
#include "core/ops.def"
#undef UG_OP
};

static const char *group_names[UG_GROUP_COUNT] = {"DeepSeek", "GLM", "Operator", "GreenLight"};

const char *ug_op_name(int op) { return op >= 0 && op < UG_OP_COUNT ? op_table[op].name : "?"; }
ug_group ug_op_group(int op) { return op_table[op].group; }
const ug_op_def *ug_op_def_get(int op) { return op >= 0 && op < UG_OP_COUNT ? op_table[op].def : NULL; }
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

const ug_kernel_variant *ug_op_variants(int op)
{
    if (op < 0 || op >= UG_OP_COUNT) return NULL;
    return op_table[op].variants;
}

const ug_kernel_variant *ug_op_variant(const ug_op_def *d, const char *name)
{
    const ug_kernel_variant *v = ug_op_variants(d->op);
    for (int i = 0; v && v[i].name; i++)
        if (strcmp(v[i].name, name ? name : "sim") == 0) return &v[i];
    return NULL;
}

const ug_op_decl *ug_op_decl_find(const char *name)
{
    const ug_op_def *d = ug_op_def_get(ug_op_find(name));
    return d && d->decl.params ? &d->decl : NULL;
}

