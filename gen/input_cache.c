/* input_cache.c — drawn inputs kept on disk (see input_cache.h for what is kept and why
 * that never changes a bit of an input).
 *
 * A file is FILE_MAGIC, then the key's length, the payload's length and the payload's
 * checksum (ug_hash64_words) as u64s in the host's byte order (a cache is this machine's),
 * then the key text, then the tensor's bytes as ug_dist_fill wrote them. Its name is the
 * SHA-256 of the key in hex with ".in"; the key itself is compared on every read, so a
 * name collision or a file from another build is only a miss. */
#include "gen/input_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/canon.h"
#include "core/sha256.h"
#include "gen/case_memory.h"
#include "gen/dist.h"

#define FILE_MAGIC "UGINPUT1"
#define HEADER_BYTES 32 /* magic, key length, payload length, checksum */
#define NAME_LEN 67     /* 64 hex digits and ".in" */
#define STALE_TMP_SECONDS 3600
#define SIZE_FILE ".size"     /* the folder's bytes and when they were last counted: under flock */
#define RECOUNT_SECONDS 86400 /* an open counts the files again (and prunes) once a day, or when full */

/* What this process and the workers it forks did: in a shared page, for the summary. */
typedef struct {
    uint64_t read_n, read_bytes, written_n, written_bytes, drawn_n, drawn_bytes, damaged_n;
    uint64_t folder_bytes, max_bytes;
    uint64_t tmp_serial;
} shared_counts;

static struct {
    int dirfd; /* -1: the cache is off */
    char dir[4096];
    char draw_id[64]; /* UG_DIST_VERSION and the probe's fingerprint */
    shared_counts *counts;
    int warned;
} cache = {-1, "", "", NULL, 0};

static void count(uint64_t *field, uint64_t by) { __atomic_add_fetch(field, by, __ATOMIC_RELAXED); }

/* A tensor drawn and not stored (small, over the cap, or its file could not be written). */
static void count_drawn_only(size_t bytes)
{
    count(&cache.counts->drawn_n, 1);
    count(&cache.counts->drawn_bytes, bytes);
}

/* What the drawing code gives on a fixed probe: every kind of distribution in every dtype,
 * 1000 elements (whole blocks and a tail). A change of drawing that reaches these elements
 * changes it, and with it every key. */
static uint64_t draw_fingerprint(void)
{
    static const char *probes[] = {
        "{\"kind\":\"uniform\",\"lo\":-1,\"hi\":1}",
        "{\"kind\":\"normal\",\"mean\":0.5,\"std\":2}",
        "{\"kind\":\"half_normal\",\"mean\":0,\"std\":0.01}",
        "{\"kind\":\"wide\",\"lo_exp\":-30,\"hi_exp\":30}",
        "{\"kind\":\"outliers\",\"std\":1,\"p\":0.05,\"scale\":100}",
        "{\"kind\":\"randint\",\"lo\":-128,\"hi\":127}",
        "{\"kind\":\"const\",\"value\":0.3}",
        "{\"kind\":\"choice\",\"values\":[-1,0,2.5],\"p\":[1,2,3]}",
    };
    enum { N = 1000 };
    static uint32_t buf[N]; /* 4 bytes an element at most */
    uint64_t h = UG_HASH64_INIT;
    for (size_t k = 0; k < sizeof probes / sizeof *probes; k++) {
        cJSON *d = cJSON_Parse(probes[k]);
        for (int dt = 0; d && dt < UG_DT_COUNT; dt++) {
            char err[256];
            memset(buf, 0, sizeof buf);
            int rc = ug_dist_fill(d, 12345 + k, (uint32_t)dt, (ug_dtype)dt, buf, N, err, sizeof err);
            h = ug_hash64_update(h, &rc, sizeof rc);
            h = ug_hash64_update(h, buf, sizeof buf);
        }
        cJSON_Delete(d);
    }
    return ug_hash64_finish(h);
}

/* The folder the environment names: $ULPGYM_INPUT_CACHE, else the XDG cache home's or the
 * home's .cache/ulpgym/inputs; 1 when off. */
static int choose_dir(char *out, size_t len)
{
    const char *env = getenv("ULPGYM_INPUT_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (env && (!*env || !strcmp(env, "off") || !strcmp(env, "0"))) return 1;
    int n = env             ? snprintf(out, len, "%s", env)
            : xdg && *xdg   ? snprintf(out, len, "%s/ulpgym/inputs", xdg)
            : home && *home ? snprintf(out, len, "%s/.cache/ulpgym/inputs", home)
                            : -1;
    return n < 0 ? 1 : (size_t)n >= len ? -1 : 0;
}

/* mkdir -p of path's folders, 0700 where made. */
static int make_dirs(const char *path)
{
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            if (mkdir(p, 0700) && errno != EEXIST) return -1;
            *s = '/';
        }
    return mkdir(p, 0700) && errno != EEXIST ? -1 : 0;
}

static int is_cache_name(const char *name)
{
    if (strlen(name) != NAME_LEN || strcmp(name + 64, ".in")) return 0;
    for (int k = 0; k < 64; k++)
        if (!((name[k] >= '0' && name[k] <= '9') || (name[k] >= 'a' && name[k] <= 'f'))) return 0;
    return 1;
}

typedef struct {
    char name[NAME_LEN + 1];
    struct timespec mtime;
    uint64_t bytes;
} entry;

static int older_first(const void *a, const void *b)
{
    const struct timespec *x = &((const entry *)a)->mtime, *y = &((const entry *)b)->mtime;
    if (x->tv_sec != y->tv_sec) return (x->tv_sec > y->tv_sec) - (x->tv_sec < y->tv_sec);
    return (x->tv_nsec > y->tv_nsec) - (x->tv_nsec < y->tv_nsec);
}

/* Lists the cache's files (regular files with cache names only; a leftover temporary file
 * older than an hour is removed) and, when they hold more than 90 % of max, deletes the
 * least recently used down to 75 %: room for the next runs' new tensors, so a changed plan
 * is cached too. Returns the bytes left. */
static uint64_t prune(int dirfd, uint64_t max)
{
    DIR *d = fdopendir(dup(dirfd));
    if (!d) return 0;
    entry *list = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    time_t now = time(NULL);
    for (struct dirent *e; (e = readdir(d));) {
        struct stat st;
        if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode)) continue;
        if (!strncmp(e->d_name, ".tmp-", 5) && now - st.st_mtime > STALE_TMP_SECONDS) unlinkat(dirfd, e->d_name, 0);
        if (!is_cache_name(e->d_name)) continue;
        if (n == cap) {
            entry *grown = realloc(list, (cap = cap ? 2 * cap : 256) * sizeof *list);
            if (!grown) break;
            list = grown;
        }
        memcpy(list[n].name, e->d_name, NAME_LEN + 1);
        list[n].mtime = st.st_mtim;
        list[n].bytes = (uint64_t)st.st_size;
        total += list[n++].bytes;
    }
    closedir(d);
    qsort(list, n, sizeof *list, older_first);
    if (total > max / 10 * 9)
        for (size_t k = 0; k < n && total > max / 4 * 3; k++)
            if (!unlinkat(dirfd, list[k].name, 0)) total -= list[k].bytes;
    free(list);
    return total;
}

/* The folder's size file, opened and locked (closing it unlocks): one process at a time
 * reads or changes the size or prunes, so processes that share the folder (a sweep's
 * workers, shards started together) never take it past its cap. */
static int lock_size_file(int dirfd)
{
    int fd = openat(dirfd, SIZE_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    while (fd >= 0 && flock(fd, LOCK_EX))
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    return fd;
}

/* The size file: the folder's bytes and the time they were last counted (0: never). */
typedef struct {
    uint64_t bytes;
    int64_t counted;
} folder_size;

static folder_size read_size(int fd)
{
    char buf[64] = {0};
    folder_size s = {0, 0};
    if (pread(fd, buf, sizeof buf - 1, 0) > 0 && sscanf(buf, "%" SCNu64 " %" SCNd64, &s.bytes, &s.counted) != 2)
        s = (folder_size){0, 0}; /* not ours: count again */
    return s;
}

/* Always 42 bytes, so a new text overwrites the old one whole. A failed write leaves the text
 * before it (the cache is best effort; a day later an open counts again). */
static void write_size(int fd, folder_size s)
{
    char buf[64];
    int n = snprintf(buf, sizeof buf, "%020" PRIu64 " %020" PRId64 "\n", s.bytes, s.counted);
    ssize_t written = pwrite(fd, buf, (size_t)n, 0);
    (void)written;
}

/* Adds delta to the folder's size (a file about to be stored: delta > 0, taken only if the
 * size stays within the cap; one that then could not be: delta < 0): 1 when it did. */
static int reserve(int64_t delta)
{
    int fd = lock_size_file(cache.dirfd);
    if (fd < 0) return 0;
    folder_size s = read_size(fd);
    int ok = delta < 0 || s.bytes + (uint64_t)delta <= cache.counts->max_bytes;
    s.bytes = delta < 0 && (uint64_t)-delta > s.bytes ? 0 : s.bytes + (uint64_t)delta;
    if (ok) write_size(fd, s);
    close(fd);
    return ok;
}

int ug_input_cache_open(char *err, size_t errlen)
{
    if (cache.dirfd >= 0) return 0;
    char dir[4096];
    int rc = choose_dir(dir, sizeof dir);
    if (rc) {
        if (rc < 0) snprintf(err, errlen, "input cache: the folder name is too long");
        return rc;
    }
    uint64_t max = UG_INPUT_CACHE_DEFAULT_MAX;
    const char *max_env = getenv("ULPGYM_INPUT_CACHE_MAX");
    if (max_env && ug_case_memory_parse(max_env, &max)) {
        snprintf(err, errlen, "input cache: ULPGYM_INPUT_CACHE_MAX takes a byte count such as 512M or 4G, not \"%s\"",
                 max_env);
        return -1;
    }
    int fd = make_dirs(dir) ? -1 : open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), size_fd = -1;
    if (fd >= 0 && (size_fd = lock_size_file(fd)) < 0) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "input cache %s: %s%s", dir, strerror(e),
                 e == ELOOP || e == ENOTDIR ? " (a link is not followed)" : "");
        return -1;
    }
    shared_counts *c = mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (c == MAP_FAILED) {
        close(fd);
        close(size_fd);
        snprintf(err, errlen, "input cache: %s", strerror(errno));
        return -1;
    }
    memset(c, 0, sizeof *c);
    c->max_bytes = max;
    folder_size s = read_size(size_fd);
    int64_t now = (int64_t)time(NULL);
    if (!s.counted || now - s.counted > RECOUNT_SECONDS || now < s.counted || s.bytes > max / 10 * 9) {
        s = (folder_size){prune(fd, max), now}; /* counted under the lock */
        write_size(size_fd, s);
    }
    c->folder_bytes = s.bytes;
    close(size_fd);
    snprintf(cache.dir, sizeof cache.dir, "%s", dir);
    snprintf(cache.draw_id, sizeof cache.draw_id, "%d/%016" PRIx64, UG_DIST_VERSION, draw_fingerprint());
    cache.counts = c;
    cache.dirfd = fd;
    return 0;
}

void ug_input_cache_close(void)
{
    if (cache.dirfd < 0) return;
    close(cache.dirfd);
    munmap(cache.counts, sizeof *cache.counts);
    cache.dirfd = -1;
    cache.counts = NULL;
    cache.warned = 0;
}

/* The key text of a drawn tensor (malloc'd) and its file name. */
static char *key_of(const cJSON *dist, uint64_t seed, uint32_t tensor, ug_dtype dt, size_t n, char name[NAME_LEN + 1])
{
    char *canon = ug_json_canonical(dist);
    if (!canon) return NULL;
    size_t len = strlen(canon) + 256;
    char *key = malloc(len);
    if (key)
        snprintf(key, len, "ulpgym drawn input\ndraw %s\nseed %" PRIu64 "\ntensor %u\ndtype %s\nn %zu\ndist %s\n",
                 cache.draw_id, seed, tensor, ug_dtype_name(dt), n, canon);
    free(canon);
    if (key) {
        ug_sha256 s;
        ug_sha256_init(&s);
        ug_sha256_update(&s, key, strlen(key));
        ug_sha256_hex(&s, name);
        memcpy(name + 64, ".in", 4);
    }
    return key;
}

/* Reads the entry name into data: 0 on a hit, 1 when there is none, -1 when the file is
 * there but is not this key's bytes (damaged, or another build's under a colliding name). */
static int read_entry(const char *name, const char *key, void *data, size_t bytes)
{
    int fd = openat(cache.dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return errno == ENOENT ? 1 : -1;
    size_t klen = strlen(key);
    struct stat st;
    uint64_t head[4];
    char *got = malloc(klen);
    int ok = got && !fstat(fd, &st) && S_ISREG(st.st_mode) && (uint64_t)st.st_size == HEADER_BYTES + klen + bytes &&
             !ug_io_full(fd, head, sizeof head, 0) && !memcmp(head, FILE_MAGIC, 8) && head[1] == klen &&
             head[2] == bytes && !ug_io_full(fd, got, klen, 0) && !memcmp(got, key, klen) &&
             !ug_io_full(fd, data, bytes, 0) && ug_hash64_words(data, bytes) == head[3];
    if (ok) futimens(fd, NULL); /* recently used: the last to be pruned */
    free(got);
    close(fd);
    return ok ? 0 : -1;
}

static void warn_once(const char *what)
{
    if (cache.warned++) return;
    fprintf(stderr, "ulpgym: warning: input cache %s: %s (inputs are drawn instead)\n", cache.dir, what);
}

/* Stores a drawn tensor under name, within the cap: a temporary file created
 * anew (O_EXCL, never through a link), renamed into place. A failure only costs the entry. */
static void write_entry(const char *name, const char *key, const void *data, size_t bytes)
{
    size_t klen = strlen(key);
    uint64_t need = HEADER_BYTES + klen + bytes;
    if (!reserve((int64_t)need)) {
        count_drawn_only(bytes);
        return;
    }
    char tmp[64];
    snprintf(tmp, sizeof tmp, ".tmp-%ld-%" PRIu64, (long)getpid(),
             __atomic_add_fetch(&cache.counts->tmp_serial, 1, __ATOMIC_RELAXED));
    int fd = openat(cache.dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    uint64_t head[4] = {0, klen, bytes, ug_hash64_words(data, bytes)};
    memcpy(head, FILE_MAGIC, 8);
    int ok = fd >= 0 && !ug_io_full(fd, head, sizeof head, 1) && !ug_io_full(fd, (void *)key, klen, 1) &&
             !ug_io_full(fd, (void *)data, bytes, 1);
    if (fd >= 0 && close(fd)) ok = 0;
    if (ok && !renameat(cache.dirfd, tmp, cache.dirfd, name)) {
        count(&cache.counts->written_n, 1);
        count(&cache.counts->written_bytes, bytes);
        return;
    }
    warn_once(strerror(errno));
    if (fd >= 0) unlinkat(cache.dirfd, tmp, 0);
    reserve(-(int64_t)need);
    count_drawn_only(bytes);
}

int ug_input_cache_fill(const cJSON *dist, uint64_t seed, uint32_t tensor, ug_dtype dt, void *data, size_t n, char *err,
                        size_t errlen)
{
    size_t bytes = n * (size_t)ug_dtype_size(dt);
    char name[NAME_LEN + 1];
    char *key = cache.dirfd >= 0 && bytes >= UG_INPUT_CACHE_MIN_BYTES ? key_of(dist, seed, tensor, dt, n, name) : NULL;
    int found = key ? read_entry(name, key, data, bytes) : 1;
    if (found == 0) {
        count(&cache.counts->read_n, 1);
        count(&cache.counts->read_bytes, bytes);
        free(key);
        return 0;
    }
    if (found < 0) {
        count(&cache.counts->damaged_n, 1);
        unlinkat(cache.dirfd, name, 0); /* a name in our folder: a link there goes, its target stays */
    }
    int rc = ug_dist_fill(dist, seed, tensor, dt, data, n, err, errlen);
    if (!rc && key)
        write_entry(name, key, data, bytes);
    else if (!rc && cache.dirfd >= 0)
        count_drawn_only(bytes);
    free(key);
    return rc;
}

void ug_input_cache_stats_get(ug_input_cache_stats *s)
{
    memset(s, 0, sizeof *s);
    if (cache.dirfd < 0) return;
    shared_counts c;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    memcpy(&c, cache.counts, sizeof c);
    *s = (ug_input_cache_stats){c.read_n,      c.read_bytes, c.written_n, c.written_bytes, c.drawn_n,
                                c.drawn_bytes, c.damaged_n,  0,           c.max_bytes};
    int fd = lock_size_file(cache.dirfd);
    s->folder_bytes = fd < 0 ? c.folder_bytes : read_size(fd).bytes;
    if (fd >= 0) close(fd);
}

static double mib(uint64_t b) { return (double)b / (1 << 20); }

void ug_input_cache_summary(char *buf, size_t len)
{
    ug_input_cache_stats s;
    ug_input_cache_stats_get(&s);
    if (cache.dirfd < 0) {
        if (len) buf[0] = 0;
        return;
    }
    int n = snprintf(buf, len,
                     "input cache %s: %" PRIu64 " tensors read (%.1f MiB), %" PRIu64
                     " drawn and stored (%.1f MiB), %" PRIu64 " drawn only (%.1f MiB); %.0f of %.0f MiB used",
                     cache.dir, s.read_n, mib(s.read_bytes), s.written_n, mib(s.written_bytes), s.drawn_n,
                     mib(s.drawn_bytes), mib(s.folder_bytes), mib(s.max_bytes));
    if (s.damaged_n && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "; %" PRIu64 " damaged files drawn afresh", s.damaged_n);
}
