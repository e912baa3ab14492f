/* l3bench --compare's RAM-backed device (compare_ram.h). */
#include "compare_ram.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* Run `cmd` through the shell, its output (stdout and stderr, the first
 * `len` - 1 bytes, a last newline dropped) into `out`; whether it exited 0. */
static bool run_cmd(const char *cmd, char *out, size_t len)
{
    char full[600];
    snprintf(full, sizeof full, "%s 2>&1 </dev/null", cmd);
    out[0] = '\0';
    FILE *p = popen(full, "r");
    if (!p) {
        snprintf(out, len, "%s", strerror(errno));
        return false;
    }
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    char rest[256];
    while (fread(rest, 1, sizeof rest, p) > 0)
        ;
    while (n && out[n - 1] == '\n')
        out[--n] = '\0';
    return pclose(p) == 0;
}

/* MemAvailable (/proc/meminfo) in bytes, 0 if it cannot be read. */
static uint64_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return (uint64_t)kb << 10;
}

bool cmp_ram_usable(uint64_t size, char *why, size_t len)
{
    const char *const tools[] = { "losetup", "mkfs.ext4" };
    if (geteuid() != 0) {
        snprintf(why, len, "needs root (a tmpfs, a loop device and an ext4 mount); run it as root or with sudo");
        return false;
    }
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
        char cmd[64], out[128];
        snprintf(cmd, sizeof cmd, "command -v %s", tools[i]);
        if (!run_cmd(cmd, out, sizeof out)) {
            snprintf(why, len, "%s not found on the PATH (Debian: apt-get install %s)", tools[i],
                     i ? "e2fsprogs" : "mount");
            return false;
        }
    }
    uint64_t avail = mem_available();
    if (avail < CMP_RAM_HEADROOM || size > avail - CMP_RAM_HEADROOM) {
        snprintf(why, len, "%.1f GB of RAM asked, but only %.1f GB is available and the run itself needs %.1f GB "
                 "beside the device: ask for less", (double)size / 1e9, (double)avail / 1e9,
                 (double)CMP_RAM_HEADROOM / 1e9);
        return false;
    }
    return true;
}

/* The tmpfs (a little more than the device, for its file) and the file
 * in it, its memory had now. */
static bool make_ram(cmp_ram *r, char *why, size_t len)
{
    r->ram_made = mkdir(r->ram, 0700) == 0;
    char opts[64];
    snprintf(opts, sizeof opts, "size=%llu,mode=0700", (unsigned long long)(r->size + (16ull << 20)));
    r->ram_mounted = r->ram_made && mount("l3bench-ram", r->ram, "tmpfs", MS_NOSUID | MS_NODEV, opts) == 0;
    if (!r->ram_mounted) {
        snprintf(why, len, "a tmpfs at %s: %s", r->ram, strerror(errno));
        return false;
    }
    int fd = open(r->image, O_RDWR | O_CREAT | O_EXCL, 0600);
    r->image_made = fd >= 0;
    int rc = fd >= 0 ? posix_fallocate(fd, 0, (off_t)r->size) : errno;
    if (fd >= 0)
        close(fd);
    if (rc != 0)
        snprintf(why, len, "%llu bytes of RAM for %s: %s", (unsigned long long)r->size, r->image, strerror(rc));
    return rc == 0;
}

/* The loop device over the file, ext4 on it, mounted. */
static bool make_ext4(cmp_ram *r, char *why, size_t len)
{
    char cmd[512], out[256];
    snprintf(cmd, sizeof cmd, "losetup --find --show '%s'", r->image);
    r->loop_attached = run_cmd(cmd, out, sizeof out) && strncmp(out, "/dev/", 5) == 0;
    if (!r->loop_attached) {
        snprintf(why, len, "losetup --find --show %s: %s", r->image, out);
        return false;
    }
    snprintf(r->loop, sizeof r->loop, "%s", out);
    /* No reserved blocks (the run sizes itself to what is free), and no
     * lazy initialisation writing behind the timed runs. */
    snprintf(cmd, sizeof cmd, "mkfs.ext4 -q -F -m 0 -E lazy_itable_init=0,lazy_journal_init=0 '%s'", r->loop);
    if (!run_cmd(cmd, out, sizeof out)) {
        snprintf(why, len, "mkfs.ext4 on %s: %s", r->loop, out);
        return false;
    }
    r->mnt_made = mkdir(r->mnt, 0700) == 0;
    r->mounted = r->mnt_made && mount(r->loop, r->mnt, "ext4", 0, NULL) == 0;
    if (!r->mounted)
        snprintf(why, len, "mounting %s at %s: %s", r->loop, r->mnt, strerror(errno));
    return r->mounted;
}

bool cmp_ram_make(cmp_ram *r, uint64_t size, char *why, size_t len)
{
    memset(r, 0, sizeof *r);
    r->size = size;
    snprintf(r->base, sizeof r->base, "/tmp/l3bench-ram.XXXXXX");
    r->base_made = mkdtemp(r->base) != NULL;
    if (!r->base_made) {
        snprintf(why, len, "a directory in /tmp: %s", strerror(errno));
        return false;
    }
    snprintf(r->ram, sizeof r->ram, "%s/ram", r->base);
    snprintf(r->image, sizeof r->image, "%s/image", r->ram);
    snprintf(r->mnt, sizeof r->mnt, "%s/mnt", r->base);
    if (make_ram(r, why, len) && make_ext4(r, why, len))
        return true;
    cmp_ram_remove(r);
    return false;
}

/* Unmount `dir`, waiting up to 30 s while it is busy (the run's last
 * I/O, a killed run's processes), then detaching it lazily (its memory
 * is freed when its last user goes). False if even that failed. */
static bool unmount(const char *dir)
{
    for (int i = 0; i < 150; i++) {
        if (umount2(dir, 0) == 0)
            return true;
        if (errno != EBUSY)
            break;
        usleep(200000);
    }
    fprintf(stderr, "l3bench: --ram-device: unmounting %s: %s%s\n", dir, strerror(errno),
            errno == EBUSY ? "; detached lazily instead" : "");
    return umount2(dir, MNT_DETACH) == 0;
}

bool cmp_ram_remove(cmp_ram *r)
{
    bool ok = true;
    if (r->mounted)
        ok = unmount(r->mnt) && ok;
    if (r->mnt_made && rmdir(r->mnt) != 0)
        ok = false;
    char cmd[300], out[256];
    snprintf(cmd, sizeof cmd, "losetup -d '%s'", r->loop);
    if (r->loop_attached && !run_cmd(cmd, out, sizeof out)) {
        fprintf(stderr, "l3bench: --ram-device: losetup -d %s: %s\n", r->loop, out);
        ok = false;
    }
    if (r->image_made && unlink(r->image) != 0)
        ok = false;
    if (r->ram_mounted)
        ok = unmount(r->ram) && ok;
    if (r->ram_made && rmdir(r->ram) != 0)
        ok = false;
    if (r->base_made && rmdir(r->base) != 0)
        ok = false;
    if (!ok)
        fprintf(stderr, "l3bench: --ram-device: %s not wholly taken down: see mount, losetup -a and %s\n", r->base,
                r->base);
    *r = (cmp_ram){ 0 };
    return ok;
}
