/* libFuzzer: open a store image mutated by the input, read-only, and read
 * every object back. The input is a list of patches, each
 * [u32 offset][u16 length][bytes], applied to a small valid image (closed
 * cleanly, or with the first input byte odd, as after a crash). Whatever
 * the patches do to the superblocks, slab table, journal, checkpoint or
 * object headers, the store must not crash, and any object it serves must
 * have exactly the bytes that were put. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aligned.h"
#include "format.h"
#include "fuzz.h"
#include "l3_slabstore.h"

#define OBJECTS 8
#define MIB (1ull << 20)

static uint8_t *images[2]; /* clean, dirty */
static size_t image_len;
static char template_path[256], work_path[256];
static char keys[OBJECTS][64];
static uint8_t *pool;

static uint64_t size_of(int i) { return 4096 * (uint64_t)(1 + i % 3) + (i % 2 ? 123 : 0); }
static uint8_t byte_of(int i, uint64_t k) { return (uint8_t)(i * 31 + k * 7); }

static void quiet(const char *level, const char *message, void *ctx)
{
    (void)level; (void)message; (void)ctx;
}

static l3_slab_options options(const char *path)
{
    l3_slab_options o;
    l3_slab_options_default(&o, path);
    o.slab_size = MIB;
    o.capacity = 6 * MIB; /* the metadata and 4 slabs, the fewest a store has */
    o.io_contexts = 1;
    o.batch_keys = 16;
    o.io_timeout = 5;
    o.lock_timeout = 0;
    return o;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    l3_set_logger(quiet, NULL);
    const char *dir = getenv("L3_FUZZ_DIR") ? getenv("L3_FUZZ_DIR") : ".";
    snprintf(template_path, sizeof template_path, "%s/fuzz-template.%d.l3", dir, (int)getpid());
    snprintf(work_path, sizeof work_path, "%s/fuzz-work.%d.l3", dir, (int)getpid());
    unlink(template_path);
    l3_slab_options o = options(template_path);
    l3_slabstore *s;
    l3_error err;
    if (l3_slabstore_open(&o, &s, &err) != L3_OK) {
        fprintf(stderr, "fuzz_image: %s (set L3_FUZZ_DIR to a disk file system)\n", err.msg);
        exit(1);
    }
    if (!(pool = l3_aligned_alloc(4096, 65536, false)))
        exit(1);
    l3_store *st = l3_slabstore_store(s);
    for (int i = 0; i < OBJECTS; i++) {
        snprintf(keys[i], sizeof keys[i], "ns%d_obj%d", i % 2, i);
        for (uint64_t k = 0; k < size_of(i); k++)
            pool[k] = byte_of(i, k);
        const char *key = keys[i];
        bool ok, fail;
        l3_io_result r = { .success = &ok, .object_failures = &fail };
        st->ops->batch_put_from(st, &key, 1, (l3_host_buffer){ pool, 65536 },
                                &(l3_range){ 0, size_of(i) }, &r, NULL);
    }
    st->ops->remove_by_prefix(st, "gone_"); /* nothing to remove: no record */
    l3_slabstore_free(s);
    struct stat sb;
    stat(template_path, &sb);
    image_len = (size_t)sb.st_size;
    for (int v = 0; v < 2; v++) {
        images[v] = malloc(image_len);
        int fd = open(template_path, O_RDONLY);
        if (pread(fd, images[v], image_len, 0) != (ssize_t)image_len)
            exit(1);
        close(fd);
    }
    /* The dirty variant: both superblock copies say clean = 0. */
    for (int c = 0; c < 2; c++) {
        l3_superblock *sbp = (l3_superblock *)(images[1] + c * 4096);
        sbp->clean = 0;
        l3_sb_seal(sbp);
    }
    unlink(template_path);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int variant = size && (data[0] & 1);
    uint8_t *img = malloc(image_len);
    memcpy(img, images[variant], image_len);
    /* Patches land in the metadata and the first slab most of the time. */
    size_t hot = 2 * MIB + 64 * 1024;
    for (size_t p = size ? 1 : 0; p + 6 <= size;) {
        uint32_t off;
        uint16_t len;
        memcpy(&off, data + p, 4);
        memcpy(&len, data + p + 4, 2);
        p += 6;
        size_t span = off & 1 ? image_len : hot;
        size_t at = (off >> 1) % span;
        size_t n = len;
        if (n > size - p)
            n = size - p;
        if (n > image_len - at)
            n = image_len - at;
        memcpy(img + at, data + p, n);
        p += n;
    }
    int fd = open(work_path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0 || write(fd, img, image_len) != (ssize_t)image_len)
        abort();
    close(fd);
    free(img);
    l3_slab_options o = options(work_path);
    o.read_only = true;
    o.create = false;
    l3_slabstore *s;
    if (l3_slabstore_open(&o, &s, NULL) == L3_OK) {
        l3_store *st = l3_slabstore_store(s);
        for (int i = 0; i < OBJECTS; i++) {
            const char *key = keys[i];
            bool ok = false, fail = false, there = false;
            st->ops->batch_exists(st, &key, 1, &there, NULL);
            l3_io_result r = { .success = &ok, .object_failures = &fail };
            memset(pool, 0xee, 65536);
            if (st->ops->batch_get_into(st, &key, 1, (l3_host_buffer){ pool, 65536 },
                                        &(l3_range){ 0, size_of(i) }, &r, NULL) == L3_OK && ok) {
                for (uint64_t k = 0; k < size_of(i); k++)
                    if (pool[k] != byte_of(i, k))
                        abort(); /* served with wrong bytes */
            }
        }
        l3_slab_stats stats;
        l3_slabstore_stats(s, &stats);
        l3_slabstore_free(s);
    }
    return 0;
}
