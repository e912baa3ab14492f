/* l3fsck's permissions pass (fsck_perms.h): the store's files or devices
 * and its shared object, closed to other users. */
#include "fsck_perms.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsck_io.h"

/* One file's mode: anything for other users is an error (a KV cache holds
 * what reconstructs its prompts); -y takes it away. */
static void check_mode(fsck *f, const char *what, const char *path, int fd)
{
    struct stat st;
    if ((fd >= 0 ? fstat(fd, &st) : stat(path, &st)) != 0 || !(st.st_mode & 0007u))
        return;
    fsck_problem(f, true, "%s %s is open to other users (mode %04o)", what, path, (unsigned)(st.st_mode & 07777u));
    if (!f->repair)
        return;
    mode_t tight = st.st_mode & 0770u;
    if ((fd >= 0 ? fchmod(fd, tight) : chmod(path, tight)) != 0) {
        fprintf(stderr, "l3fsck: chmod %s: %s\n", path, strerror(errno));
        f->left++;
        return;
    }
    fsck_fixed(f, "permissions for other users removed");
}

void fsck_permissions(fsck *f)
{
    struct stat file, shm;
    char name[96], path[160];
    if (fstat(f->fd, &file) != 0)
        return;
    for (uint32_t d = 0; d < f->ndev; d++)
        if (f->dev[d].fd >= 0)
            check_mode(f, f->ndev > 1 ? "the store's device" : "the store", f->dev[d].path,
                       f->dev[d].blockdev ? -1 : f->dev[d].fd);
    l3_image_mapping_name(&file, name, sizeof name);
    snprintf(path, sizeof path, "/dev/shm%s", name);
    if (stat(path, &shm) != 0)
        return;
    if (shm.st_uid != file.st_uid && shm.st_uid != geteuid())
        fsck_problem(f, false, "the shared object %s is owned by uid %u, not the store's owner (uid %u): it may be "
                     "another user's; with no l3cache process running, remove it: rm %s", path,
                     (unsigned)shm.st_uid, (unsigned)file.st_uid, path);
    else
        check_mode(f, "the shared object", path, -1);
}
