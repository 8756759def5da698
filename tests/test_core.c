/* test_core.c — Philox4x32-10 and SHA-256 known answers, the canonical JSON form, pinned case IDs and
 * input bits (stable across machines and builds), distribution purity, spec validation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/canon.h"
#include "core/philox.h"
#include "core/registry.h"
#include "core/sha256.h"
#include "gen/case.h"
#include "gen/dist.h"
#include "gen/plan.h"

static void philox_kat(void)
{
    /* Random123 known-answer vectors (kat_vectors, philox4x32 10 rounds) */
    static const uint32_t ctr[3][4] = {{0, 0, 0, 0},
                                       {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                                       {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}};
    static const uint32_t key[3][2] = {{0, 0}, {0xffffffff, 0xffffffff}, {0xa4093822, 0x299f31d0}};
    static const uint32_t want[3][4] = {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
                                        {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
                                        {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}};
    for (int k = 0; k < 3; k++) {
        uint32_t out[4];
        ug_philox4x32_10(ctr[k], key[k], out);
        CHECK(memcmp(out, want[k], sizeof out) == 0, "Philox KAT %d: got %08x %08x %08x %08x", k, out[0], out[1],
              out[2], out[3]);
    }
}

static void canonical_json(void)
{
    cJSON *j =
        cJSON_Parse("{ \"b\": [1, 2.5, -0.0, 1e300, 0.1], \"a\": {\"z\": \"q\\\"\", \"y\": true}, \"c\": null }");
    char *s = ug_json_canonical(j);
    CHECK(s && strcmp(s, "{\"a\":{\"y\":true,\"z\":\"q\\\"\"},\"b\":[1,2.5,0,1e+300,0.1],\"c\":null}") == 0,
          "canonical form: %s", s ? s : "(null)");
    free(s);
    cJSON_Delete(j);
    char buf[32];
    ug_format_double(1.0 / 3.0, buf);
    CHECK(strtod(buf, NULL) == 1.0 / 3.0 && strlen(buf) <= 19, "shortest round trip: %s", buf);
    ug_format_double(0.08838834764831845, buf);
    CHECK(strcmp(buf, "0.08838834764831845") == 0, "shortest form of 1/sqrt(128): %s", buf);
    CHECK(ug_hash64("", 0) != ug_hash64("a", 1), "hash separates");
}

/* The one-step jump over a fixed text equals hashing its bytes, from any state: every low
 * byte of the state (the table's index) with random high bits, texts of 0..40 bytes with
 * every byte value, and a jump followed by more bytes (the plan grid chains them). */
static void hash_jump(void)
{
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    unsigned char text[41];
    int bad = 0;
    for (size_t len = 0; len <= 40; len++) {
        for (size_t i = 0; i < len; i++)
            x = x * 6364136223846793005ULL + 1442695040888963407ULL, text[i] = (unsigned char)(x >> 56);
        static ug_hash64_jump j;
        ug_hash64_jump_make(&j, text, len);
        for (uint64_t r = 0; r < 512; r++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            uint64_t h = (x & ~255ULL) | (r & 255);
            uint64_t want = ug_hash64_update(ug_hash64_update(h, text, len), "tail", 4);
            uint64_t got = ug_hash64_update(ug_hash64_jump_apply(&j, h), "tail", 4);
            bad += want != got;
        }
    }
    CHECK(bad == 0, "hash jump differs from the byte-wise hash in %d of %d states", bad, 41 * 512);
    static ug_hash64_jump e;
    ug_hash64_jump_make(&e, "", 0);
    CHECK(ug_hash64_jump_apply(&e, UG_HASH64_INIT) == UG_HASH64_INIT, "the empty text's jump is the identity");
}

/* Pinned: these must never change, or every stored case ID and input changes with them. */
static void pinned_ids(void)
{
    const char *spec = "{\"v\":1,\"op\":\"attn_softmax\",\"dtype\":\"bf16\",\"params\":{\"rows\":2,\"cols\":5},"
                       "\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}},\"seed\":42,\"plan\":\"t/1\"}";
    ug_spec s;
    char err[256];
    CHECK(ug_spec_parse(spec, &s, err, sizeof err) == 0, "spec: %s", err);
    CHECK(strcmp(s.id, "8ea4eb7688e9e9c2") == 0, "pinned case ID changed: %s", s.id);
    /* key order and spacing do not matter */
    const char *same =
        "{\"seed\":42, \"plan\":\"t/1\", \"v\":1, \"dtype\":\"bf16\", \"op\":\"attn_softmax\","
        " \"dist\":{\"x\":{\"std\":1,\"mean\":0,\"kind\":\"normal\"}}, \"params\":{\"cols\":5,\"rows\":2}}";
    ug_spec t;
    CHECK(ug_spec_parse(same, &t, err, sizeof err) == 0 && strcmp(s.id, t.id) == 0, "ID depends on key order");
    ug_spec_free(&t);
    ug_case c;
    CHECK(ug_case_build(&c, &s, err, sizeof err) == 0, "build: %s", err);
    uint16_t x0, x9;
    memcpy(&x0, c.in[0].data, 2);
    memcpy(&x9, (char *)c.in[0].data + 18, 2);
    CHECK(x0 == 0x3f63 && x9 == 0xbea3, "pinned input bits changed: x[0]=%04x x[9]=%04x", x0, x9);
    ug_case_free(&c);
}

static void dist_purity(void)
{
    cJSON *d = cJSON_Parse("{\"kind\":\"normal\",\"mean\":0,\"std\":1}");
    float a[1000], b[10];
    char err[128];
    CHECK(ug_dist_fill(d, 7, 3, UG_DT_FP32, a, 1000, err, sizeof err) == 0, "fill");
    int same = 1;
    for (int i = 0; i < 10; i++) { /* element i alone equals element i of the bulk fill */
        b[i] = (float)ug_dist_value(d, 7, 3, (uint64_t)(990 + i));
        same &= b[i] == a[990 + i];
    }
    CHECK(same, "element i is not a pure function of (seed, tensor, i)");
    double sum = 0, sq = 0;
    for (int i = 0; i < 1000; i++) {
        sum += a[i];
        sq += (double)a[i] * a[i];
    }
    CHECK(fabs(sum / 1000) < 0.15 && fabs(sq / 1000 - 1) < 0.15, "normal(0,1) moments: %g %g", sum / 1000, sq / 1000);
    cJSON_Delete(d);
    d = cJSON_Parse("{\"kind\":\"wide\",\"lo_exp\":-3,\"hi_exp\":3}");
    int ok = 1;
    for (uint64_t i = 0; i < 1000; i++) {
        double v = fabs(ug_dist_value(d, 1, 0, i));
        ok &= v >= 0x1p-3 && v < 0x1p3;
    }
    CHECK(ok, "wide stays within its exponents");
    cJSON_Delete(d);
    d = cJSON_Parse("{\"kind\":\"uniform\",\"lo\":2,\"hi\":1}");
    CHECK(ug_dist_validate(d, err, sizeof err) == -2 && strstr(err, "lo"), "bad uniform rejected: %s", err);
    cJSON_Delete(d);
    d = cJSON_Parse("{\"kind\":\"gamma\"}");
    CHECK(ug_dist_validate(d, err, sizeof err) == -2 && strstr(err, "gamma"), "unknown kind named: %s", err);
    cJSON_Delete(d);
}

static void spec_errors(void)
{
    static const char *bad[][2] = {
        {"{", "not valid JSON"},
        {"[]", "not a JSON object"},
        {"{\"op\":\"nope\",\"dtype\":\"bf16\",\"params\":{},\"dist\":{},\"seed\":1}", "unknown op \"nope\""},
        {"{\"op\":\"attn_softmax\",\"dtype\":\"bf17\",\"params\":{},\"dist\":{},\"seed\":1}", "dtype"},
        {"{\"op\":\"attn_softmax\",\"dtype\":\"bf16\",\"params\":3,\"dist\":{},\"seed\":1}", "params"},
        {"{\"op\":\"attn_softmax\",\"dtype\":\"bf16\",\"params\":{},\"dist\":{},\"seed\":-1}", "seed"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ug_spec s;
        char err[256] = "";
        int rc = ug_spec_parse(bad[i][0], &s, err, sizeof err);
        CHECK(rc == -2 && strstr(err, bad[i][1]), "spec %zu: rc %d, message \"%s\"", i, rc, err);
    }
    CHECK(ug_case_id_prefix_ok("0123ab") && !ug_case_id_prefix_ok("0123a") && !ug_case_id_prefix_ok("0123ag"),
          "ID prefix rules");
    /* a missing distribution for an input is a clear build error */
    ug_spec s;
    ug_case c;
    char err[256];
    ug_spec_parse(
        "{\"op\":\"attn_softmax\",\"dtype\":\"bf16\",\"params\":{\"rows\":1,\"cols\":2},\"dist\":{},\"seed\":1}", &s,
        err, sizeof err);
    CHECK(ug_case_build(&c, &s, err, sizeof err) != 0 && strstr(err, "\"x\""), "missing dist: %s", err);
    ug_case_free(&c);
}

/* Loading only some ops gives the cases that loading all and filtering keeps, in the same
 * order, under the same plan hash (every space still read); a second op and a group too. */
static void plan_selection(const ug_plan *all)
{
    char err[1024];
    unsigned char ops[UG_OP_COUNT] = {0};
    ops[all->cases[0].op] = 1;
    ops[all->cases[all->n - 1].op] = 1;
    unsigned groups[] = {0, 1u << ug_op_group(all->cases[0].op)};
    for (int gi = 0; gi < 2; gi++) {
        ug_plan part, filtered;
        CHECK(ug_plan_load_only(ug_plan_default_path(), -1, gi ? NULL : ops, groups[gi], &part, err, sizeof err) == 0,
              "selected plan: %s", err);
        CHECK(ug_plan_load(ug_plan_default_path(), -1, &filtered, err, sizeof err) == 0, "plan: %s", err);
        ug_plan_filter(&filtered, gi ? NULL : ops, groups[gi]);
        int same = part.n == filtered.n && part.n > 0 && part.n < all->n && strcmp(part.hash, all->hash) == 0;
        for (size_t i = 0; same && i < part.n; i++)
            same = strcmp(part.cases[i].id, filtered.cases[i].id) == 0 &&
                   strcmp(part.cases[i].spec, filtered.cases[i].spec) == 0;
        CHECK(same, "selection %d: %zu cases (hash %s) vs %zu filtered (hash %s)", gi, part.n, part.hash, filtered.n,
              all->hash);
        ug_plan_free(&part);
        ug_plan_free(&filtered);
    }
}

static void plan_errors(void)
{
    const char *dir = check_tmpdir();
    char path[512], err[1024];
    snprintf(path, sizeof path, "%s/bad_plan.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"name\":\"x\",\"version\":1,\"ops\":{\"attn_softmax\":{\"cases\":5}", f); /* truncated */
    fclose(f);
    ug_plan p;
    CHECK(ug_plan_load(path, -1, &p, err, sizeof err) == -2 && strstr(err, "not valid JSON"), "truncated plan: %s",
          err);
    f = fopen(path, "w");
    fputs("{\"name\":\"x\",\"version\":1,\"ops\":{\"no_such_op\":{\"cases\":5}}}", f);
    fclose(f);
    CHECK(ug_plan_load(path, -1, &p, err, sizeof err) == -2 && strstr(err, "no_such_op"), "unknown op: %s", err);
    CHECK(ug_plan_load("/nonexistent/plan.json", -1, &p, err, sizeof err) == -2 && strstr(err, "/nonexistent"),
          "missing file: %s", err);
    /* the default plan is deterministic: two expansions give the same IDs in order */
    ug_plan a, b;
    CHECK(ug_plan_load(ug_plan_default_path(), -1, &a, err, sizeof err) == 0, "default plan: %s", err);
    CHECK(ug_plan_load(ug_plan_default_path(), -1, &b, err, sizeof err) == 0, "default plan: %s", err);
    int same = a.n == b.n && a.n > 0;
    for (size_t i = 0; same && i < a.n; i++) same = strcmp(a.cases[i].id, b.cases[i].id) == 0;
    CHECK(same, "plan expansion is not deterministic");
    ug_plan_free(&b);
    CHECK(ug_plan_load(ug_plan_default_path(), 99, &b, err, sizeof err) == 0 && b.n == a.n &&
              strcmp(a.cases[0].id, b.cases[0].id) != 0,
          "--seed gives other cases");
    ug_plan_free(&b);
    plan_selection(&a);
    ug_plan_free(&a);
}

/* FIPS 180-4 examples: "abc", the 448-bit message, and a million 'a's fed in odd pieces
 * (so the block boundary falls inside updates); then a file. */
static void sha256_kat(void)
{
    static const struct {
        const char *msg, *hex;
    } kat[] = {{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
               {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
               {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"}};
    char out[65];
    for (size_t i = 0; i < sizeof kat / sizeof *kat; i++) {
        ug_sha256 s;
        ug_sha256_init(&s);
        ug_sha256_update(&s, kat[i].msg, strlen(kat[i].msg));
        ug_sha256_hex(&s, out);
        CHECK(strcmp(out, kat[i].hex) == 0, "sha256(\"%s\") = %s", kat[i].msg, out);
    }
    ug_sha256 s;
    ug_sha256_init(&s);
    char a[997];
    memset(a, 'a', sizeof a);
    for (size_t left = 1000000; left;) {
        size_t n = left < sizeof a ? left : sizeof a;
        ug_sha256_update(&s, a, n);
        left -= n;
    }
    ug_sha256_hex(&s, out);
    CHECK(strcmp(out, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0, "million a: %s", out);
    char path[1024];
    snprintf(path, sizeof path, "%s/sha.txt", check_tmpdir());
    FILE *f = fopen(path, "w");
    if (f) fputs("abc", f), fclose(f);
    CHECK(ug_sha256_file(path, out) == 0 && strcmp(out, kat[0].hex) == 0, "file digest %s", out);
    CHECK(ug_sha256_file("/nonexistent/x", out) == -1, "a missing file has no digest");
}

int main(void)
{
    philox_kat();
    sha256_kat();
    canonical_json();
    hash_jump();
    pinned_ids();
    dist_purity();
    spec_errors();
    plan_errors();
    return check_done();
}
