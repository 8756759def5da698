/* plugin_sim.c — a plugin (kernel_abi.h, ABI v1) serving every implemented operator with
 * ulpgym's own sim kernels.
 *
 * Its purpose is a proof: ulpgym reaches this library only through ulpgym_abi_version()
 * and ulpgym_run(), with nothing but the ulpgym_call the public header defines, yet the
 * tests get verdicts and metrics identical to the built-in sim backend for every case
 * of every operator. So the call carries everything a kernel needs. Inside, the library
 * looks the op up by call->op in its own private copy of the operator tables and runs
 * the op's kernel variant; it does not know any operator by name, so an operator added
 * later is served without a change here.
 *
 * ULPGYM_PLUGIN_SIM_VARIANT=NAME selects a planted-bug variant instead of "sim" (the
 * tests compare those too); an op without that variant answers "unsupported". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/registry.h" /* this library's own copy of the op tables, not ulpgym's */
#include "ulpgym/kernel_abi.h"

ULPGYM_EXPORT int ulpgym_abi_version(void) { return ULPGYM_ABI_VERSION; }

static int all_contiguous(const ulpgym_tensor *t, int n)
{
    for (int i = 0; i < n; i++)
        if (t[i].strides) return 0;
    return 1;
}

ULPGYM_EXPORT int ulpgym_run(const ulpgym_call *call, char *err, size_t errlen)
{
    if (call->abi_version != ULPGYM_ABI_VERSION) {
        snprintf(err, errlen, "plugin_sim speaks ABI v%d, the caller v%d", ULPGYM_ABI_VERSION, (int)call->abi_version);
        return ULPGYM_ERROR;
    }
    const ug_op_def *d = ug_op_def_get(ug_op_find(call->op));
    if (!d) {
        snprintf(err, errlen, "plugin_sim has no kernel for op \"%s\"", call->op);
        return ULPGYM_UNSUPPORTED;
    }
    if (!all_contiguous(call->inputs, call->n_inputs) || !all_contiguous(call->outputs, call->n_outputs)) {
        snprintf(err, errlen, "plugin_sim handles contiguous tensors only");
        return ULPGYM_UNSUPPORTED;
    }
    const char *want = getenv("ULPGYM_PLUGIN_SIM_VARIANT");
    const ug_kernel_variant *v = ug_op_variant(d, want && *want ? want : "sim");
    if (!v) {
        snprintf(err, errlen, "plugin_sim: op %s has no variant \"%s\"", call->op, want);
        return ULPGYM_UNSUPPORTED;
    }
    return ug_op_run_variant(d->op, v, call, err, errlen);
}
