/* replay_main.c — runs a fuzz target without libFuzzer: every file given, or every file
 * under each directory given (recursively), goes through LLVMFuzzerTestOneInput once.
 * ctest uses it to replay the checked-in corpora (corpus/<target>/), so CI needs no
 * libFuzzer; a crash or abort fails the test. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static int replayed;

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    if (!buf) return -1;
    LLVMFuzzerTestOneInput(buf, got);
    free(buf);
    replayed++;
    return 0;
}

static int run_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: no such file or folder %s\n", path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) return run_file(path);
    DIR *d = opendir(path);
    if (!d) return -1;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            char sub[4096];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            rc |= run_path(sub);
        }
    closedir(d);
    return rc;
}

int main(int argc, char **argv)
{
    int rc = 0;
    for (int i = 1; i < argc; i++) rc |= run_path(argv[i]);
    printf("replayed %d inputs\n", replayed);
    if (replayed == 0) {
        fprintf(stderr, "replay: no inputs found\n");
        return 1;
    }
    return rc ? 1 : 0;
}
