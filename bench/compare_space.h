/* l3bench --compare's sizing to the free space: the bytes each of its
 * phases asks of a file system (the capacities its stores are made with,
 * so the plan and the stores cannot disagree), the plan that fits a run
 * into what its file systems have free, with a margin (pure arithmetic),
 * and the free space of its directories (statvfs). */
#ifndef L3_COMPARE_SPACE_H
#define L3_COMPARE_SPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The least each phase is shrunk to (what was asked, if less); below it
 * the plan refuses the run. */
#define CMP_SPACE_MIN_TOTAL (256ull << 20) /* the rounds' bytes per size and system */
#define CMP_SPACE_MIN_MIXED (64ull << 20)  /* the mixed phase's gets */
#define CMP_SPACE_MIN_RECOVERY 100000      /* the recovery phase's objects */
#define CMP_SPACE_STEADY (1ull << 30)      /* the steady-state phase's store: never shrunk */
#define CMP_SPACE_MAX_FS 16                /* file systems under a run's directories, at most */

/* The capacity of each of l3cache's store files in the rounds: `n`
 * objects of `size` bytes striped over `nfiles` files, headers and a
 * tenth's slack included. */
uint64_t cmp_space_l3_store(size_t n, size_t nfiles, uint64_t size);

/* The mixed phase's store: its gets' `total` bytes of `page`-byte pages
 * and the put stream's four times as many pages in each of `rounds`
 * rounds. */
uint64_t cmp_space_mixed(uint64_t total, uint64_t page, size_t rounds);

/* The recovery phase's store of `n` 4 KiB objects. */
uint64_t cmp_space_recovery(size_t n);

/* The margin a plan leaves free on a file system of `free` bytes: a
 * twentieth of it, at least 256 MiB. */
uint64_t cmp_space_margin(uint64_t free);

/* One file system under a run's directories. */
typedef struct cmp_space_fs {
    uint64_t free; /* bytes free to the run (statvfs: blocks free to unprivileged users) */
    size_t dirs;   /* how many of the run's directories are on it */
    size_t dir;    /* the first of them (an index into the run's directories) */
    bool first;    /* the first directory's: the phases beside the rounds run there */
} cmp_space_fs;

/* What a run asks for. */
typedef struct cmp_space_ask {
    uint64_t total;         /* the rounds' bytes per size and system (--total) */
    const uint64_t *sizes;  /* the object sizes (--sizes) */
    size_t num_sizes;
    uint64_t mixed_total;   /* the mixed phase's gets' bytes; 0: no mixed phase */
    uint64_t mixed_page;    /* its page */
    size_t mixed_rounds;    /* its rounds */
    size_t recovery_objects; /* 0: no recovery phase */
} cmp_space_ask;

/* What fits: each phase as asked, or shrunk; or, if one does not fit at
 * its least, which. */
typedef struct cmp_space_plan {
    bool ok;
    uint64_t total, mixed_total;
    size_t recovery_objects;
    uint64_t free, room; /* the first directory's file system: free, and free less the margin */
    uint64_t need;       /* the plan's most at once there (its largest phase) */
    const char *short_of; /* !ok: the phase that does not fit at its least ("the rounds", ...) */
    size_t short_fs;      /* !ok: the file system it does not fit on (an index into the plan's) */
    uint64_t short_need;  /* !ok: the free bytes it needs there at its least, the margin included */
} cmp_space_plan;

/* Fit a run into its file systems (`nfs`, at least 1, one of them
 * first): each phase as asked where it fits with the margin, else the
 * most that does (the rounds' total in multiples of the largest size,
 * the mixed phase's in pages, recovery in thousands of objects), but
 * never under its least (or what was asked, if less): then ok is false
 * and the plan says which phase and what it needs. */
cmp_space_plan cmp_space_fit(const cmp_space_ask *a, const cmp_space_fs *fs, size_t nfs);

/* The file systems under `dirs` (n of them, at most CMP_SPACE_MAX_FS):
 * each one's free bytes and how many of the directories it holds, into
 * `fs`. How many file systems, or 0 if a directory cannot be read (its
 * index in *bad, errno says why). */
size_t cmp_space_measure(const char *const *dirs, size_t n, cmp_space_fs *fs, size_t *bad);

#endif
