/* npy.c — the strict .npy reader and writer (see npy.h).
 *
 * The header is a Python dict literal; rather than a general literal parser this is a
 * tiny recursive-descent reader for exactly the three keys the format defines, each
 * value of the one type it may have. Every read is bounds-checked against the header's
 * end, so any byte string is safe input. */
#include "core/npy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
    const char *descr;
    int size;
} npy_types[] = {{"<f4", 4}, {"<f2", 2}, {"<u2", 2}, {"<i4", 4}, {"|u1", 1}, {"|i1", 1}, {"<f8", 8}};

/* Indexed by ulpgym dtype: fp32 fp16 bf16 e4m3 e5m2 e8m0 int8 int32. */
static const char *dtype_descr[] = {"<f4", "<f2", "<u2", "|u1", "|u1", "|u1", "|i1", "<i4"};

const char *ug_npy_descr_of_dtype(int dt)
{
    return dt >= 0 && dt < (int)(sizeof dtype_descr / sizeof *dtype_descr) ? dtype_descr[dt] : NULL;
}

static int host_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

typedef struct {
    const char *p, *end;
    char *err;
    size_t errlen;
} hdr_reader;

static void skip_ws(hdr_reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
}

static int expect_char(hdr_reader *r, char c, const char *where)
{
    skip_ws(r);
    if (r->p >= r->end || *r->p != c) {
        snprintf(r->err, r->errlen, "malformed .npy header: expected '%c' %s", c, where);
        return -2;
    }
    r->p++;
    return 0;
}

/* A quoted string ('...' or "...") of at most cap-1 characters, no escapes. */
static int read_string(hdr_reader *r, char *out, size_t cap, const char *what)
{
    skip_ws(r);
    if (r->p >= r->end || (*r->p != '\'' && *r->p != '"')) {
        snprintf(r->err, r->errlen, "malformed .npy header: %s is not a quoted string", what);
        return -2;
    }
    char q = *r->p++;
    size_t n = 0;
    while (r->p < r->end && *r->p != q) {
        if (*r->p == '\\' || n + 1 >= cap) {
            snprintf(r->err, r->errlen, "malformed .npy header: %s is not a short plain string", what);
            return -2;
        }
        out[n++] = *r->p++;
    }
    if (r->p >= r->end) {
        snprintf(r->err, r->errlen, "malformed .npy header: unterminated string in %s", what);
        return -2;
    }
    r->p++;
    out[n] = 0;
    return 0;
}

static int read_bool(hdr_reader *r, int *v)
{
    skip_ws(r);
    size_t left = (size_t)(r->end - r->p);
    if (left >= 4 && memcmp(r->p, "True", 4) == 0) {
        *v = 1;
        r->p += 4;
        return 0;
    }
    if (left >= 5 && memcmp(r->p, "False", 5) == 0) {
        *v = 0;
        r->p += 5;
        return 0;
    }
    snprintf(r->err, r->errlen, "malformed .npy header: 'fortran_order' must be True or False");
    return -2;
}

/* A shape tuple: (), (n,), (n, m), (n, m,) ... of non-negative integers. */
static int read_shape(hdr_reader *r, ug_npy *o)
{
    if (expect_char(r, '(', "to open 'shape'")) return -2;
    o->ndim = 0;
    for (;;) {
        skip_ws(r);
        if (r->p < r->end && *r->p == ')') break;
        if (r->p >= r->end || *r->p < '0' || *r->p > '9') {
            snprintf(r->err, r->errlen, "malformed .npy header: 'shape' must be a tuple of non-negative integers");
            return -2;
        }
        int64_t v = 0;
        while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
            v = v * 10 + (*r->p++ - '0');
            if (v > ((int64_t)1 << 40)) {
                snprintf(r->err, r->errlen, "malformed .npy header: a dimension of 'shape' is absurdly large");
                return -2;
            }
        }
        if (o->ndim == UG_NPY_MAX_DIMS) {
            snprintf(r->err, r->errlen, ".npy 'shape' has more than %d dimensions", UG_NPY_MAX_DIMS);
            return -2;
        }
        o->shape[o->ndim++] = v;
        skip_ws(r);
        if (r->p < r->end && *r->p == ',') {
            r->p++;
            continue;
        }
        if (o->ndim == 1) { /* Python spells a 1-tuple (n,) */
            snprintf(r->err, r->errlen, "malformed .npy header: a one-element 'shape' is written (n,)");
            return -2;
        }
        break;
    }
    return expect_char(r, ')', "to close 'shape'");
}

static int set_descr(hdr_reader *r, const char *d, ug_npy *o)
{
    char norm[8] = "";
    if (strlen(d) < sizeof norm) memcpy(norm, d, strlen(d) + 1);
    if (strlen(norm) == 3 && norm[0] == '<' && norm[2] == '1') norm[0] = '|'; /* '<u1' is '|u1' */
    for (size_t i = 0; i < sizeof npy_types / sizeof *npy_types; i++)
        if (strcmp(norm, npy_types[i].descr) == 0) {
            snprintf(o->descr, sizeof o->descr, "%s", norm);
            o->itemsize = npy_types[i].size;
            return 0;
        }
    snprintf(r->err, r->errlen,
             ".npy dtype '%s' is not supported (ulpgym reads little-endian <f4, <f2, <u2, <i4, |u1, |i1)", d);
    return -2;
}

static int parse_dict(hdr_reader *r, ug_npy *o)
{
    int seen_descr = 0, seen_fortran = 0, seen_shape = 0;
    if (expect_char(r, '{', "at the start of the header dict")) return -2;
    for (;;) {
        skip_ws(r);
        if (r->p < r->end && *r->p == '}') break;
        char key[32], sval[32];
        if (read_string(r, key, sizeof key, "a header key") || expect_char(r, ':', "after a header key")) return -2;
        if (strcmp(key, "descr") == 0 && !seen_descr) {
            skip_ws(r);
            if (r->p < r->end && *r->p == '[') {
                snprintf(r->err, r->errlen, ".npy holds a structured dtype; ulpgym reads plain arrays only");
                return -2;
            }
            if (read_string(r, sval, sizeof sval, "'descr'") || set_descr(r, sval, o)) return -2;
            seen_descr = 1;
        } else if (strcmp(key, "fortran_order") == 0 && !seen_fortran) {
            int f;
            if (read_bool(r, &f)) return -2;
            if (f) {
                snprintf(r->err, r->errlen, ".npy is in Fortran order; write a C-order array (np.ascontiguousarray)");
                return -2;
            }
            seen_fortran = 1;
        } else if (strcmp(key, "shape") == 0 && !seen_shape) {
            if (read_shape(r, o)) return -2;
            seen_shape = 1;
        } else {
            snprintf(r->err, r->errlen, "malformed .npy header: unexpected or repeated key '%s'", key);
            return -2;
        }
        skip_ws(r);
        if (r->p < r->end && *r->p == ',')
            r->p++;
        else
            break;
    }
    if (expect_char(r, '}', "at the end of the header dict")) return -2;
    skip_ws(r);
    if (r->p != r->end) {
        snprintf(r->err, r->errlen, "malformed .npy header: text after the dict");
        return -2;
    }
    if (!seen_descr || !seen_fortran || !seen_shape) {
        snprintf(r->err, r->errlen, "malformed .npy header: missing '%s'",
                 !seen_descr     ? "descr"
                 : !seen_fortran ? "fortran_order"
                                 : "shape");
        return -2;
    }
    return 0;
}

/* The preamble's length (10 or 12) and the header's; -2 with err when b[0..len) does not
 * hold a valid preamble. */
static int preamble(const unsigned char *b, size_t len, size_t *prefix, size_t *hlen, char *err, size_t errlen)
{
    if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0) {
        snprintf(err, errlen, "not a .npy file (no \\x93NUMPY magic)");
        return -2;
    }
    int major = b[6], minor = b[7];
    if (major < 1 || major > 3 || minor != 0) {
        snprintf(err, errlen, ".npy format version %d.%d is not supported (1.0, 2.0, 3.0)", major, minor);
        return -2;
    }
    *prefix = major == 1 ? 10 : 12;
    if (len < *prefix) {
        snprintf(err, errlen, "truncated .npy file: %zu bytes, shorter than its preamble", len);
        return -2;
    }
    *hlen = major == 1 ? (size_t)b[8] | (size_t)b[9] << 8
                       : (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
    return 0;
}

/* Parses the header dict of b[prefix..prefix+hlen) into out, numel and data_len included. */
static int parse_header(const unsigned char *b, size_t prefix, size_t hlen, ug_npy *out, char *err, size_t errlen)
{
    for (size_t i = 0; i < hlen; i++) {
        unsigned char ch = b[prefix + i];
        if (ch != '\n' && (ch < 0x20 || ch > 0x7e)) {
            snprintf(err, errlen, "malformed .npy header: byte %zu is not printable ASCII", i);
            return -2;
        }
    }
    hdr_reader r = {(const char *)b + prefix, (const char *)b + prefix + hlen, err, errlen};
    if (parse_dict(&r, out)) return -2;
    size_t numel = 1;
    for (int i = 0; i < out->ndim; i++) {
        if (out->shape[i] && numel > (SIZE_MAX / 8) / (size_t)out->shape[i]) {
            snprintf(err, errlen, ".npy 'shape' has too many elements");
            return -2;
        }
        numel *= (size_t)out->shape[i];
    }
    out->numel = numel;
    out->data_len = numel * (size_t)out->itemsize;
    if (!host_little_endian()) {
        snprintf(err, errlen, "ulpgym's .npy support assumes a little-endian host");
        return -2;
    }
    return 0;
}

/* The data block holds `have` bytes: 0 when that is what the header declares. */
static int check_data_len(const ug_npy *o, size_t have, char *err, size_t errlen)
{
    if (have == o->data_len) return 0;
    snprintf(err, errlen, "%s .npy data: shape and dtype %s need %zu bytes, the file has %zu",
             have < o->data_len ? "truncated" : "overlong", o->descr, o->data_len, have);
    return -2;
}

int ug_npy_parse(const void *buf, size_t len, ug_npy *out, char *err, size_t errlen)
{
    const unsigned char *b = buf;
    size_t prefix, hlen;
    memset(out, 0, sizeof *out);
    if (preamble(b, len, &prefix, &hlen, err, errlen)) return -2;
    if (hlen > len - prefix) {
        snprintf(err, errlen, "truncated .npy file: header says %zu bytes, file has %zu after the preamble", hlen,
                 len - prefix);
        return -2;
    }
    if (parse_header(b, prefix, hlen, out, err, errlen) || check_data_len(out, len - prefix - hlen, err, errlen))
        return -2;
    out->data = b + prefix + hlen;
    return 0;
}

/* Reads exactly n bytes of fd into p; -1 on an error or a short file. */
static int read_exact(int fd, void *p, size_t n)
{
    unsigned char *c = p;
    while (n) {
        ssize_t k = read(fd, c, n > (1u << 30) ? (1u << 30) : n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Opens path as a regular file (never a device, FIFO or folder, whatever a link names). */
static int open_regular(const char *path, struct stat *st, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* O_NONBLOCK: a FIFO must not block the open */
    if (fd < 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, st) || !S_ISREG(st->st_mode)) {
        snprintf(err, errlen, "%s is not a regular file (%s); write the array to a file", path,
                 S_ISCHR(st->st_mode)    ? "a character device"
                 : S_ISFIFO(st->st_mode) ? "a FIFO"
                 : S_ISDIR(st->st_mode)  ? "a folder"
                 : S_ISBLK(st->st_mode)  ? "a block device"
                                         : "not a plain file");
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

/* Reads and parses the preamble and header at fd (a regular file of st_size bytes); checks
 * the file's size against them. */
static int read_header(int fd, off_t size, ug_npy *out, char *err, size_t errlen)
{
    unsigned char pre[12];
    size_t prefix, hlen, got = size < 12 ? (size_t)(size < 0 ? 0 : size) : 12;
    if (read_exact(fd, pre, got) || preamble(pre, got, &prefix, &hlen, err, errlen)) {
        if (got < 10) snprintf(err, errlen, "not a .npy file (no \\x93NUMPY magic)");
        return -2;
    }
    if (hlen > (size_t)size - prefix || hlen > UG_NPY_MAX_HEADER) {
        snprintf(err, errlen, "%s .npy header: it says %zu bytes, the file has %zu after the preamble",
                 hlen > UG_NPY_MAX_HEADER ? "implausibly large" : "truncated", hlen, (size_t)size - prefix);
        return -2;
    }
    unsigned char *h = malloc(prefix + hlen);
    int rc = !h || lseek(fd, 0, SEEK_SET) != 0 || read_exact(fd, h, prefix + hlen) ? -1 : 0;
    if (rc)
        snprintf(err, errlen, "cannot read its header: %s", h ? strerror(errno) : "out of memory");
    else
        rc = parse_header(h, prefix, hlen, out, err, errlen);
    free(h);
    return rc ? -2 : check_data_len(out, (size_t)size - prefix - hlen, err, errlen);
}

int ug_npy_open(const char *path, ug_npy *out, int *fd, char *err, size_t errlen)
{
    struct stat st;
    memset(out, 0, sizeof *out);
    *fd = open_regular(path, &st, err, errlen);
    if (*fd < 0) return -2;
    char inner[256];
    if (read_header(*fd, st.st_size, out, inner, sizeof inner)) {
        snprintf(err, errlen, "%s: %s", path, inner);
        close(*fd);
        *fd = -1;
        return -2;
    }
    return 0;
}

int ug_npy_read_data(const char *path, int fd, void *dst, size_t len, char *err, size_t errlen)
{
    int rc = read_exact(fd, dst, len);
    if (rc) snprintf(err, errlen, "cannot read %s: %s", path, errno ? strerror(errno) : "it shrank while read");
    close(fd);
    return rc ? -2 : 0;
}

int ug_npy_read_file(const char *path, void **buf, ug_npy *out, char *err, size_t errlen)
{
    int fd;
    *buf = NULL;
    if (ug_npy_open(path, out, &fd, err, errlen)) return -2;
    off_t at = lseek(fd, 0, SEEK_CUR); /* the header's bytes: the whole file is read, as checked */
    size_t total = (size_t)at + out->data_len;
    unsigned char *data = at < 0 ? NULL : malloc(total);
    if (!data || lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        free(data);
        snprintf(err, errlen, "cannot read %s: %s", path, data ? strerror(errno) : "out of memory");
        return -2;
    }
    if (ug_npy_read_data(path, fd, data, total, err, errlen)) {
        free(data);
        return -2;
    }
    *buf = data;
    out->data = data + at;
    return 0;
}

FILE *ug_file_create(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (fd >= 0 && !f) close(fd);
    return f;
}

int ug_npy_write_file(const char *path, const char *descr, int ndim, const int64_t *shape, const void *data, char *err,
                      size_t errlen)
{
    int itemsize = 0;
    for (size_t i = 0; i < sizeof npy_types / sizeof *npy_types; i++)
        if (strcmp(descr, npy_types[i].descr) == 0) itemsize = npy_types[i].size;
    if (!itemsize || ndim < 0 || ndim > UG_NPY_MAX_DIMS || !host_little_endian()) {
        snprintf(err, errlen, "internal: cannot write %s as .npy dtype %s with %d dims", path, descr, ndim);
        return -1;
    }
    char hdr[512], dims[200] = "";
    size_t numel = 1, dn = 0;
    for (int i = 0; i < ndim; i++) {
        dn += (size_t)snprintf(dims + dn, sizeof dims - dn, "%s%lld", i ? ", " : "", (long long)shape[i]);
        numel *= (size_t)shape[i];
    }
    int h = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (%s%s), }", descr, dims,
                     ndim == 1 ? "," : "");
    size_t total = ((size_t)10 + (size_t)h + 1 + 63) / 64 * 64; /* preamble + dict + '\n', 64-aligned */
    size_t hlen = total - 10;
    memset(hdr + h, ' ', hlen - (size_t)h - 1);
    hdr[hlen - 1] = '\n';
    unsigned char pre[10] = {
        0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
    FILE *f = ug_file_create(path); /* never through a link */
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s", path,
                 errno == ELOOP ? "it is a symbolic link (ulpgym never writes through one)" : strerror(errno));
        return -1;
    }
    size_t bytes = numel * (size_t)itemsize;
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, hlen, f) == hlen &&
             (bytes == 0 || fwrite(data, 1, bytes, f) == bytes);
    if (fclose(f) != 0) ok = 0;
    if (!ok) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        remove(path);
        return -1;
    }
    return 0;
}
