/* op_contract.h — an op's contract as JSON: what `ulpgym ops show OP --json` prints and
 * the library's ulpgym_op_contract returns (one builder for both). The declaration
 * (core/opdecl.h: params with type, default and range, derived sizes, tensors with role,
 * dtype per case dtype and shape formula), its semantics, the ABI facts, the output rules
 * and the kernel variants; every key is documented in docs/PLUGINS.md. */
#ifndef UG_OP_CONTRACT_H
#define UG_OP_CONTRACT_H
#include <cjson/cJSON.h>

/* The contract of op (ug_op): detail 0 the catalogue line (op, group, status, summary,
 * dtypes, primary standard), 1 the whole contract. The caller deletes it. */
cJSON *ug_op_contract_json(int op, int detail);
/* The name of an output rule's compare ("numeric", "exact", ...; "?" when out of range). */
const char *ug_cmp_name(int cmp);

#endif
