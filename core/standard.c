/* standard.c — the precision standards' names, sources and rules (standard.h). */
#include "core/standard.h"

#include <string.h>

static const struct {
    const char *name, *source, *rule;
} std_table[UG_STD_COUNT] = {
    [UG_STD_PYPTO] = {"pypto", "the reference suite's own compare",
                      "element fails if |a-g| > atol + rtol*|g|; case passes if failures <= round(budget*N)"},
    [UG_STD_ALLCLOSE] = {"allclose", "PyTorch assert_close defaults", "every element within atol + rtol*|g|"},
    [UG_STD_DUAL_THOUSANDTH] = {"dual_thousandth", "Ascend dual-thousandth",
                                "share of elements with relative error > t is < t"},
    [UG_STD_MIXED_TOLERANCE] = {"mixed_tolerance", "CANN mixed-tolerance standard",
                                "matched ratio >= 0.99 and every |a-g| <= max(floor, 32*ulp(g))"},
    [UG_STD_MERE_MARE] = {"mere_mare", "CANN single-benchmark standard", "MERE < T and MARE < 10*T"},
    [UG_STD_ULP] = {"ulp", "msprobe ULP standard",
                    "fp16/bf16: < 0.1% of elements above 1 ulp; fp32: mean ulp < 64 or < 5% above 32 ulp"},
    [UG_STD_BENCHMARK] = {"benchmark", "msprobe benchmark comparison + FlashAttention rule",
                          "MARE/MERE/RMSE ratios to the naive same-dtype evaluation within the level's limits, "
                          "small-value errors <= 2x, max abs <= 2x benchmark + half ulp"},
    [UG_STD_CERTIFIED] = {"certified", "ulpgym: a rigorous device error bound (docs/STANDARDS.md)",
                          "every element within c*B + ulp(g)/2 of the exact value, B the first-order error bound of a "
                          "device computing the op in fp32 (any summation order, functions within 4 ulps, the op's "
                          "declared intermediate roundings), c = 2"},
    [UG_STD_REFERENCE] =
        {"reference", "the reference suite's own test of the op (each output rule's reference_source)",
         "element fails if |a-g| > reference_atol + reference_rtol*|g|; output passes if failures <= "
         "round(reference_budget*N) (budget 0: every element); where the test's golden makes "
         "roundings of its own (the rule's reference_golden) an element passes within the rule of "
         "either g or that golden; ids its test judges by groups (reference_group: the test's "
         "topk_idx_compare) fail a group missing more than floor(group*reference_atol) of the golden's; "
         "NA where the op has no reference test"},
    [UG_STD_EXACT] = {"exact", "discrete outputs", "bitwise equal"},
    [UG_STD_BOUNDARY_AWARE] = {"boundary_aware", "discrete outputs (docs/STANDARDS.md)",
                               "codes equal, or one quantum apart where the exact value is within budget of the "
                               "rounding boundary"},
    [UG_STD_TOPK_SET] = {"topk_set", "discrete outputs (docs/STANDARDS.md)",
                         "index sets equal up to exact ties (within budget) with the k-th score"},
};

const char *ug_standard_name(int s) { return s >= 0 && s < UG_STD_COUNT ? std_table[s].name : "?"; }
const char *ug_standard_source(int s) { return std_table[s].source; }
const char *ug_standard_rule(int s) { return std_table[s].rule; }
int ug_standard_find(const char *name)
{
    for (int i = 0; name && i < UG_STD_COUNT; i++)
        if (strcmp(std_table[i].name, name) == 0) return i;
    return -1;
}

int ug_standard_is_discrete(int s) { return s == UG_STD_EXACT || s == UG_STD_BOUNDARY_AWARE || s == UG_STD_TOPK_SET; }
