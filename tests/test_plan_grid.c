/* test_plan_grid.c — the fast grid expansion (gen/plan_grid.c) against the slow, obvious
 * one: for every space in gen/ops, points spread over the grid (first, last and a seeded
 * spread in ID order) are built as cJSON specs and finished by ug_plan_finish_spec, and
 * their text must equal ug_grid_spec's byte for byte; every point's ID must be the hash of
 * that text; the object ug_grid_spec_json gives (what the plan checks against the op's
 * declaration) finishes to that same text; IDs come out sorted; and a bad grid is refused
 * naming what is wrong. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/canon.h"
#include "gen/plan.h"
#include "gen/plan_grid.h"

#define TAG "nightly/1"
#define SEED 20261129ULL

/* The spec of grid point `point` the obvious way: a cJSON object per point. */
static char *slow_spec(const char *op, const cJSON *dists, const cJSON *grid, size_t point)
{
    const cJSON *dts = cJSON_GetObjectItemCaseSensitive(grid, "dtype");
    const cJSON *dns = cJSON_GetObjectItemCaseSensitive(grid, "dist");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(grid, "params");
    size_t n = (size_t)cJSON_GetArraySize(dts);
    const cJSON *dt = cJSON_GetArrayItem(dts, (int)(point % n));
    point /= n;
    n = (size_t)cJSON_GetArraySize(dns);
    const cJSON *dn = cJSON_GetArrayItem(dns, (int)(point % n));
    point /= n;
    cJSON *spec = cJSON_CreateObject(), *p = cJSON_CreateObject();
    for (const cJSON *ax = params->child; ax; ax = ax->next) {
        n = (size_t)cJSON_GetArraySize(ax);
        cJSON_AddItemToObject(p, ax->string, cJSON_Duplicate(cJSON_GetArrayItem(ax, (int)(point % n)), 1));
        point /= n;
    }
    cJSON_AddStringToObject(spec, "op", op);
    cJSON_AddStringToObject(spec, "dtype", dt->valuestring);
    cJSON_AddItemToObject(spec, "params", p);
    cJSON_AddItemToObject(spec, "dist", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(dists, dn->valuestring), 1));
    char *text = ug_plan_finish_spec(spec, TAG, SEED);
    cJSON_Delete(spec);
    return text;
}

static void check_space(const char *path, const char *op)
{
    char err[512];
    char *text = ug_text_file_read(path, err, sizeof err);
    cJSON *space = text ? cJSON_Parse(text) : NULL;
    free(text);
    CHECK(space != NULL, "%s: %s", path, err);
    if (!space) return;
    const cJSON *dists = cJSON_GetObjectItemCaseSensitive(space, "dists");
    const cJSON *grid = cJSON_GetObjectItemCaseSensitive(space, "grid");
    ug_grid g;
    CHECK(ug_grid_open(&g, op, dists, grid, TAG, SEED, 2000000, SIZE_MAX, path, err, sizeof err) == 0, "%s", err);
    for (size_t k = 1; k < g.n; k++) CHECK(g.pts[k - 1].id <= g.pts[k].id, "%s: IDs unsorted at %zu", op, k);
    size_t step = g.n / 40 + 1;
    for (size_t k = 0; k < g.n; k = k + step < g.n || k == g.n - 1 ? k + step : g.n - 1) {
        char *fast = ug_grid_spec(&g, k, err, sizeof err), *slow = slow_spec(op, dists, grid, g.pts[k].point);
        char id[UG_ID_LEN + 1] = "", want[UG_ID_LEN + 1];
        if (slow) ug_spec_id_of(slow, id);
        ug_grid_id(&g, k, want);
        CHECK(fast && slow && strcmp(fast, slow) == 0, "%s point %zu:\n fast %s\n slow %s", op, g.pts[k].point,
              fast ? fast : err, slow ? slow : "(null)");
        CHECK(strcmp(id, want) == 0, "%s point %zu: ID %s, hash of its text %s", op, g.pts[k].point, want, id);
        cJSON *checked = ug_grid_spec_json(&g, k), *copy = checked ? cJSON_Duplicate(checked, 1) : NULL;
        char *finished = copy ? ug_plan_finish_spec(copy, TAG, SEED) : NULL;
        CHECK(finished && slow && strcmp(finished, slow) == 0, "%s point %zu: the checked object is\n %s\n not\n %s",
              op, g.pts[k].point, finished ? finished : "(null)", slow ? slow : "(null)");
        free(finished);
        cJSON_Delete(copy);
        cJSON_Delete(checked);
        free(fast);
        free(slow);
    }
    ug_grid_close(&g);
    cJSON_Delete(space);
}

/* Each kind of bad grid is refused with a message naming it. */
static void bad_grids(void)
{
    static const char *const cases[][2] = {
        {"{\"dtype\":[\"bf16\"],\"dist\":[\"n\"]}", "\"grid\" needs"},
        {"{\"dtype\":[\"bf17\"],\"dist\":[\"n\"],\"params\":{}}", "unknown dtype \"bf17\""},
        {"{\"dtype\":[\"bf16\"],\"dist\":[\"m\"],\"params\":{}}", "unknown dist set \"m\""},
        {"{\"dtype\":[\"bf16\"],\"dist\":[\"n\"],\"params\":{\"a\":[]}}", "grid param \"a\" must be a non-empty array"},
        {"{\"dtype\":[\"bf16\"],\"dist\":[\"n\"],\"params\":{\"a\":[1,2,3],\"b\":[1,2,3,4,5,6,7,8,9,10,11]}}",
         "grid has 33 points"},
    };
    cJSON *dists = cJSON_Parse("{\"n\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}}}");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cJSON *grid = cJSON_Parse(cases[i][0]);
        ug_grid g;
        char err[512] = "";
        int rc = ug_grid_open(&g, "attn_softmax", dists, grid, TAG, SEED, 32, SIZE_MAX, "space", err, sizeof err);
        CHECK(rc == -2 && strstr(err, cases[i][1]), "bad grid %zu: rc %d \"%s\" should say %s", i, rc, err,
              cases[i][1]);
        ug_grid_close(&g);
        cJSON_Delete(grid);
    }
    cJSON_Delete(dists);
}

int main(void)
{
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/gen/ops", ug_data_dir());
    DIR *d = opendir(dir);
    CHECK(d != NULL, "cannot open %s", dir);
    int spaces = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0) continue;
        char path[1400], op[256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        snprintf(op, sizeof op, "%.*s", (int)(n - 5), e->d_name);
        check_space(path, op);
        spaces++;
    }
    if (d) closedir(d);
    CHECK(spaces >= 20, "only %d spaces found in %s", spaces, dir);
    bad_grids();
    return check_done();
}
