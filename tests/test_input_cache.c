/* test_input_cache.c — the drawn-input cache (gen/input_cache.h) never changes a bit: every
 * fill through it equals ug_dist_fill, cold and warm, after a file is damaged, swapped for
 * another key's or replaced by a link (which is neither read nor written through); small
 * tensors are not stored; the folder stays within its cap, and an open that finds it over
 * 90 % full deletes the least recently used files down to 75 %;
 * the checksum it relies on tells a flipped bit. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "core/canon.h"
#include "gen/dist.h"
#include "gen/input_cache.h"

#define N_BIG (100 * 1024) /* 200 KiB of bf16: stored */
#define N_SMALL 1000       /* 2 KB: drawn only */

static char folder[1024];
static uint16_t want[N_BIG], got[N_BIG];

static void open_cache(const char *max)
{
    ug_input_cache_close();
    setenv("ULPGYM_INPUT_CACHE", folder, 1);
    if (max)
        setenv("ULPGYM_INPUT_CACHE_MAX", max, 1);
    else
        unsetenv("ULPGYM_INPUT_CACHE_MAX");
    char err[512];
    int rc = ug_input_cache_open(err, sizeof err);
    CHECK(rc == 0, "open %s: %d %s", folder, rc, rc < 0 ? err : "");
}

/* Fills got through the cache and want directly: equal bits, and what the counts say. */
static ug_input_cache_stats fill_both(const cJSON *dist, uint32_t tensor, size_t n, const char *what)
{
    char err[256];
    memset(got, 0xa5, sizeof got);
    CHECK(ug_dist_fill(dist, 7, tensor, UG_DT_BF16, want, n, err, sizeof err) == 0, "%s: draw", what);
    CHECK(ug_input_cache_fill(dist, 7, tensor, UG_DT_BF16, got, n, err, sizeof err) == 0, "%s: cache fill", what);
    CHECK(memcmp(want, got, n * 2) == 0, "%s: the cached fill differs from the drawn one", what);
    ug_input_cache_stats s;
    ug_input_cache_stats_get(&s);
    return s;
}

/* The one cache file in the folder (its name in name), or 0 files. */
static int cache_files(char name[300], uint64_t *bytes)
{
    DIR *d = opendir(folder);
    int n = 0;
    *bytes = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strstr(e->d_name, ".in")) {
            struct stat st;
            char p[1400];
            snprintf(p, sizeof p, "%s/%s", folder, e->d_name);
            if (!lstat(p, &st)) *bytes += (uint64_t)st.st_size;
            snprintf(name, 300, "%s", e->d_name);
            n++;
        }
    if (d) closedir(d);
    return n;
}

static void path_of(const char *name, char *p, size_t len) { snprintf(p, len, "%s/%s", folder, name); }

static void flip_last_byte(const char *name)
{
    char p[1400];
    path_of(name, p, sizeof p);
    int fd = open(p, O_RDWR);
    unsigned char b = 0;
    off_t end = lseek(fd, -1, SEEK_END);
    CHECK(fd >= 0 && end > 0 && pread(fd, &b, 1, end) == 1, "read %s", p);
    b ^= 1;
    CHECK(pwrite(fd, &b, 1, end) == 1, "write %s", p);
    close(fd);
}

static void round_trips(const cJSON *normal)
{
    open_cache(NULL);
    ug_input_cache_stats s = fill_both(normal, 0, N_BIG, "cold");
    CHECK(s.written_n == 1 && s.read_n == 0, "cold: written %llu read %llu", (unsigned long long)s.written_n,
          (unsigned long long)s.read_n);
    s = fill_both(normal, 0, N_BIG, "warm");
    CHECK(s.read_n == 1, "warm: read %llu", (unsigned long long)s.read_n);
    s = fill_both(normal, 1, N_BIG, "another tensor index");
    CHECK(s.written_n == 2, "another tensor is another entry: written %llu", (unsigned long long)s.written_n);
    s = fill_both(normal, 0, N_SMALL, "small");
    CHECK(s.drawn_n == 1 && s.written_n == 2, "a small tensor is drawn only: drawn %llu",
          (unsigned long long)s.drawn_n);
    char name[300];
    uint64_t bytes;
    CHECK(cache_files(name, &bytes) == 2, "two files in the folder");
    open_cache(NULL); /* a new process: the files stay */
    s = fill_both(normal, 0, N_BIG, "reopened");
    CHECK(s.read_n == 1 && s.written_n == 0, "reopened: read %llu", (unsigned long long)s.read_n);
}

/* A damaged file, another key's file under this key's name, and a link are each a miss:
 * the fill draws, counts it damaged and stores a good file again. */
static void damaged_files(const cJSON *normal)
{
    char dir_before[300], name[300], cmd[3200];
    uint64_t bytes;
    snprintf(cmd, sizeof cmd, "rm -f '%s'/*.in '%s'/.size", folder, folder);
    CHECK(system(cmd) == 0, "clear the folder");
    open_cache(NULL);
    fill_both(normal, 5, N_BIG, "the one entry");
    CHECK(cache_files(name, &bytes) == 1, "one file");
    snprintf(dir_before, sizeof dir_before, "%s", name);
    flip_last_byte(name);
    ug_input_cache_stats s = fill_both(normal, 5, N_BIG, "a flipped payload bit");
    CHECK(s.damaged_n == 1 && s.written_n == 2, "damaged counted and stored again: damaged %llu written %llu",
          (unsigned long long)s.damaged_n, (unsigned long long)s.written_n);
    s = fill_both(normal, 5, N_BIG, "after the repair");
    CHECK(s.read_n == 1, "the repaired file is read: %llu", (unsigned long long)s.read_n);

    /* another key's bytes under this name: tensor 6's file renamed onto tensor 5's */
    snprintf(cmd, sizeof cmd, "rm -f '%s'/*.in '%s'/.size", folder, folder);
    CHECK(system(cmd) == 0, "clear the folder");
    fill_both(normal, 6, N_BIG, "tensor 6");
    char six[300];
    CHECK(cache_files(six, &bytes) == 1, "tensor 6's file");
    char from[1400], to[1400];
    path_of(six, from, sizeof from);
    path_of(dir_before, to, sizeof to);
    CHECK(rename(from, to) == 0, "rename");
    s = fill_both(normal, 5, N_BIG, "another key's file under the name");
    CHECK(s.damaged_n == 2, "a foreign key is a miss: damaged %llu", (unsigned long long)s.damaged_n);

    /* a link in the folder: not read, removed (its target untouched), a regular file stored */
    char target[1400];
    snprintf(target, sizeof target, "%s.target", folder);
    FILE *f = fopen(target, "w");
    fputs("not a cache file\n", f);
    fclose(f);
    CHECK(unlink(to) == 0 && symlink(target, to) == 0, "link %s", to);
    s = fill_both(normal, 5, N_BIG, "a link under the name");
    struct stat st;
    CHECK(lstat(to, &st) == 0 && S_ISREG(st.st_mode), "the link was replaced by a regular file");
    CHECK(stat(target, &st) == 0 && st.st_size == 17, "the link's target is untouched");
    unlink(target);
}

/* Cap: a folder above it is pruned at open, oldest first; a sweep's writes stop at it. */
static void capped(const cJSON *normal)
{
    char cmd[3200], name[300];
    uint64_t bytes;
    snprintf(cmd, sizeof cmd, "rm -f '%s'/*.in '%s'/.size", folder, folder);
    CHECK(system(cmd) == 0, "clear the folder");
    open_cache("1M"); /* 5 files of 200 KiB fit, the sixth does not */
    for (uint32_t t = 0; t < 8; t++) fill_both(normal, 10 + t, N_BIG, "under a 1M cap");
    ug_input_cache_stats s;
    ug_input_cache_stats_get(&s);
    CHECK(s.written_n == 5 && s.drawn_n == 3, "5 stored, 3 drawn only: %llu %llu", (unsigned long long)s.written_n,
          (unsigned long long)s.drawn_n);
    CHECK(cache_files(name, &bytes) == 5 && bytes <= (1u << 20), "folder within the cap: %llu bytes",
          (unsigned long long)bytes);
    /* make tensor 10's file the most recently used, then reopen under a cap of two files:
     * over 90 % full, so pruned to 75 % (one file), the least recently used first */
    sleep(1);
    fill_both(normal, 10, N_BIG, "touch tensor 10");
    open_cache("450K");
    CHECK(cache_files(name, &bytes) == 1 && bytes <= 450u * 1024 / 4 * 3, "pruned to 75 %% of the cap: %llu bytes",
          (unsigned long long)bytes);
    s = fill_both(normal, 10, N_BIG, "the most recently used survives");
    CHECK(s.read_n == 1, "tensor 10 was kept: read %llu", (unsigned long long)s.read_n);
}

static void checksum_tells_a_bit(void)
{
    unsigned char buf[4099];
    for (size_t k = 0; k < sizeof buf; k++) buf[k] = (unsigned char)(k * 131 + 7);
    uint64_t h = ug_hash64_words(buf, sizeof buf);
    int all = 1;
    for (size_t k = 0; k < sizeof buf; k += 97)
        for (int b = 0; b < 8; b++) {
            buf[k] ^= (unsigned char)(1 << b);
            all &= ug_hash64_words(buf, sizeof buf) != h;
            buf[k] ^= (unsigned char)(1 << b);
        }
    CHECK(all, "every single-bit flip changes the checksum");
    CHECK(ug_hash64_words(buf, 4098) != ug_hash64_words(buf, 4099), "the length is part of it");
}

int main(void)
{
    snprintf(folder, sizeof folder, "%s/input_cache_%ld", check_tmpdir(), (long)getpid());
    cJSON *normal = cJSON_Parse("{\"kind\":\"normal\",\"mean\":0,\"std\":1}");
    checksum_tells_a_bit();
    setenv("ULPGYM_INPUT_CACHE", "off", 1);
    char err[256];
    CHECK(ug_input_cache_open(err, sizeof err) == 1, "ULPGYM_INPUT_CACHE=off turns it off");
    fill_both(normal, 0, N_BIG, "off");
    round_trips(normal);
    damaged_files(normal);
    capped(normal);
    setenv("ULPGYM_INPUT_CACHE_MAX", "lots", 1);
    ug_input_cache_close();
    CHECK(ug_input_cache_open(err, sizeof err) == -1 && strstr(err, "ULPGYM_INPUT_CACHE_MAX"),
          "a bad cap is refused: %s", err);
    ug_input_cache_close();
    char cmd[3200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", folder);
    CHECK(system(cmd) == 0, "remove the folder");
    cJSON_Delete(normal);
    return check_done();
}
