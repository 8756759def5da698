/* guard.c — guarded buffers (see guard.h): one mapping per buffer with a PROT_NONE page at
 * each end, canaries between the pages and the data, a digest of the data, a table of the
 * live buffers that a fault handler can search without locks, and a small cache of freed
 * mappings, so that a sweep of small cases does not map and unmap every tensor (quarantined
 * while a plugin's kernels run). */
#include "core/guard.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Under AddressSanitizer (the fuzz build) the canaries are also poisoned, so a sim kernel's
 * read or write in them is reported where it happens, as it was in a heap redzone. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UG_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(UG_ASAN)
#define UG_ASAN 1
#endif
#ifdef UG_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(from, to) ASAN_POISON_MEMORY_REGION(from, (size_t)((const char *)(to) - (const char *)(from)))
#define UNPOISON(from, to) ASAN_UNPOISON_MEMORY_REGION(from, (size_t)((const char *)(to) - (const char *)(from)))
#else
#define POISON(from, to) ((void)(from), (void)(to))
#define UNPOISON(from, to) ((void)(from), (void)(to))
#endif

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

/* The canary: byte i of a buffer's read-write region (counted from its first byte) is
 * 0xA5 + 37 i mod 256, a pattern of period 256; twice over, so any 256 bytes of it start
 * at pattern + i % 256. */
#define CANARY_PERIOD 256
static unsigned char pattern[2 * CANARY_PERIOD];

static const unsigned char *canary_at(size_t i)
{
    if (!pattern[0])
        for (unsigned k = 0; k < sizeof pattern; k++) pattern[k] = (unsigned char)(0xA5u + 37u * k);
    return pattern + i % CANARY_PERIOD;
}

static unsigned char *rw_start(const ug_guard_buf *g) { return (unsigned char *)g->map + page_size(); }
static unsigned char *rw_end(const ug_guard_buf *g) { return (unsigned char *)g->map + g->map_len - page_size(); }

static void canary_fill(const ug_guard_buf *g, void *from, const void *to)
{
    for (unsigned char *p = from; p < (const unsigned char *)to;) {
        size_t at = (size_t)(p - rw_start(g)), n = CANARY_PERIOD - at % CANARY_PERIOD;
        if (n > (size_t)((const unsigned char *)to - p)) n = (size_t)((const unsigned char *)to - p);
        memcpy(p, canary_at(at), n);
        p += n;
    }
}

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

/* Freed buffers kept mapped for the next case, as malloc keeps freed memory: mapping,
 * unmapping and faulting in fresh pages cost microseconds per tensor (over a hundred on a
 * loaded VM), which a small case's few tensors would pay on every case. Bounded: buffers
 * up to CACHE_BUF_MAX, CACHE_TOTAL_MAX in all (within the case memory estimate's fixed
 * base, gen/case_memory.h); larger ones are unmapped, their page faults small beside the
 * work on them. */
#define CACHE_SLOTS 128
#define CACHE_BUF_MAX ((size_t)1 << 20)
#define CACHE_TOTAL_MAX ((size_t)16 << 20)
static struct {
    void *map;
    size_t map_len;
    char what[48];       /* what it was (for a fault in it: a kernel writing into a freed buffer) */
    unsigned long freed; /* when, in frees counted */
    double freed_ms;     /* and on the monotonic clock */
    int locked;          /* quarantined: PROT_NONE until handed out again */
} cache[CACHE_SLOTS];
static size_t cache_total;
static unsigned long cache_frees;

/* With quarantine on (ug_guard_quarantine), a cached mapping is inaccessible until it is
 * handed out again, so a kernel that keeps writing through an old pointer after it returned
 * (a device stream never synchronised) faults, named, instead of corrupting a later case's
 * tensor. Off by default: a built-in kernel runs no threads and cannot write after it
 * returned, and the two mprotect calls a tensor then cost (each a TLB flush) were 9 % of a
 * nightly sweep's CPU on a VM. */
static int quarantine(void *map, size_t len, int prot)
{
    return mprotect((unsigned char *)map + page_size(), len - 2 * page_size(), prot);
}

/* The cached mapping freed longest ago among those of at least len bytes and not much more
 * (its extra bytes become head canary, filled on every use); a quarantined one never among
 * the last QUARANTINE_FREES freed: the buffers of the last few cases stay inaccessible, so
 * a kernel still writing into one after its case ended faults (named) instead of landing in
 * the next case's tensor; NULL if none. */
#define QUARANTINE_FREES 8
static int quarantine_on;
static double quarantine_ms; /* ug_guard_quarantine: also this long since its free */

void ug_guard_quarantine(double ms)
{
    quarantine_on = 1;
    quarantine_ms = ms;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int quarantine_over(int i)
{
    return cache_frees - cache[i].freed >= QUARANTINE_FREES &&
           (quarantine_ms <= 0 || now_ms() - cache[i].freed_ms >= quarantine_ms);
}

static void *cache_take(size_t len, size_t *got)
{
    int best = -1;
    for (int i = 0; i < CACHE_SLOTS; i++)
        if (cache[i].map && cache[i].map_len >= len && cache[i].map_len <= len + len / 4 + page_size() &&
            (best < 0 || cache[i].freed < cache[best].freed) && (!cache[i].locked || quarantine_over(i)))
            best = i;
    if (best < 0) return NULL;
    void *map = cache[best].map;
    *got = cache[best].map_len;
    if (cache[best].locked && quarantine(map, *got, PROT_READ | PROT_WRITE))
        return NULL; /* left in the cache, unusable: rare */
    cache_total -= *got;
    cache[best].map = NULL;
    return map;
}

static int cache_put(void *map, size_t len, const char *what)
{
    if (len > CACHE_BUF_MAX || cache_total + len > CACHE_TOTAL_MAX) return 0;
    for (int i = 0; i < CACHE_SLOTS; i++)
        if (!cache[i].map) {
            if (quarantine_on && quarantine(map, len, PROT_NONE)) return 0;
            snprintf(cache[i].what, sizeof cache[i].what, "%s", what);
            cache[i].freed = ++cache_frees;
            cache[i].freed_ms = quarantine_ms > 0 ? now_ms() : 0.0;
            cache[i].locked = quarantine_on;
            cache[i].map_len = len;
            cache[i].map = map;
            cache_total += len;
            return 1;
        }
    return 0;
}

/* A fresh mapping of len bytes: inaccessible but for the read-write part between its
 * first and last pages. NULL with errno set. */
static void *map_fresh(size_t len)
{
    size_t page = page_size();
    void *map = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return NULL;
    if (mprotect((unsigned char *)map + page, len - 2 * page, PROT_READ | PROT_WRITE)) {
        int e = errno;
        munmap(map, len);
        errno = e;
        return NULL;
    }
    return map;
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
    size_t len = round_up(UG_GUARD_SLACK + body + UG_GUARD_SLACK, page) + 2 * page;
    void *map = cache_take(len, &len);
    int reused = map != NULL;
    if (!reused && !(map = map_fresh(len))) return -1;
    g->map = map;
    g->map_len = len;
    g->bytes = bytes;
    g->data = rw_end(g) - UG_GUARD_SLACK - body; /* rw_end is page aligned, so data is UG_GUARD_ALIGN aligned */
    UNPOISON(rw_start(g), rw_end(g));            /* a reused buffer's canaries were poisoned */
    if (reused) memset(g->data, 0, bytes);       /* a fresh mapping is zeroed already */
    canary_fill(g, rw_start(g), g->data);
    canary_fill(g, (unsigned char *)g->data + bytes, rw_end(g));
    POISON(rw_start(g), g->data);
    POISON((unsigned char *)g->data + bytes, rw_end(g));
    live_add(g, what);
    return 0;
}

void ug_guard_free(ug_guard_buf *g)
{
    if (g->map) {
        char what[48] = "";
        for (int i = 0; i < LIVE_MAX; i++)
            if (live[i].map == (uintptr_t)g->map) snprintf(what, sizeof what, "%s", live[i].what);
        live_remove(g);
        UNPOISON(rw_start(g), rw_end(g)); /* quarantined or unmapped: no longer the sanitizer's to watch */
        if (!cache_put(g->map, g->map_len, what)) { munmap(g->map, g->map_len); }
    }
    memset(g, 0, sizeof *g);
}

size_t ug_guard_overhead(void) { return page_size() + 2 * UG_GUARD_SLACK + UG_GUARD_ALIGN; }

static int canaries_intact(const ug_guard_buf *g, const unsigned char *from, const unsigned char *to)
{
    int intact = 1;
    UNPOISON(from, to);
    for (const unsigned char *p = from; p < to && intact;) {
        size_t at = (size_t)(p - rw_start(g)), n = CANARY_PERIOD - at % CANARY_PERIOD;
        if (n > (size_t)(to - p)) n = (size_t)(to - p);
        intact = memcmp(p, canary_at(at), n) == 0;
        p += n;
    }
    POISON(from, to);
    return intact;
}

int ug_guard_canaries(const ug_guard_buf *g)
{
    if (!g->map) return 0;
    const unsigned char *data = g->data;
    return (canaries_intact(g, rw_start(g), data) ? 0 : UG_GUARD_BEFORE) |
           (canaries_intact(g, data + g->bytes, rw_end(g)) ? 0 : UG_GUARD_AFTER);
}

/* A digest that any change within one 8-byte word alters for certain (every step is a
 * bijection of the state for a fixed word, and so is folding the lanes together), and any
 * other all but certainly; eight independent lanes keep the multiplier busy. */
static uint64_t mix(uint64_t h, uint64_t w)
{
    h = (h ^ w) * 0xFF51AFD7ED558CCDull;
    return h ^ (h >> 29);
}

#define LANES 8
static uint64_t digest(const unsigned char *p, size_t n)
{
    uint64_t lane[LANES];
    for (int k = 0; k < LANES; k++) lane[k] = 0x9E3779B97F4A7C15ull * (uint64_t)(k + 1) ^ n;
    size_t i = 0;
    for (; i + 8 * LANES <= n; i += 8 * LANES)
        for (int k = 0; k < LANES; k++) {
            uint64_t w;
            memcpy(&w, p + i + 8 * k, 8);
            lane[k] = mix(lane[k], w);
        }
    uint64_t h = lane[0];
    for (int k = 1; k < LANES; k++) h = mix(h, lane[k]);
    for (; i < n; i++) h = mix(h, p[i]);
    return h;
}

void ug_guard_seal(ug_guard_buf *g)
{
    g->sum = g->map ? digest(g->data, g->bytes) : 0;
    g->sealed = g->map != NULL;
}

int ug_guard_changed(const ug_guard_buf *g) { return g->sealed && digest(g->data, g->bytes) != g->sum; }

void *ug_guard_snapshot(ug_guard_buf *g)
{
    void *copy = g->map ? malloc(g->bytes ? g->bytes : 1) : NULL;
    if (!copy) {
        ug_guard_seal(g);
        return NULL;
    }
    memcpy(copy, g->data, g->bytes);
    g->sum = digest(copy, g->bytes); /* the copy's: a write landing during the memcpy is a change */
    g->sealed = 1;
    return copy;
}

/* Appends s to buf[*at..len) (truncating, always terminated); async-signal-safe. */
static void append(char *buf, size_t len, size_t *at, const char *s)
{
    while (*s && *at + 1 < len) buf[(*at)++] = *s++;
    if (len) buf[*at < len ? *at : len - 1] = 0;
}

/* A fault in a quarantined cached buffer: a kernel still writing after it returned. */
static int describe_freed(uintptr_t a, const char *access, char *buf, size_t len)
{
    for (int i = 0; i < CACHE_SLOTS; i++) {
        uintptr_t map = (uintptr_t)cache[i].map;
        if (!map || !cache[i].locked || a < map || a >= map + cache[i].map_len) continue;
        size_t at = 0;
        append(buf, len, &at, access);
        append(buf, len, &at, " into the freed ");
        append(buf, len, &at, cache[i].what[0] ? cache[i].what : "buffer");
        append(buf, len, &at,
               " of an earlier case (a kernel still writing after it returned: a missing device "
               "synchronisation?)");
        return 1;
    }
    return 0;
}

int ug_guard_describe_fault(const void *addr, const char *access, char *buf, size_t len)
{
    uintptr_t a = (uintptr_t)addr, page = page_size();
    if (describe_freed(a, access, buf, len)) return 1;
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
