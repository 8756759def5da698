/* guard.c — guarded buffers (see guard.h): one mapping per buffer with a PROT_NONE page at
 * each end, canaries between the pages and the data, a digest of the data, and a table of
 * the live buffers that a fault handler can search without locks. */
#include "core/guard.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static size_t page_size(void)
{
    static size_t page;
    if (!page) {
        long p = sysconf(_SC_PAGESIZE);
        page = p > 0 ? (size_t)p : 4096;
    }
    return page;
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

/* Canary byte i of a buffer's read-write region (counted from its first byte). */
static unsigned char canary_byte(size_t i) { return (unsigned char)(0xA5u + 37u * (unsigned)i); }

static unsigned char *rw_start(const ug_guard_buf *g) { return (unsigned char *)g->map + page_size(); }
static unsigned char *rw_end(const ug_guard_buf *g) { return (unsigned char *)g->map + g->map_len - page_size(); }

/* The live buffers, for ug_guard_describe_fault. Changed only outside a kernel call (the
 * case is built and freed around it), so a handler running during one reads a stable table;
 * a buffer that finds it full is still guarded, just not named in a fault report. */
#define LIVE_MAX 512
static struct {
    uintptr_t map;
    size_t map_len;
    char what[48];
} live[LIVE_MAX];

static void live_add(const ug_guard_buf *g, const char *what)
{
    for (int i = 0; i < LIVE_MAX; i++)
        if (!live[i].map) {
            size_t n = strlen(what);
            if (n >= sizeof live[i].what) n = sizeof live[i].what - 1;
            memcpy(live[i].what, what, n);
            live[i].what[n] = 0;
            live[i].map_len = g->map_len;
            live[i].map = (uintptr_t)g->map;
            return;
        }
}

static void live_remove(const ug_guard_buf *g)
{
    for (int i = 0; i < LIVE_MAX; i++)
        if (live[i].map == (uintptr_t)g->map) live[i].map = 0;
}

int ug_guard_alloc(ug_guard_buf *g, size_t bytes, const char *what)
{
    memset(g, 0, sizeof *g);
    size_t page = page_size();
    if (bytes > SIZE_MAX / 2 - 4 * page) {
        errno = ENOMEM;
        return -1;
    }
    size_t body = round_up(bytes, UG_GUARD_ALIGN);
    size_t inner = round_up(UG_GUARD_SLACK + body + UG_GUARD_SLACK, page);
    size_t len = inner + 2 * page;
    void *map = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return -1;
    if (mprotect((unsigned char *)map + page, inner, PROT_READ | PROT_WRITE)) {
        int e = errno;
        munmap(map, len);
        errno = e;
        return -1;
    }
    g->map = map;
    g->map_len = len;
    g->bytes = bytes;
    g->data = rw_end(g) - UG_GUARD_SLACK - body; /* rw_end is page aligned, so data is UG_GUARD_ALIGN aligned */
    unsigned char *rw = rw_start(g), *end = (unsigned char *)g->data + bytes;
    for (unsigned char *p = rw; p < (unsigned char *)g->data; p++) *p = canary_byte((size_t)(p - rw));
    for (unsigned char *p = end; p < rw_end(g); p++) *p = canary_byte((size_t)(p - rw));
    live_add(g, what);
    return 0;
}

void ug_guard_free(ug_guard_buf *g)
{
    if (g->map) {
        live_remove(g);
        munmap(g->map, g->map_len);
    }
    memset(g, 0, sizeof *g);
}

size_t ug_guard_overhead(void) { return page_size() + 2 * UG_GUARD_SLACK + UG_GUARD_ALIGN; }

static int canaries_intact(const ug_guard_buf *g, const unsigned char *from, const unsigned char *to)
{
    const unsigned char *rw = rw_start(g);
    for (const unsigned char *p = from; p < to; p++)
        if (*p != canary_byte((size_t)(p - rw))) return 0;
    return 1;
}

int ug_guard_canaries(const ug_guard_buf *g)
{
    if (!g->map) return 0;
    const unsigned char *data = g->data;
    return (canaries_intact(g, rw_start(g), data) ? 0 : UG_GUARD_BEFORE) |
           (canaries_intact(g, data + g->bytes, rw_end(g)) ? 0 : UG_GUARD_AFTER);
}

/* A digest any change of one 8-byte word alters for certain (each step is a bijection of
 * the state for a fixed word), several words all but certainly; about 8 bytes per
 * multiply, so sealing costs little beside the kernel. */
static uint64_t digest(const unsigned char *p, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 29;
    }
    for (; i < n; i++) h = (h ^ p[i]) * 0x100000001B3ull;
    return h;
}

void ug_guard_seal(ug_guard_buf *g)
{
    g->sum = g->map ? digest(g->data, g->bytes) : 0;
    g->sealed = g->map != NULL;
}

int ug_guard_changed(const ug_guard_buf *g) { return g->sealed && digest(g->data, g->bytes) != g->sum; }

/* Appends s to buf[*at..len) (truncating, always terminated); async-signal-safe. */
static void append(char *buf, size_t len, size_t *at, const char *s)
{
    while (*s && *at + 1 < len) buf[(*at)++] = *s++;
    if (len) buf[*at < len ? *at : len - 1] = 0;
}

int ug_guard_describe_fault(const void *addr, const char *access, char *buf, size_t len)
{
    uintptr_t a = (uintptr_t)addr, page = page_size();
    for (int i = 0; i < LIVE_MAX; i++) {
        uintptr_t map = live[i].map;
        if (!map || a < map || a >= map + live[i].map_len) continue;
        int lead = a < map + page, trail = a >= map + live[i].map_len - page;
        if (!lead && !trail) return 0; /* inside the read-write part: not a guard fault */
        size_t at = 0;
        append(buf, len, &at, access);
        append(buf, len, &at, lead ? " before the start of " : " past the end of ");
        append(buf, len, &at, live[i].what);
        return 1;
    }
    return 0;
}
