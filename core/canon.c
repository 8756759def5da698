/* canon.c — canonical JSON printer and the case-ID hash (see canon.h for the rules). */
#include "core/canon.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    char *buf;
    size_t len, cap;
    int failed;
} strbuf;

static void sb_put(strbuf *sb, const char *s, size_t n)
{
    if (sb->failed) return;
    if (sb->len + n + 1 > sb->cap) {
        size_t cap = sb->cap ? sb->cap * 2 : 256;
        while (cap < sb->len + n + 1) cap *= 2;
        char *nb = realloc(sb->buf, cap);
        if (!nb) {
            sb->failed = 1;
            return;
        }
        sb->buf = nb;
        sb->cap = cap;
    }
    memcpy(sb->buf + sb->len, s, n);
    sb->len += n;
    sb->buf[sb->len] = 0;
}

static void sb_puts(strbuf *sb, const char *s) { sb_put(sb, s, strlen(s)); }

void ug_format_double(double x, char *buf)
{
    if (x == floor(x) && fabs(x) < 0x1p53) {
        snprintf(buf, 32, "%.0f", x);
        if (strcmp(buf, "-0") == 0) strcpy(buf, "0");
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, x);
        if (strtod(buf, NULL) == x) return;
    }
}

static void put_string(strbuf *sb, const char *s)
{
    sb_puts(sb, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            sb_put(sb, esc, 2);
        } else if (*p < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            sb_puts(sb, esc);
        } else {
            sb_put(sb, (const char *)p, 1);
        }
    }
    sb_puts(sb, "\"");
}

static int cmp_keys(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    return strcmp(x->string, y->string);
}

static void put_item(strbuf *sb, const cJSON *it)
{
    if (cJSON_IsObject(it)) {
        int n = cJSON_GetArraySize(it), i = 0;
        const cJSON **kids = malloc(sizeof *kids * (size_t)(n ? n : 1));
        if (!kids) {
            sb->failed = 1;
            return;
        }
        for (const cJSON *c = it->child; c; c = c->next) kids[i++] = c;
        qsort(kids, (size_t)n, sizeof *kids, cmp_keys);
        sb_puts(sb, "{");
        for (i = 0; i < n; i++) {
            if (i) sb_puts(sb, ",");
            put_string(sb, kids[i]->string);
            sb_puts(sb, ":");
            put_item(sb, kids[i]);
        }
        sb_puts(sb, "}");
        free(kids);
    } else if (cJSON_IsArray(it)) {
        sb_puts(sb, "[");
        for (const cJSON *c = it->child; c; c = c->next) {
            if (c != it->child) sb_puts(sb, ",");
            put_item(sb, c);
        }
        sb_puts(sb, "]");
    } else if (cJSON_IsString(it)) {
        put_string(sb, it->valuestring);
    } else if (cJSON_IsNumber(it)) {
        char num[32];
        if (!isfinite(it->valuedouble)) {
            sb->failed = 1;
            return;
        }
        ug_format_double(it->valuedouble, num);
        sb_puts(sb, num);
    } else if (cJSON_IsBool(it)) {
        sb_puts(sb, cJSON_IsTrue(it) ? "true" : "false");
    } else {
        sb_puts(sb, "null");
    }
}

char *ug_json_canonical(const cJSON *item)
{
    strbuf sb = {0};
    put_item(&sb, item);
    if (sb.failed) {
        free(sb.buf);
        return NULL;
    }
    return sb.buf;
}

#define FNV_PRIME 0x100000001b3ULL /* FNV-1a 64 */

uint64_t ug_hash64_update(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= FNV_PRIME;
    }
    return h;
}

static uint64_t rotl64(uint64_t x, int r) { return x << r | x >> (64 - r); }

uint64_t ug_hash64_words(const void *data, size_t len)
{
    const uint64_t P1 = 0x9e3779b185ebca87ULL, P2 = 0xc2b2ae3d27d4eb4fULL;
    const unsigned char *p = data;
    uint64_t lane[4] = {P1, P2, ~P1, ~P2}, w;
    size_t k = 0;
    for (; k + 32 <= len; k += 32)
        for (int j = 0; j < 4; j++) {
            memcpy(&w, p + k + 8 * j, 8);
            lane[j] = rotl64(lane[j] + w * P2, 31) * P1;
        }
    uint64_t h = (uint64_t)len * P1;
    for (int j = 0; j < 4; j++) h = rotl64(h ^ lane[j], 27) * P2 + P1;
    return ug_hash64_finish(ug_hash64_update(h, p + k, len - k));
}

void ug_hash64_jump_make(ug_hash64_jump *j, const void *data, size_t len)
{
    j->mul = 1;
    for (size_t i = 0; i < len; i++) j->mul *= FNV_PRIME;
    for (uint64_t r = 0; r < 256; r++) j->add[r] = ug_hash64_update(r, data, len) - r * j->mul;
}

/* The bytes [0, n) of eight lanes, their states in locals: with the caller's arrays the
 * compiler kept every state in memory (a byte store may alias anything), a store and a
 * reload per byte; in registers the eight multiplications overlap (the plan expansion's
 * hashing, bench plan: docs/PERFORMANCE.md). The same operations on each lane. */
static void lanes8_common(uint64_t *state, const char *const *data, size_t n)
{
    /* named locals, not an array: at -O2 gcc keeps an array of eight on the stack */
    uint64_t h0 = state[0], h1 = state[1], h2 = state[2], h3 = state[3];
    uint64_t h4 = state[4], h5 = state[5], h6 = state[6], h7 = state[7];
    const unsigned char *p0 = (const unsigned char *)data[0], *p1 = (const unsigned char *)data[1];
    const unsigned char *p2 = (const unsigned char *)data[2], *p3 = (const unsigned char *)data[3];
    const unsigned char *p4 = (const unsigned char *)data[4], *p5 = (const unsigned char *)data[5];
    const unsigned char *p6 = (const unsigned char *)data[6], *p7 = (const unsigned char *)data[7];
    for (size_t i = 0; i < n; i++) {
        h0 = (h0 ^ p0[i]) * FNV_PRIME, h1 = (h1 ^ p1[i]) * FNV_PRIME;
        h2 = (h2 ^ p2[i]) * FNV_PRIME, h3 = (h3 ^ p3[i]) * FNV_PRIME;
        h4 = (h4 ^ p4[i]) * FNV_PRIME, h5 = (h5 ^ p5[i]) * FNV_PRIME;
        h6 = (h6 ^ p6[i]) * FNV_PRIME, h7 = (h7 ^ p7[i]) * FNV_PRIME;
    }
    state[0] = h0, state[1] = h1, state[2] = h2, state[3] = h3;
    state[4] = h4, state[5] = h5, state[6] = h6, state[7] = h7;
}

void ug_hash64_update_lanes(uint64_t *state, size_t lanes, const char *const *data, const size_t *len)
{
    size_t most = 0, least = lanes ? len[0] : 0;
    for (size_t l = 0; l < lanes; l++) {
        most = len[l] > most ? len[l] : most;
        least = len[l] < least ? len[l] : least;
    }
    if (lanes == 8)
        lanes8_common(state, data, least);
    else
        for (size_t i = 0; i < least; i++) /* every lane has byte i */
            for (size_t l = 0; l < lanes; l++) state[l] = (state[l] ^ (unsigned char)data[l][i]) * FNV_PRIME;
    for (size_t i = least; i < most; i++)
        for (size_t l = 0; l < lanes; l++)
            if (i < len[l]) state[l] = (state[l] ^ (unsigned char)data[l][i]) * FNV_PRIME;
}

uint64_t ug_hash64(const void *data, size_t len)
{
    return ug_hash64_finish(ug_hash64_update(UG_HASH64_INIT, data, len));
}

uint64_t ug_hash64_finish(uint64_t h)
{
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    h ^= h >> 31;
    return h;
}

/* What kind of file st is, for a refusal ("a FIFO"). */
static const char *file_kind(const struct stat *st)
{
    return S_ISDIR(st->st_mode)    ? "a folder"
           : S_ISFIFO(st->st_mode) ? "a FIFO"
           : S_ISCHR(st->st_mode)  ? "a character device"
           : S_ISBLK(st->st_mode)  ? "a block device"
           : S_ISSOCK(st->st_mode) ? "a socket"
                                   : "not a plain file";
}

/* Opens path for reading only if it is a regular file of at most max bytes: O_NONBLOCK, so
 * a FIFO without a writer does not block the open, then fstat before any read. -1 with a
 * message otherwise; *size gets the file's size. */
int ug_regular_file_open(const char *path, size_t max, size_t *size, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode) || (uintmax_t)st.st_size > max) {
        if (!S_ISREG(st.st_mode))
            snprintf(err, errlen, "%s: is %s, not a regular file: not read", path, file_kind(&st));
        else
            snprintf(err, errlen, "%s: %jd bytes, more than the %zu MiB a file read as text may have: not read", path,
                     (intmax_t)st.st_size, max >> 20);
        close(fd);
        return -1;
    }
    *size = (size_t)st.st_size;
    return fd;
}

int ug_io_full(int fd, void *p, size_t n, int writing)
{
    unsigned char *c = p;
    while (n) {
        ssize_t k = writing ? write(fd, c, n) : read(fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

char *ug_text_file_read(const char *path, char *err, size_t errlen)
{
    size_t size, n = 0;
    int fd = ug_regular_file_open(path, UG_TEXT_FILE_MAX, &size, err, errlen);
    if (fd < 0) return NULL;
    char *buf = malloc(size + 1);
    while (buf && n < size) { /* the size read at open: a file that grows is read to that size */
        ssize_t got = read(fd, buf + n, size - n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        n += (size_t)got;
    }
    close(fd);
    if (!buf)
        snprintf(err, errlen, "%s: out of memory", path);
    else
        buf[n] = 0;
    return buf;
}
