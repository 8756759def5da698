/* test_guard.c — guarded buffers (core/guard.h) below the CLI: the layout (64-byte aligned
 * zeroed data, canaries of at least 64 bytes each side, PROT_NONE pages beyond them), which
 * writes the canaries catch, reuse of a freed buffer at once without quarantine and only
 * after one with it (a write into it meanwhile is named as a late write), the input digest, the fault report that
 * names a buffer from an address in its guard page, a real write into a guard page dying of
 * SIGSEGV with that report in the shared note, and a built case's guard check messages. The
 * plugin-level checks (sweep, case) are test_plugin_guards.sh. */
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "core/guard.h"
#include "core/registry.h"
#include "gen/case.h"
#include "run/contain.h"

static size_t page(void) { return (size_t)sysconf(_SC_PAGESIZE); }

/* The first byte of the trailing guard page and of the leading one's last. */
static unsigned char *trail_page(const ug_guard_buf *g) { return (unsigned char *)g->map + g->map_len - page(); }
static unsigned char *lead_page_end(const ug_guard_buf *g) { return (unsigned char *)g->map + page() - 1; }

static void layout(size_t bytes)
{
    ug_guard_buf g;
    CHECK(ug_guard_alloc(&g, bytes, "output y") == 0, "alloc %zu", bytes);
    unsigned char *d = g.data;
    CHECK((uintptr_t)d % UG_GUARD_ALIGN == 0, "%zu bytes: data %p is 64-byte aligned", bytes, (void *)d);
    size_t zeros = 0;
    for (size_t i = 0; i < bytes; i++) zeros += d[i] == 0;
    CHECK(zeros == bytes, "%zu bytes: data zeroed (%zu zeros)", bytes, zeros);
    ptrdiff_t head = d - (lead_page_end(&g) + 1);
    CHECK(head >= UG_GUARD_SLACK, "%zu bytes: head canary %td", bytes, head);
    size_t tail = (size_t)(trail_page(&g) - (d + bytes));
    CHECK(tail >= UG_GUARD_SLACK && tail < UG_GUARD_SLACK + UG_GUARD_ALIGN, "%zu bytes: tail canary %zu", bytes, tail);
    CHECK(ug_guard_canaries(&g) == 0, "%zu bytes: fresh canaries intact", bytes);
    if (bytes) {
        d[0] ^= 0xFF, d[bytes - 1] ^= 0xFF; /* the data is the kernel's to write */
        CHECK(ug_guard_canaries(&g) == 0, "%zu bytes: writing the first and last bytes is no overrun", bytes);
    }
    unsigned char *probes[] = {d - 1, d - 4, d - 16, lead_page_end(&g) + 1, d + bytes, trail_page(&g) - 1};
    int want[] = {UG_GUARD_BEFORE, UG_GUARD_BEFORE, UG_GUARD_BEFORE, UG_GUARD_BEFORE, UG_GUARD_AFTER, UG_GUARD_AFTER};
    for (int i = 0; i < 6; i++) {
        *probes[i] ^= 0x01;
        CHECK(ug_guard_canaries(&g) == want[i], "%zu bytes: probe %d (offset %td) gives %d", bytes, i, probes[i] - d,
              ug_guard_canaries(&g));
        *probes[i] ^= 0x01;
    }
    d[-1] ^= 0x40, d[bytes] ^= 0x40;
    CHECK(ug_guard_canaries(&g) == (UG_GUARD_BEFORE | UG_GUARD_AFTER), "%zu bytes: both sides", bytes);
    ug_guard_free(&g);
    CHECK(g.map == NULL && g.data == NULL, "freed buffer zeroed");
}

/* Without quarantine (the default, for built-in kernels) a freed buffer stays accessible,
 * is named by no fault report, and is handed out again at once for one of about its size,
 * zeroed, canaries whole. */
static void reuse_unquarantined(void)
{
    ug_guard_buf a, b;
    CHECK(ug_guard_alloc(&a, 50000, "input plain") == 0, "alloc");
    void *map = a.map;
    volatile unsigned char *d = a.data;
    ug_guard_free(&a);
    d[10] = 0x77; /* no fault: not quarantined */
    char note[160] = "untouched";
    CHECK(ug_guard_describe_fault((const void *)(d + 10), "wrote", note, sizeof note) == 0 &&
              strcmp(note, "untouched") == 0,
          "no report for a write into an unquarantined freed buffer: %s", note);
    CHECK(ug_guard_alloc(&b, 49000, "output plain") == 0 && b.map == map, "handed out again at once");
    size_t zeros = 0;
    for (size_t i = 0; i < b.bytes; i++) zeros += ((unsigned char *)b.data)[i] == 0;
    CHECK(zeros == b.bytes && ug_guard_canaries(&b) == 0, "zeroed again (%zu of %zu), canaries whole", zeros, b.bytes);
    ug_guard_free(&b);
}

/* With quarantine on (as for a plugin), a freed buffer is reused for one of about its size
 * only after 8 other frees: data zeroed again, canaries whole again, the guard pages still
 * there, and the fault report names its new tensor. */
static void reuse(void)
{
    ug_guard_buf a, b;
    CHECK(ug_guard_alloc(&a, 100003, "input big") == 0, "alloc");
    CHECK(a.map_len - 2 * page() - a.bytes <= ug_guard_overhead(),
          "a fresh buffer's overhead %zu is within the "
          "estimate %zu",
          a.map_len - 2 * page() - a.bytes, ug_guard_overhead());
    void *map = a.map;
    unsigned char *d = a.data;
    memset(d - 64, 0xEE, 100003 + 128);
    ug_guard_free(&a);
    char note[160];
    CHECK(ug_guard_describe_fault(d + 10, "wrote", note, sizeof note) == 1 &&
              strstr(note, "wrote into the freed input big of an earlier case"),
          "a write into it is named: %s", note);
    CHECK(ug_guard_alloc(&b, 100000, "output soon") == 0 && b.map != map, "not handed out again at once");
    ug_guard_free(&b);
    ug_guard_buf other[8];
    for (int i = 0; i < 8; i++) /* the next cases' buffers, freed after it */
        CHECK(ug_guard_alloc(&other[i], 200 + 4096 * (size_t)i, "input other") == 0, "alloc other");
    for (int i = 0; i < 8; i++) ug_guard_free(&other[i]);
    ug_guard_buf older; /* layout() freed one of this size before it: the oldest fitting goes first */
    CHECK(ug_guard_alloc(&older, 100000, "output older") == 0 && ug_guard_alloc(&b, 100000, "output again") == 0,
          "alloc again");
    CHECK(b.map == map || older.map == map, "the freed mapping is reused once 8 other buffers were freed after it");
    ug_guard_free(&older);
    size_t zeros = 0;
    for (size_t i = 0; i < b.bytes; i++) zeros += ((unsigned char *)b.data)[i] == 0;
    CHECK(zeros == b.bytes, "reused data zeroed (%zu of %zu)", zeros, b.bytes);
    CHECK(ug_guard_canaries(&b) == 0, "reused canaries whole");
    char buf[64];
    CHECK(ug_guard_describe_fault(trail_page(&b), "wrote", buf, sizeof buf) == 1 &&
              strcmp(buf, "wrote past the end of output again") == 0,
          "reused buffer named anew: %s", buf);
    ug_guard_free(&b);
}

static void digest(void)
{
    ug_guard_buf g;
    CHECK(ug_guard_alloc(&g, 1000, "input x") == 0, "alloc");
    unsigned char *d = g.data;
    for (int i = 0; i < 1000; i++) d[i] = (unsigned char)(i * 7);
    CHECK(!ug_guard_changed(&g), "a buffer never sealed reports no change");
    ug_guard_seal(&g);
    CHECK(!ug_guard_changed(&g), "unchanged after sealing");
    int positions[] = {0, 7, 8, 500, 991, 992, 999};
    for (int i = 0; i < 7; i++) {
        d[positions[i]] ^= 0x80;
        CHECK(ug_guard_changed(&g), "one bit at byte %d changed is seen", positions[i]);
        d[positions[i]] ^= 0x80;
        CHECK(!ug_guard_changed(&g), "restored byte %d: unchanged", positions[i]);
    }
    ug_guard_free(&g);
}

static void fault_report(void)
{
    ug_guard_buf x, y;
    CHECK(ug_guard_alloc(&x, 24, "input x") == 0 && ug_guard_alloc(&y, 4096, "output y") == 0, "alloc");
    char buf[128] = "untouched";
    CHECK(ug_guard_describe_fault(trail_page(&y), "wrote", buf, sizeof buf) == 1, "trailing page of y");
    CHECK(strcmp(buf, "wrote past the end of output y") == 0, "message: %s", buf);
    CHECK(ug_guard_describe_fault(trail_page(&y) + page() - 1, "wrote", buf, sizeof buf) == 1, "its last byte");
    CHECK(ug_guard_describe_fault(lead_page_end(&x), "read", buf, sizeof buf) == 1, "leading page of x");
    CHECK(strcmp(buf, "read before the start of input x") == 0, "message: %s", buf);
    snprintf(buf, sizeof buf, "untouched");
    CHECK(ug_guard_describe_fault(y.data, "wrote", buf, sizeof buf) == 0, "the data is no guard page");
    CHECK(ug_guard_describe_fault((char *)y.data - 1, "wrote", buf, sizeof buf) == 0, "nor is a canary");
    CHECK(ug_guard_describe_fault(buf, "wrote", buf, sizeof buf) == 0, "nor the stack");
    CHECK(strcmp(buf, "untouched") == 0, "buf untouched without a report: %s", buf);
    char small[12];
    CHECK(ug_guard_describe_fault(trail_page(&y), "wrote", small, sizeof small) == 1 &&
              strcmp(small, "wrote past ") == 0,
          "truncated, terminated: %s", small);
    void *freed = x.data;
    ug_guard_free(&x); /* kept inaccessible for reuse: a write into it is a late write, named */
    CHECK(ug_guard_describe_fault(freed, "wrote", buf, sizeof buf) == 1 &&
              strncmp(buf, "wrote into the freed input x", 28) == 0,
          "a freed buffer in quarantine: %s", buf);
    ug_guard_free(&y);
}

/* A child writing n bytes from offset `from` of the data (negative: before it, walking down)
 * dies of SIGSEGV in a guard page, and the watched note names the buffer. */
static void real_fault(long from, long n, const char *want_note)
{
    char *note = mmap(NULL, 256, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ug_guard_buf g;
    CHECK(note != MAP_FAILED && ug_guard_alloc(&g, 40, "output y") == 0, "setup");
    note[0] = 0;
    pid_t pid = fork();
    if (pid == 0) {
        ug_contain_watch_faults(note, 256);
        volatile unsigned char *d = g.data;
        for (long i = 0; i < n; i++) d[from < 0 ? from - i : from + i] = 0x5A;
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV, "from %ld: child died of SIGSEGV (status %d)", from,
          status);
    CHECK(strcmp(note, want_note) == 0 || (strncmp(note, "accessed", 8) == 0 && strstr(note, want_note + 5)),
          "from %ld: note \"%s\", want \"%s\"", from, note, want_note);
    char msg[512];
    ug_contain_crash_message(status, 3, note, 0, msg, sizeof msg);
    CHECK(strncmp(msg, note, strlen(note)) == 0 && strstr(msg, ": worker killed by signal 11 (SIGSEGV) after 3 ms"),
          "crash message: %s", msg);
    ug_guard_free(&g);
    munmap(note, 256);
}

/* A built attn_softmax case: every tensor guarded, and the check's message per damage. */
static void case_check(void)
{
    const char *text = "{\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}},\"dtype\":\"bf16\",\"op\":"
                       "\"attn_softmax\",\"params\":{\"cols\":7,\"rows\":3},\"plan\":\"t/1\",\"seed\":5,\"v\":1}";
    ug_spec s;
    ug_case c;
    char err[256], msg[512];
    if (ug_spec_parse(text, &s, err, sizeof err) || ug_case_build(&c, &s, err, sizeof err)) {
        CHECK(0, "building the guard case: %s", err);
        return;
    }
    for (int i = 0; i < c.n_in; i++) CHECK(c.in[i].guard.map && c.in[i].data == c.in[i].guard.data, "input guarded");
    CHECK(c.n_out == 1 && c.out[0].guard.map && c.out[0].data == c.out[0].guard.data, "output y guarded");
    ug_case_seal_inputs(&c);
    CHECK(ug_case_guard_check(&c, msg, sizeof msg) == 0 && msg[0] == 0, "fresh case intact: %s", msg);
    unsigned char *y = c.out[0].data, *x = (unsigned char *)ug_case_input_mut(&c, "x")->data;
    size_t ybytes = c.out[0].guard.bytes;
    memset(y, 0x77, ybytes);
    CHECK(ug_case_guard_check(&c, msg, sizeof msg) == 0, "writing all of y is fine: %s", msg);
    y[ybytes] ^= 1;
    CHECK(ug_case_guard_check(&c, msg, sizeof msg) == 1 && strcmp(msg, "wrote after output y") == 0, "after: %s", msg);
    y[ybytes] ^= 1;
    y[-4] ^= 1;
    CHECK(ug_case_guard_check(&c, msg, sizeof msg) == 1 && strcmp(msg, "wrote before output y") == 0, "before: %s",
          msg);
    x[3] ^= 1;
    CHECK(ug_case_guard_check(&c, msg, sizeof msg) == 2 && strcmp(msg, "modified input x; wrote before output y") == 0,
          "two tensors: %s", msg);
    y[-4] ^= 1;
    x[3] ^= 1;
    x[c.in[0].guard.bytes + 2] ^= 1;
    CHECK(ug_case_guard_check(&c, msg, sizeof msg) == 1 && strcmp(msg, "wrote after input x") == 0,
          "input's canary: %s", msg);
    ug_case_free(&c);
}

int main(void)
{
    size_t sizes[] = {0, 1, 6, 63, 64, 65, 4000, 4096, 4097, 3 * 4096 - 64, 100003};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) layout(sizes[i]);
    reuse_unquarantined();
    ug_guard_quarantine(0);
    reuse();
    digest();
    fault_report();
    real_fault(40, 4L << 20, "wrote past the end of output y");             /* 4 MB from the end, forward */
    real_fault(-1, 2 * (long)page(), "wrote before the start of output y"); /* down from the start */
    case_check();
    return check_done();
}
