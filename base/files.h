/* Opening the files of a model directory. A path the user gives may name
 * something that is not a file: a directory, or a FIFO, socket or device,
 * where a plain open() for reading waits for a writer forever. */
#ifndef TSR_BASE_FILES_H
#define TSR_BASE_FILES_H

#include <stddef.h>
#include <sys/types.h>

/* Opens `path` read-only without blocking and accepts it only if it is a
 * regular file: the descriptor, with the file's size in *size; or -1 with
 * a one-line reason in err ("cannot open: ...", "is a directory", "not a
 * regular file (a FIFO)"), without the path: the caller names the file. */
int tsr_open_regular(const char *path, off_t *size, char *err, size_t err_len);

/* The whole regular file at path, at most `max` bytes, into *bytes (its
 * *len bytes and a NUL after them; release with tsr_free). Errors begin
 * with the path: it cannot be opened or read, it is larger than max, or it
 * shrank while read; memory is TESSERA_ERR_NOMEM. */
int tsr_read_regular(const char *path, off_t max, char **bytes, size_t *len, char *err,
                     size_t err_len);

/* len bytes of the open file fd (`opened` bytes long when it was opened)
 * from byte `at` on, into dst, in large preads (several threads may read one
 * descriptor at once). A file that ends early is an error that says it
 * shrank; errors name the byte, not the file (the caller prefixes it). */
int tsr_pread_all(int fd, size_t opened, size_t at, void *dst, size_t len, char *err,
                  size_t err_len);

#endif
