/* test_sweep_select.c — shard selection, below the CLI: --shard K/N parsing, the cost
 * estimate, and that shards 1..N of a plan are disjoint, cover it, keep plan order, do not
 * depend on the order cases come in, and are balanced by estimated cost (LPT bound: loads
 * differ by at most the largest case); that given costs deal a case dearer than all others
 * together to a shard of its own, and that the costs' fingerprint follows the costs. A
 * case's guards are test_guard's. */
#include <string.h>

#include "check.h"
#include "run/sweep.h"

#define NCASE 97

/* A plan of NCASE fake cases with varied shapes; order reversed when rev. */
static void fake_plan(ug_plan *p, int rev)
{
    memset(p, 0, sizeof *p);
    p->cases = calloc(NCASE, sizeof *p->cases);
    p->n = NCASE;
    for (int i = 0; i < NCASE; i++) {
        int k = rev ? NCASE - 1 - i : i;
        char spec[160];
        snprintf(spec, sizeof spec, "{\"op\":\"attn_softmax\",\"params\":{\"cols\":%d,\"rows\":%d,\"scale\":0.5}}",
                 1 + (k * 37) % 300, 1 + k % 5);
        p->cases[i].spec = strdup(spec);
        snprintf(p->cases[i].id, sizeof p->cases[i].id, "%016x", (unsigned)(k * 2654435761u));
        p->cases[i].op = 0;
    }
}

static int index_of(const char *id)
{
    for (int k = 0; k < NCASE; k++) {
        char want[UG_ID_LEN + 1];
        snprintf(want, sizeof want, "%016x", (unsigned)(k * 2654435761u));
        if (strcmp(want, id) == 0) return k;
    }
    return -1;
}

static void check_shards(int n)
{
    int owner[NCASE];
    double load_max = 0, load_min = 1e300, biggest = 0;
    for (int k = 0; k < NCASE; k++) owner[k] = 0;
    for (int s = 1; s <= n; s++) {
        ug_plan p, q;
        fake_plan(&p, 0);
        fake_plan(&q, 1);
        ug_sweep_shard_select(&p, s, n, NULL);
        ug_sweep_shard_select(&q, s, n, NULL);
        CHECK(p.n == q.n, "shard %d/%d: %zu cases, %zu when the plan comes reversed", s, n, p.n, q.n);
        double load = 0;
        int last = -1;
        for (size_t i = 0; i < p.n; i++) {
            int k = index_of(p.cases[i].id);
            CHECK(k > last, "shard %d/%d does not keep plan order", s, n);
            last = k;
            owner[k]++;
            double c = ug_sweep_case_cost(p.cases[i].spec);
            load += c;
            if (c > biggest) biggest = c;
            int found = 0;
            for (size_t j = 0; j < q.n; j++) found |= strcmp(q.cases[j].id, p.cases[i].id) == 0;
            CHECK(found, "shard %d/%d depends on the order of the plan", s, n);
        }
        if (load > load_max) load_max = load;
        if (load < load_min) load_min = load;
        ug_plan_free(&p);
        ug_plan_free(&q);
    }
    for (int k = 0; k < NCASE; k++) CHECK(owner[k] == 1, "N=%d: case %d is in %d shards", n, k, owner[k]);
    CHECK(load_max - load_min <= biggest, "N=%d: loads %g..%g differ by more than the largest case %g", n, load_min,
          load_max, biggest);
}

static void check_parse(void)
{
    int k = 0, n = 0;
    char err[256];
    CHECK(ug_sweep_parse_shard("2/8", &k, &n, err, sizeof err) == 0 && k == 2 && n == 8, "2/8 -> %d/%d", k, n);
    CHECK(ug_sweep_parse_shard("1/1", &k, &n, err, sizeof err) == 0 && k == 1 && n == 1, "1/1");
    const char *bad[] = {"0/3", "4/3", "3", "/3", "1/", "a/b", "1/3x", "-1/3", "", "2/0"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = 0;
        CHECK(ug_sweep_parse_shard(bad[i], &k, &n, err, sizeof err) == -2 && strstr(err, "K/N"), "\"%s\" accepted",
              bad[i]);
    }
}

static void check_cost(void)
{
    CHECK(ug_sweep_case_cost("{\"params\":{\"rows\":4,\"cols\":256,\"scale\":0.5}}") == 1024, "rows*cols");
    CHECK(ug_sweep_case_cost("{\"params\":{\"mask\":\"causal\"}}") == 1, "no shape: cost 1");
    CHECK(ug_sweep_case_cost("not json") == 1, "junk: cost 1");
    /* a real op: the bytes of its tensors (declaration), where a position param weighs nothing */
#define ROPE(params)                                                                                                   \
    "{\"v\":1,\"op\":\"interleave_rope\",\"dtype\":\"bf16\",\"seed\":1,\"params\":{" params "},"                       \
    "\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}}}"
    double near = ug_sweep_case_cost(ROPE("\"b\":2,\"n\":4,\"s\":64,\"pos0\":1"));
    double far = ug_sweep_case_cost(ROPE("\"b\":2,\"n\":4,\"s\":64,\"pos0\":16000000"));
    double big = ug_sweep_case_cost(ROPE("\"b\":2,\"n\":8,\"s\":64,\"pos0\":1"));
    CHECK(near > 2 * 4 * 64 * 64 * 2 && near == far, "pos0 must not weigh: %g vs %g", near, far);
    CHECK(big > 1.5 * near && big < 2.5 * near, "twice the heads, about twice the cost: %g vs %g", big, near);
#undef ROPE
}

/* Given costs: the dear case is alone in the first shard, the others spread over the rest; the fingerprint is
 * the same for the same costs and changes with one case's cost. */
static void check_given_costs(void)
{
    ug_plan p;
    fake_plan(&p, 0);
    ug_shard_costs c;
    char err[256];
    CHECK(ug_shard_costs_compute(&p, NULL, &c, err, sizeof err) == 0 && !c.timed, "estimates: %s", err);
    char hash[UG_ID_LEN + 1];
    snprintf(hash, sizeof hash, "%s", c.hash);
    for (size_t i = 0; i < p.n; i++) c.cost[i] = 1 + (double)(i % 3);
    c.cost[40] = 1e6;
    int *shard = ug_shard_assign(&p, c.cost, 4);
    int with_first = 0, per_shard[4] = {0};
    for (size_t i = 0; i < p.n; i++) {
        per_shard[shard[i]]++;
        with_first += shard[i] == shard[40];
    }
    CHECK(shard[40] == 0 && with_first == 1, "the dear case is alone in shard 1 (shard %d, %d cases)", shard[40] + 1,
          with_first);
    CHECK(per_shard[1] + per_shard[2] + per_shard[3] == NCASE - 1 && per_shard[1] >= 30 && per_shard[3] >= 30,
          "the rest spread: %d %d %d", per_shard[1], per_shard[2], per_shard[3]);
    free(shard);
    ug_shard_costs_free(&c);
    ug_shard_costs again;
    CHECK(ug_shard_costs_compute(&p, NULL, &again, err, sizeof err) == 0 && strcmp(again.hash, hash) == 0,
          "the same costs, the same fingerprint: %s vs %s", again.hash, hash);
    free(p.cases[3].spec);
    p.cases[3].spec = strdup("{\"op\":\"attn_softmax\",\"params\":{\"cols\":4096,\"rows\":64}}");
    ug_shard_costs other;
    CHECK(ug_shard_costs_compute(&p, NULL, &other, err, sizeof err) == 0 && strcmp(other.hash, hash) != 0,
          "one case's cost changed, the fingerprint did not");
    ug_shard_costs_free(&again);
    ug_shard_costs_free(&other);
    ug_plan_free(&p);
}

int main(void)
{
    check_parse();
    check_cost();
    for (int n = 1; n <= 7; n += 2) check_shards(n);
    check_shards(NCASE + 3); /* more shards than cases: some are empty, none overlap */
    check_given_costs();
    return check_done();
}
