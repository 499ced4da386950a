/*
 * The lock of a read-merge-rename update of a shared file (the cost
 * database, the rule guard's verdict cache): an exclusive flock on
 * PATH.lock, held while the file is read as it is now, merged with the
 * caller's rows, written beside and renamed over PATH, so that updates
 * from jobs that finish at once lose nothing.
 */
#ifndef TASO_MERGE_LOCK_H
#define TASO_MERGE_LOCK_H

#include "check.h"

/* Waits for the lock. The holder removes the file when it lets go, so a
 * lock taken on a file the path no longer names is taken again; the lock
 * file says who holds it (host, pid, since when) for a person looking.
 * *fd: -1 on a file system without flock, where the merge goes on
 * unprotected. */
taso_err_t taso_merge_lock(const char *lock_path, int *fd);

/* Lets go of a lock taken by taso_merge_lock (fd -1: nothing). */
void taso_merge_unlock(const char *lock_path, int fd);

#endif
