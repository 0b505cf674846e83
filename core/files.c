#include "core/files.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/errors.h"

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
