#include "base/files.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/errors.h"
#include "base/memory.h"

static const char *kind_of(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "a device";
    return "of an unknown type";
}

int tsr_open_regular(const char *path, off_t *size, char *err, size_t err_len)
{
    /* O_NONBLOCK makes the open of a FIFO return at once (refused below);
     * for a regular file it changes nothing, reads included. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        tsr_fail(err, err_len, "cannot open: %s", strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        tsr_fail(err, err_len, "cannot stat: %s", strerror(e));
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        if (S_ISDIR(sb.st_mode))
            tsr_fail(err, err_len, "is a directory, not a file");
        else
            tsr_fail(err, err_len, "not a regular file (%s)", kind_of(sb.st_mode));
        return -1;
    }
    *size = sb.st_size;
    return fd;
}

int tsr_read_regular(const char *path, off_t max, char **bytes, size_t *len, char *err,
                     size_t err_len)
{
    off_t size;
    char why[256];
    int fd = tsr_open_regular(path, &size, why, sizeof why);
    if (fd < 0)
        return tsr_fail(err, err_len, "%s: %s", path, why);
    if (size > max) {
        close(fd);
        return tsr_fail(err, err_len, "%s: %lld bytes, more than the %lld such a file may hold",
                        path, (long long)size, (long long)max);
    }
    char *buf = tsr_malloc((size_t)size + 1);
    if (!buf) {
        close(fd);
        return tsr_fail_oom(err, err_len, "%s: out of memory reading %lld bytes", path,
                            (long long)size);
    }
    size_t got = 0;
    while (got < (size_t)size) {
        ssize_t n = read(fd, buf + got, (size_t)size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : 0;
            close(fd);
            tsr_free(buf);
            return e ? tsr_fail(err, err_len, "%s: cannot read: %s", path, strerror(e))
                     : tsr_fail(err, err_len, "%s: ends at byte %zu, %lld when opened", path, got,
                                (long long)size);
        }
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    *bytes = buf;
    *len = got;
    return 0;
}

/* Model files are read into fresh memory, in large chunks, never mapped:
 * every byte is converted or copied at load anyway, and a read cannot fault the way a
 * mapping can (a mapped file that shrinks under the load, a copy still
 * being written or an NFS hiccup, raises SIGBUS on the next access to the
 * lost pages and kills the process). A file that ends early is an error
 * that says so; one that grows is read as it was when it was opened. */
#define READ_CHUNK ((size_t)64 << 20)

int tsr_pread_all(int fd, size_t opened, size_t at, void *dst, size_t len, char *err,
                  size_t err_len)
{
    size_t done = 0;
    while (done < len) {
        size_t want = len - done < READ_CHUNK ? len - done : READ_CHUNK;
        ssize_t got = pread(fd, (unsigned char *)dst + done, want, (off_t)(at + done));
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return tsr_fail(err, err_len, "read error at byte %zu: %s", at + done,
                            strerror(errno));
        if (got == 0) {
            /* Its size now, not where the read stopped: a file cut to N
             * bytes is reported as N bytes long. */
            struct stat now;
            intmax_t size = fstat(fd, &now) == 0 ? (intmax_t)now.st_size : -1;
            char now_text[64] = "";
            if (size >= 0)
                snprintf(now_text, sizeof now_text, ", %jd now", size);
            return tsr_fail(err, err_len,
                            "file shrank while being read: %zu bytes when opened%s, and bytes "
                            "%zu to %zu are past its end (is it still being written?)",
                            opened, now_text, at + done, at + len);
        }
        done += (size_t)got;
    }
    return 0;
}
