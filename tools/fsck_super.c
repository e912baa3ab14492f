/* l3fsck's superblock pass (fsck_super.h): every given device's copies
 * read and chosen by the rulebook, the newest device's the store's, each
 * path put at its place in the store, each copy judged against the good
 * one; with -y both copies of every device rewritten from it. */
#include "fsck_super.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsck_io.h"

/* Print a device's superblock copies. */
static void print_copies(const fsck *f, const char *path, const l3_sb_copies *c)
{
    if (f->json)
        return;
    for (int k = 0; k < L3_SB_COPIES; k++) {
        const l3_superblock *sb = &c->copy[k];
        if (f->given > 1)
            printf("%s: ", path);
        if (c->valid[k])
            printf("superblock copy %d: valid, sequence %llu, %s, epoch %llu\n", k, (unsigned long long)sb->sequence,
                   sb->clean ? "clean" : "dirty", (unsigned long long)sb->epoch);
        else
            printf("superblock copy %d: %s\n", k, c->why[k]);
    }
}

/* A device's copies against the good one: a broken copy is a fixable
 * problem, an older one an interrupted write. */
static void judge_copies(fsck *f, const char *path, const l3_sb_copies *c)
{
    for (int k = 0; k < L3_SB_COPIES; k++) {
        if (c->valid[k] && c->copy[k].sequence == f->sb.sequence)
            continue;
        if (!c->valid[k]) {
            fsck_problem(f, true, "%s: superblock copy %d is broken (%s)", path, k, c->why[k]);
            continue;
        }
        /* An interrupted superblock write (normal after a crash), or a
         * device that missed a session: both copies are rewritten. */
        f->sync_copies = true;
        if (!f->json)
            printf("note: %s: superblock copy %d is older (sequence %llu) than the store's (%llu)%s\n", path, k,
                   (unsigned long long)c->copy[k].sequence, (unsigned long long)f->sb.sequence,
                   f->repair ? "; rewritten" : "; the next open rewrites it");
    }
}

/* Put each given path at its place in the store (by its superblock);
 * false when one does not belong to it. */
static bool place_devices(fsck *f, const l3_sb_copies *got, uint32_t n)
{
    fsck_dev given[L3_MAX_DEVICES];
    memcpy(given, f->dev, sizeof given);
    for (uint32_t d = 0; d < L3_MAX_DEVICES; d++)
        f->dev[d] = (fsck_dev){ .fd = -1, .dfd = -1 };
    f->ndev = n;
    f->present = 0;
    for (uint32_t i = 0; i < f->given; i++) {
        const l3_superblock *sb = got[i].best >= 0 ? &got[i].copy[got[i].best] : NULL;
        uint32_t d = sb ? sb->device : 0;
        if (!sb || memcmp(sb->uuid, f->sb.uuid, 16) != 0 || (sb->num_devices ? sb->num_devices : 1) != n ||
            d >= n || (f->present >> d & 1)) {
            fsck_problem(f, false, "%s is not a device of this store (%s)", given[i].path,
                         !sb ? "no valid superblock" : memcmp(sb->uuid, f->sb.uuid, 16) ? "another store's uuid"
                                                                                     : "its place is taken or out of range");
            return false;
        }
        f->dev[d] = given[i];
        f->dev[d].sbs = got[i];
        f->present |= 1u << d;
        if (got[i].best >= 0 && sb->sequence == f->sb.sequence)
            f->ref = d;
    }
    f->partial = f->present != (n >= 32 ? UINT32_MAX : (1u << n) - 1);
    if (f->partial && !f->json)
        printf("note: %u of the store's %u devices given: checked read-only, the others' slabs skipped\n",
               f->given, n);
    return true;
}

bool fsck_superblocks(fsck *f)
{
    l3_sb_copies got[L3_MAX_DEVICES];
    int best = -1;
    for (uint32_t i = 0; i < f->given; i++) {
        l3_sb_read_copies(f->dev[i].fd, f->dev[i].size, &got[i]);
        print_copies(f, f->dev[i].path, &got[i]);
        if (got[i].best >= 0 &&
            (best < 0 || got[i].copy[got[i].best].sequence > got[best].copy[got[best].best].sequence))
            best = (int)i;
    }
    if (best < 0)
        return false;
    f->sbs = got[best];
    f->sb = got[best].copy[got[best].best];
    uint32_t n = f->sb.num_devices ? f->sb.num_devices : 1;
    if (n > 1 || f->given > 1) {
        if (!place_devices(f, got, n))
            return false;
    } else {
        f->dev[0].sbs = got[0]; /* one device, given alone */
        f->present = 1;
    }
    for (uint32_t d = 0; d < f->ndev; d++)
        if (f->present >> d & 1)
            judge_copies(f, f->dev[d].path, &f->dev[d].sbs);
    return true;
}

void fsck_write_superblocks(fsck *f)
{
    l3_superblock sb = f->sb;
    if (f->mark_dirty) {
        /* The checkpoint no longer tells the truth: rebuild from headers. */
        sb.clean = 0;
        sb.sequence++;
    }
    /* Else the good copy, verbatim (its sequence keeps the checkpoint). */
    size_t slot = l3_image_sb_slot(&sb);
    uint8_t *buf = calloc(1, slot);
    int broken = 0;
    for (uint32_t d = 0; d < f->ndev && buf; d++) {
        const l3_sb_copies *c = &f->dev[d].sbs;
        for (int k = 0; k < L3_SB_COPIES; k++) {
            uint64_t at = l3_image_sb_copy(&sb, d, (uint32_t)k, buf);
            int rc = fsck_write(f, buf, slot, at);
            if (rc != 0)
                fprintf(stderr, "l3fsck: writing superblock copy %d of device %u: %s\n", k, d, strerror(-rc));
            f->left += rc != 0;
            broken += rc != 0;
            if (rc == 0 && !c->valid[k])
                fsck_fixed(f, "a broken superblock copy rewritten from the good one");
        }
        if (!fsck_sync(f, d))
            broken++;
    }
    free(buf);
    if (broken)
        fprintf(stderr, "l3fsck: the superblocks may not be durable\n");
}
