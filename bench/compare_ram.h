/* l3bench --compare --ram-device: a block device in RAM for the run's
 * directory (a tmpfs, a file filling it, a loop device over the file,
 * ext4 on that, mounted on a temporary directory), so that what --compare
 * measures is the software, not the disk; made as root and always taken
 * down again. */
#ifndef L3_COMPARE_RAM_H
#define L3_COMPARE_RAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The memory a device leaves to the run itself (l3cache's Host pool and
 * fio's buffers, 1 GiB each at 4 MiB objects; crc32c's 256 MiB; the
 * file-per-key baseline's page cache): the device's size must be at most
 * MemAvailable less this. */
#define CMP_RAM_HEADROOM (4ull << 30)

/* A RAM-backed device and what of it is made, to be taken down. */
typedef struct cmp_ram {
    uint64_t size;
    char base[64];   /* a temporary directory: the tmpfs at base/ram, ext4 at base/mnt */
    char ram[80], image[96], mnt[80], loop[256];
    bool base_made, ram_made, ram_mounted, image_made, loop_attached, mnt_made, mounted;
} cmp_ram;

/* Whether this process can make a device of `size` bytes: root, losetup
 * and mkfs.ext4 on the PATH, and the size within MemAvailable less
 * CMP_RAM_HEADROOM. False with why (a sentence) in `why`. */
bool cmp_ram_usable(uint64_t size, char *why, size_t len);

/* Make a device of `size` bytes (its tmpfs file fallocated, so the memory
 * is had now or never) and mount ext4 on it at r->mnt. False with why in
 * `why`, and whatever was made taken down again. */
bool cmp_ram_make(cmp_ram *r, uint64_t size, char *why, size_t len);

/* Take down what cmp_ram_make made, last first: ext4 unmounted (a busy
 * one waited for up to 30 s, as the run's last I/O and processes finish,
 * then detached lazily), the loop device detached, the file, the tmpfs
 * and the directories removed. False (said on stderr) if anything is
 * left. */
bool cmp_ram_remove(cmp_ram *r);

#endif
