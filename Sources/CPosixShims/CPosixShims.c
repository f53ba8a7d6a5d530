#define _GNU_SOURCE
#include <fcntl.h>
#include "CPosixShims.h"

int CPosixShims_startWriteback(int fd, off_t offset, off_t length) {
#if defined(__linux__)
  return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
#else
  (void)fd; (void)offset; (void)length;
  return 0;
#endif
}
