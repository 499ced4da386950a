/* The lock of a read-merge-rename update (merge_lock.h). */
#define _GNU_SOURCE /* flock, O_CLOEXEC */

#include "merge_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "artifact.h" /* taso_now_iso8601 */

taso_err_t taso_merge_lock(const char *lock_path, int *fd) {
  for (int attempt = 0; attempt < 1000; attempt++) {
    struct stat held, named;
    *fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (*fd < 0)
      return taso_error(TASO_ERR_IO, "%s: cannot create the lock file: %s", lock_path,
                        strerror(errno));
    int rc;
    while ((rc = flock(*fd, LOCK_EX)) != 0 && errno == EINTR)
      continue;
    if (rc != 0) {
      int e = errno;
      close(*fd);
      *fd = -1;
      if (e == ENOLCK || e == EOPNOTSUPP || e == ENOSYS || e == EINVAL) return TASO_OK;
      return taso_error(TASO_ERR_IO, "%s: cannot lock it: %s", lock_path, strerror(e));
    }
    if (fstat(*fd, &held) == 0 && stat(lock_path, &named) == 0 && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino) {
      char text[256], host[128] = "unknown host", when[32];
      gethostname(host, sizeof host - 1);
      taso_now_iso8601(when);
      int n = snprintf(text, sizeof text, "host %s, pid %ld, since %s (merging)\n", host,
                       (long)getpid(), when);
      bool said = ftruncate(*fd, 0) == 0 && pwrite(*fd, text, (size_t)n, 0) == n;
      (void)said; /* who holds it only helps a person looking; never fatal */
      return TASO_OK;
    }
    close(*fd);
  }
  return taso_error(TASO_ERR_IO, "%s: cannot take the lock: it keeps being replaced", lock_path);
}

void taso_merge_unlock(const char *lock_path, int fd) {
  if (fd < 0) return;
  unlink(lock_path);
  close(fd);
}
