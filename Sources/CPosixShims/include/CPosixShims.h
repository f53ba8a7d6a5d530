#ifndef CPOSIXSHIMS_H
#define CPOSIXSHIMS_H

// POSIX calls Swift's Glibc module does not expose (they need _GNU_SOURCE).
#include <sys/types.h>

/// Starts writeback of [offset, offset+length) of `fd` without waiting for it
/// (Linux sync_file_range with SYNC_FILE_RANGE_WRITE); a no-op returning 0 elsewhere.
/// Durability still comes from fsync: this only lets the disk work while we seal.
int CPosixShims_startWriteback(int fd, off_t offset, off_t length);

#endif
