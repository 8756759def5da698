/* test_npy.c — the strict .npy reader/writer: a file laid out byte for byte as NumPy
 * writes it parses to the right dtype, shape and values; the writer's output has the
 * documented header and reads back identically for every supported type and rank; each
 * kind of malformed input is refused with its own message; and every truncation and
 * thousands of byte mutations of a valid file are refused or parsed without reading
 * past the buffer (the future fuzz target's property, checked deterministically). */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "core/npy.h"

/* A .npy file as numpy 1.x writes np.array([[1,2,3],[4,5,6]], dtype='<f4'). */
static size_t numpy_style(unsigned char *buf, const char *dict, const void *data, size_t data_len, int major)
{
    size_t pre = major == 1 ? 10 : 12, n = strlen(dict);
    size_t total = (pre + n + 1 + 63) / 64 * 64, hlen = total - pre;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    buf[8] = (unsigned char)(hlen & 0xff);
    buf[9] = (unsigned char)(hlen >> 8);
    if (major != 1) buf[10] = buf[11] = 0;
    memcpy(buf + pre, dict, n);
    memset(buf + pre + n, ' ', hlen - n - 1);
    buf[pre + hlen - 1] = '\n';
    memcpy(buf + total, data, data_len);
    return total + data_len;
}

static int parse_err(const unsigned char *buf, size_t len, const char *want)
{
    ug_npy a;
    char err[256] = "";
    int rc = ug_npy_parse(buf, len, &a, err, sizeof err);
    CHECK(rc == -2 && strstr(err, want), "want error containing \"%s\", got rc %d \"%s\"", want, rc, err);
    return rc;
}

static void test_known_file(void)
{
    static unsigned char buf[4096];
    const float v[6] = {1, 2, 3, 4, 5, 6};
    for (int major = 1; major <= 2; major++) {
        size_t n = numpy_style(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", v, sizeof v, major);
        ug_npy a;
        char err[256];
        CHECK(ug_npy_parse(buf, n, &a, err, sizeof err) == 0, "v%d: %s", major, err);
        CHECK(strcmp(a.descr, "<f4") == 0 && a.ndim == 2 && a.shape[0] == 2 && a.shape[1] == 3 && a.numel == 6,
              "v%d: parsed %s ndim %d", major, a.descr, a.ndim);
        float got[6];
        memcpy(got, a.data, sizeof got);
        CHECK(got[0] == 1 && got[5] == 6 && a.data_len == 24, "values");
    }
    /* 1-D and 0-D spellings, '<u1' normalised to '|u1', double quotes, no trailing comma */
    const unsigned char bytes[3] = {0x38, 0x7f, 0x80};
    size_t n = numpy_style(buf, "{\"descr\": \"<u1\", \"fortran_order\": False, \"shape\": (3,)}", bytes, 3, 1);
    ug_npy a;
    char err[256];
    CHECK(ug_npy_parse(buf, n, &a, err, sizeof err) == 0 && a.ndim == 1 && a.shape[0] == 3 &&
              strcmp(a.descr, "|u1") == 0,
          "1-D u1: %s", err);
    n = numpy_style(buf, "{'descr': '<i4', 'fortran_order': False, 'shape': (), }", "\x07\0\0\0", 4, 1);
    CHECK(ug_npy_parse(buf, n, &a, err, sizeof err) == 0 && a.ndim == 0 && a.numel == 1, "0-D: %s", err);
    n = numpy_style(buf, "{'descr': '<f2', 'fortran_order': False, 'shape': (0, 5), }", "", 0, 1);
    CHECK(ug_npy_parse(buf, n, &a, err, sizeof err) == 0 && a.numel == 0 && a.data_len == 0, "empty: %s", err);
}

static void test_write_read(const char *dir)
{
    static const char *descrs[] = {"<f4", "<f2", "<u2", "<i4", "|u1", "|i1"};
    static const int sizes[] = {4, 2, 2, 4, 1, 1};
    unsigned char data[3 * 5 * 2 * 4];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (unsigned char)(i * 29 + 3);
    const int64_t shapes[4][3] = {{3, 5, 2}, {7, 0, 0}, {1, 1, 1}, {0, 0, 0}};
    const int ndims[4] = {3, 1, 2, 0};
    for (int d = 0; d < 6; d++)
        for (int s = 0; s < 4; s++) {
            char path[512], err[256];
            snprintf(path, sizeof path, "%s/t%d_%d.npy", dir, d, s);
            CHECK(ug_npy_write_file(path, descrs[d], ndims[s], shapes[s], data, err, sizeof err) == 0, "%s", err);
            void *buf;
            ug_npy a;
            int rc = ug_npy_read_file(path, &buf, &a, err, sizeof err);
            CHECK(rc == 0, "%s", err);
            if (rc) continue;
            const unsigned char *b = buf;
            size_t hlen = (size_t)b[8] | (size_t)b[9] << 8;
            CHECK(b[6] == 1 && b[7] == 0 && (10 + hlen) % 64 == 0 && b[10 + hlen - 1] == '\n', "header layout");
            size_t numel = 1;
            for (int k = 0; k < ndims[s]; k++) numel *= (size_t)shapes[s][k];
            CHECK(strcmp(a.descr, descrs[d]) == 0 && a.ndim == ndims[s] && a.numel == numel &&
                      a.data_len == numel * (size_t)sizes[d] && memcmp(a.data, data, a.data_len) == 0,
                  "round trip %s rank %d", descrs[d], ndims[s]);
            free(buf);
        }
    char path[512], err[256];
    void *buf;
    ug_npy a;
    snprintf(path, sizeof path, "%s/absent.npy", dir);
    CHECK(ug_npy_read_file(path, &buf, &a, err, sizeof err) == -2 && strstr(err, "absent.npy"), "%s", err);
}

static void test_malformed(void)
{
    static unsigned char buf[4096];
    const float v[6] = {0};
    const char *ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    size_t n = numpy_style(buf, ok, v, sizeof v, 1);
    buf[1] = 'X';
    parse_err(buf, n, "no \\x93NUMPY magic");
    parse_err(buf, 5, "no \\x93NUMPY magic");
    n = numpy_style(buf, ok, v, sizeof v, 4);
    parse_err(buf, n, "version 4.0");
    n = numpy_style(buf, ok, v, sizeof v, 1);
    parse_err(buf, 40, "truncated .npy file: header says");
    parse_err(buf, n - 1, "truncated .npy data");
    unsigned char big[4096];
    memcpy(big, buf, n);
    big[n] = 0;
    parse_err(big, n + 1, "overlong .npy data");
    struct {
        const char *dict, *want;
    } bad[] = {
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", "Fortran order"},
        {"{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", "'>f4' is not supported"},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3), }", "'<c8' is not supported"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 3), }", "structured dtype"},
        {"{'descr': '<f4', 'shape': (2, 3), }", "missing 'fortran_order'"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", "repeated key 'descr'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", "unexpected or repeated key 'x'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (6), }", "one-element 'shape' is written (n,)"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }", "tuple of non-negative integers"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }", "expected '('"},
        {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3), }", "must be True or False"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } x", "text after the dict"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,6), }", "more than 8 dimensions"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999, 3), }", "absurdly large"},
        {"{'descr': '<f4\xc3\xa9', 'fortran_order': False, 'shape': (2, 3), }", "not printable ASCII"},
        {"{'descr: '<f4', 'fortran_order': False, 'shape': (2, 3), }", "expected ':'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        n = numpy_style(buf, bad[i].dict, v, sizeof v, 1);
        parse_err(buf, n, bad[i].want);
    }
}

/* Every prefix and many single-byte mutations of a valid file: refused or parsed, and a
 * parse never claims data beyond the buffer. */
static void test_mutations(void)
{
    static unsigned char base[512], buf[512];
    const uint16_t v[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    size_t n = numpy_style(base, "{'descr': '<u2', 'fortran_order': False, 'shape': (3, 4), }", v, sizeof v, 1);
    size_t bad_ok = 0, parsed = 0;
    for (size_t len = 0; len < n; len++) {
        ug_npy a;
        char err[256];
        if (ug_npy_parse(base, len, &a, err, sizeof err) == 0) bad_ok++;
    }
    CHECK(bad_ok == 0, "%zu truncated files parsed", bad_ok);
    uint32_t x = 12345;
    for (int trial = 0; trial < 20000; trial++) {
        memcpy(buf, base, n);
        for (int k = 0; k < 1 + trial % 3; k++) {
            x = x * 1664525u + 1013904223u;
            size_t at = (x >> 8) % n;
            x = x * 1664525u + 1013904223u;
            buf[at] = (unsigned char)(x >> 24);
        }
        size_t len = n - (trial % 7 == 0 ? (x >> 4) % 8 : 0);
        ug_npy a;
        char err[256];
        if (ug_npy_parse(buf, len, &a, err, sizeof err) == 0) {
            parsed++;
            const unsigned char *d = a.data;
            CHECK(d >= buf && d + a.data_len == buf + len, "trial %d: data outside the buffer", trial);
        } else {
            CHECK(err[0] != 0, "trial %d: refusal without a message", trial);
        }
    }
    printf("mutations: %zu of 20000 still parse (data bytes or padding changed)\n", parsed);
}

int main(void)
{
    test_known_file();
    test_write_read(check_tmpdir());
    test_malformed();
    test_mutations();
    return check_done();
}
