/* contract.h — an operator's tensor contract (what a plugin or a replaying device must
 * accept and produce), derived from the operator's own build().
 *
 * An op declares its tensors in code (build() adds them) and in prose (params_doc). The
 * prose cannot be checked, so the contract `ulpgym ops show OP --json` prints is read
 * off real cases instead: a sample of the op's cases from the default plan is built and
 * every tensor's name, role, dtype per case dtype and rank recorded; each dimension is
 * matched against the integer params of every sampled case to find the simplest formula
 * that holds in all of them (a param, k*p, p/k, ceil(p/k), p*q, p+q, p*q*r, or a
 * constant; a param a case leaves out counts with the integer default its params_doc
 * states). A dimension no formula explains is reported as "?" and the examples carry
 * its concrete sizes. Nothing here knows any operator, so every op gets a contract. */
#ifndef UG_CONTRACT_H
#define UG_CONTRACT_H
#include <stddef.h>

#include <cjson/cJSON.h>

#include "gen/plan.h"

/* The contract of op as a JSON object:
 *   {"layout": ..., "samples": N, "defaults": {param: value the op documents},
 *    "inputs":  [{"name", "role": "input", "filled": "random" | "built", "ndim",
 *                 "shape": ["rows", "cols"], "dtype": {"<case dtype>": "<tensor dtype>"}}],
 *    "outputs": [... "role": "output" ...],
 *    "examples": [{"case_id", "dtype", "params", "inputs": {name: [dims]}, "outputs": {...}}]}
 * The cases come from plan (an expanded plan, gen/plan.h; NULL: the default plan is
 * loaded, which costs as much as `ulpgym plan --count`, so a caller deriving several
 * contracts loads it once). NULL with err set when the op is not implemented or the
 * plan has no case of it to learn from. */
cJSON *ug_contract_json(int op, const ug_plan *plan, char *err, size_t errlen);

/* Evaluates a shape formula of the contract on a params object (a param it lacks is
 * looked up in defaults, the contract's "defaults"; may be NULL): the dimension, or -1
 * when the formula is "?" or names a param neither has. */
long long ug_contract_eval(const char *formula, const cJSON *params, const cJSON *defaults);

#endif
