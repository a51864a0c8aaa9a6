/*
 * lock.c — the job directory's lock: one run owns <dir>/<job> for its life,
 * and the lock file names it, so the writer can refuse an orphan of
 * another run.  The file is written over, so it is taken only when it is
 * the job's own: not a symbolic link, a regular file of this user with a
 * single name.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "snapshot/internal.h"
#include "snapshot/snapshot.h"
#include "snapshot/store.h"
#include "snapshot/sys.h"

#define LOCK_NAME ".lock"

struct rally__snap_lock {
    int fd;
};

/* The run the lock file in jfd names: 1 and run, 0 when there is no lock
 * file (or it names nothing), -1 with errno when it cannot be read. */
static int holder(int jfd, char run[RALLY__SNAP_UUID_LEN + 1])
{
    char buf[64];
    int fd = openat(jfd, LOCK_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    if (n < RALLY__SNAP_UUID_LEN)
        return n < 0 ? -1 : 0;
    memcpy(run, buf, RALLY__SNAP_UUID_LEN);
    run[RALLY__SNAP_UUID_LEN] = '\0';
    return 1;
}

int rally__snap_fenced(const char *jobdir, const char *run_id, struct rally__err *e)
{
    int jfd = -1, rc = RALLY_OK, missing = 0;
    char run[RALLY__SNAP_UUID_LEN + 1];
    struct rally__err quiet = {0};
    if (rally__store_is_remote(jobdir))
        return RALLY_OK; /* an object store holds no lock (rally__snap_lock_take) */
    if (rally__snap_opendir(AT_FDCWD, jobdir, 0, &quiet, &missing, &jfd) != RALLY_OK)
        return missing ? RALLY_OK : rally__fail(e, quiet.code, "%s", quiet.msg);
    int h = holder(jfd, run);
    if (h < 0)
        rc = rally__fail_errno(e, RALLY_ESYS, errno, "cannot read %s/%s", jobdir, LOCK_NAME);
    else if (h > 0 && strcmp(run, run_id) != 0)
        rc = rally__fail(e, RALLY_EPEER,
                         "%s belongs to run %s now, this is run %s: a process "
                         "of an older run must not write into it",
                         jobdir, run, run_id);
    close(jfd);
    return rc;
}

/* The lock file is written over, so it must be the job's own: a regular
 * file of this user with no other name (a hard link planted there would
 * have another file truncated). */
static int own_file(int fd, const char *where, struct rally__err *e)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return rally__fail_errno(e, RALLY_ESYS, errno, "cannot stat %s/%s", where, LOCK_NAME);
    if (!S_ISREG(st.st_mode))
        return rally__fail(e, RALLY_EPROTO, "%s/%s is not a regular file: remove it", where,
                           LOCK_NAME);
    if (st.st_nlink != 1)
        return rally__fail(e, RALLY_EPROTO,
                           "%s/%s has %lu hard links, so writing it would change another file: "
                           "remove it",
                           where, LOCK_NAME, (unsigned long)st.st_nlink);
    if (st.st_uid != geteuid())
        return rally__fail(e, RALLY_EPROTO,
                           "%s/%s belongs to user %lu, not to user %lu who runs this job: "
                           "remove it",
                           where, LOCK_NAME, (unsigned long)st.st_uid, (unsigned long)geteuid());
    return RALLY_OK;
}

int rally__snap_lock_take(const char *dir, const char *job, const char *run_id,
                          struct rally__err *e, struct rally__snap_lock **out)
{
    int root = -1, jfd = -1, fd = -1, rc;
    char where[1024], line[RALLY__SNAP_UUID_LEN + 32];
    unsigned char uu[16];
    struct rally__snap_lock *l = NULL;
    if (rally__store_is_remote(dir))
        return rally__fail(e, RALLY_EINVAL,
                           "%s is an object store, which holds no lock: snapshots are written "
                           "to a directory (--snapshot-dir) and copied there (--snapshot-copy)",
                           dir);
    if (!rally__snap_job_ok(job) || rally__snap_uuid_bytes(run_id, uu) != 0)
        return rally__fail(e, RALLY_EINVAL,
                           "cannot lock job \"%s\" for run \"%s\": a bad job "
                           "name or run id",
                           job, run_id);
    snprintf(where, sizeof where, "%s/%s", dir, job);
    if ((rc = rally__snap_mkdir(AT_FDCWD, "", dir, 0, e, &root)) != RALLY_OK ||
        (rc = rally__snap_mkdir(root, dir, job, 1, e, &jfd)) != RALLY_OK)
        goto out;
    /* O_NONBLOCK: a FIFO planted there must not hang the open */
    fd = openat(jfd, LOCK_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = errno == ELOOP
                 ? rally__fail(e, RALLY_EPROTO,
                               "%s/%s is a symbolic link, not this job's lock file: "
                               "remove it",
                               where, LOCK_NAME)
                 : rally__fail_errno(e, RALLY_ESYS, errno, "cannot open %s/%s", where, LOCK_NAME);
        goto out;
    }
    if ((rc = own_file(fd, where, e)) != RALLY_OK)
        goto out;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    if (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
        int err = errno;
        char run[RALLY__SNAP_UUID_LEN + 1] = "an unknown run";
        if (err == EAGAIN || err == EACCES) {
            holder(jfd, run);
            rc = rally__fail(e, RALLY_EPEER,
                             "%s is in use by run %s (is a launcher of that run "
                             "still running?)",
                             where, run);
        } else {
            rc = rally__fail_errno(e, RALLY_ESYS, err, "cannot lock %s/%s", where, LOCK_NAME);
        }
        goto out;
    }
    int n = snprintf(line, sizeof line, "%s\n%ld\n", run_id, (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)n, 0) != n || fsync(fd) != 0) {
        rc = rally__fail_errno(e, RALLY_ESYS, errno, "cannot write %s/%s", where, LOCK_NAME);
        goto out;
    }
    if ((l = malloc(sizeof *l)) == NULL) {
        rc = rally__fail(e, RALLY_ENOMEM, "out of memory locking %s", where);
        goto out;
    }
    l->fd = fd;
    fd = -1;
    *out = l;
out:
    if (fd >= 0)
        close(fd);
    if (jfd >= 0)
        close(jfd);
    if (root >= 0)
        close(root);
    return rc;
}

int rally__snap_lock_holder(const char *jobdir, struct rally__err *e,
                            char run[RALLY__SNAP_UUID_LEN + 1], long *pid)
{
    int jfd = -1, fd = -1, missing = 0, rc;
    char buf[RALLY__SNAP_UUID_LEN + 32];
    struct rally__err quiet = {0};
    if (rally__store_is_remote(jobdir))
        return rally__fail(e, RALLY_EINVAL, "%s is an object store: no job holds a lock there",
                           jobdir);
    if (rally__snap_opendir(AT_FDCWD, jobdir, 0, &quiet, &missing, &jfd) != RALLY_OK) {
        rc = missing ? rally__fail(e, RALLY_EINVAL, "%s does not exist: no job runs there", jobdir)
                     : rally__fail(e, quiet.code, "%s", quiet.msg);
        goto out;
    }
    fd = openat(jfd, LOCK_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        rc = errno == ENOENT
                 ? rally__fail(e, RALLY_EINVAL, "%s has no lock file: no job runs there", jobdir)
                 : rally__fail_errno(e, RALLY_ESYS, errno, "cannot open %s/%s", jobdir, LOCK_NAME);
        goto out;
    }
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    if (fcntl(fd, F_OFD_GETLK, &fl) != 0) {
        rc = rally__fail_errno(e, RALLY_ESYS, errno, "cannot test %s/%s", jobdir, LOCK_NAME);
        goto out;
    }
    if (fl.l_type == F_UNLCK) {
        rc = rally__fail(e, RALLY_EINVAL, "nobody holds %s/%s: no job runs there now", jobdir,
                         LOCK_NAME);
        goto out;
    }
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    long p = 0;
    unsigned char uu[16];
    if (n > RALLY__SNAP_UUID_LEN) {
        buf[n] = '\0';
        buf[RALLY__SNAP_UUID_LEN] = '\0';
        p = strtol(buf + RALLY__SNAP_UUID_LEN + 1, NULL, 10);
    }
    if (n <= RALLY__SNAP_UUID_LEN || rally__snap_uuid_bytes(buf, uu) != 0 || p <= 0) {
        rc = rally__fail(e, RALLY_EPROTO,
                         "%s/%s is held but names no run and process (a launcher of an older "
                         "rally?)",
                         jobdir, LOCK_NAME);
        goto out;
    }
    memcpy(run, buf, RALLY__SNAP_UUID_LEN + 1);
    *pid = p;
    rc = RALLY_OK;
out:
    if (fd >= 0)
        close(fd);
    if (jfd >= 0)
        close(jfd);
    return rc;
}

void rally__snap_lock_release(struct rally__snap_lock *l)
{
    if (l == NULL)
        return;
    close(l->fd); /* the lock goes with the open file description */
    free(l);
}
