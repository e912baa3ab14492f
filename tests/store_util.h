/* Helpers for the disk store tests: temporary store paths, aligned pools,
 * loop devices, and one-call batch wrappers. */
#ifndef L3_TEST_STORE_UTIL_H
#define L3_TEST_STORE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#include "format.h"
#include "l3_slabstore.h"

/* A fresh path for a store file under $L3_TEST_DIR (default: the build's
 * test directory, which must not be tmpfs); the file does not exist. */
void temp_store_path(char *out, size_t size, const char *name);

/* Default test options: 1 MiB slabs, `capacity` bytes, engine `kind`. */
l3_slab_options test_options(const char *path, uint64_t capacity, l3_engine_kind kind);

/* Options for a store of exactly `slabs` slabs of 1 MiB (each holds 15
 * objects of 64 KiB and their headers), engine `kind`. */
l3_slab_options slab_count_options(const char *path, uint32_t slabs, l3_engine_kind kind);

/* Run `work` in a child that opens the store of `o` and is then killed
 * (SIGKILL, no close); the parent asserts that it was. A nonzero return
 * of `work` is the child's exit code (the assertion then fails). */
void run_killed_writer(const l3_slab_options *o, int (*work)(l3_slabstore *s, void *arg), void *arg);

/* Open the store of `o`; a failure fails the test with its message. */
l3_slabstore *open_test_store(const l3_slab_options *o);

/* Attach a loop device (direct I/O) to the file at `file` (losetup, as
 * root); its path into `dev` (`len` bytes). False where losetup fails (not
 * root, no loop devices). */
bool loop_attach(const char *file, char *dev, size_t len);

/* Detach a loop device from loop_attach; a failure fails the test. */
void loop_detach(const char *dev);

/* A 4096-aligned, zeroed buffer. */
uint8_t *aligned_pool(size_t len);

/* In a child process: drop CAP_IPC_LOCK and set RLIMIT_MEMLOCK to
 * `bytes`, as an unprivileged server has (exits 10 or 11 if refused). */
void limit_memlock(rlim_t bytes);

/* Fill `buf` with bytes derived from `seed`. */
void fill_pattern(uint8_t *buf, size_t len, uint32_t seed);

/* One-key (or n-key) wrappers that assert the call itself returns L3_OK. */
void put_keys(l3_store *s, const char *const *keys, size_t n, uint8_t *pool, size_t pool_len,
              const l3_range *ranges, bool *success);
l3_status get_keys(l3_store *s, const char *const *keys, size_t n, uint8_t *pool, size_t pool_len,
                   const l3_range *ranges, bool *success, bool *failures);
bool exists_key(l3_store *s, const char *key);

/* Overwrite `len` bytes at `off` of the file at `path` (no O_DIRECT). */
void poke_file(const char *path, uint64_t off, const void *bytes, size_t len);
void peek_file(const char *path, uint64_t off, void *bytes, size_t len);

/* The store file's geometry, from its superblock (it has summaries). */
l3_geometry geometry_of(const char *path);

/* Slab i's record, as the store file at `path` (geometry g) has it. */
l3_slab_record record_of(const char *path, const l3_geometry *g, uint32_t i);

/* The slabs of the store file at `path` with a summary head for their
 * record, into slabs[]; how many. */
uint32_t summarized_slabs(const char *path, uint32_t *slabs);

/* Make a superblock claim 2^31 slabs, its areas laid out consistently for
 * them (as a crafted image would): only the image's size shows it is
 * absurd. The caller seals it. */
struct l3_superblock;
void forge_absurd_slab_count(struct l3_superblock *sb);

/* Rewrite both superblock copies (4 KiB slots) of the store at `path`
 * through `edit`, resealed. */
void forge_superblock(const char *path, void (*edit)(struct l3_superblock *sb));

/* Rewrite the checkpoint header of the store at `path` to claim layout
 * `version` (an earlier build's, say), resealed. */
void forge_checkpoint_version(const char *path, uint32_t version);

#endif
