/* Two test processes over a socketpair; see xproc.h. */
#include "xproc.h"

#include <poll.h>
#include <stdint.h>
#include <unistd.h>

int xproc_io(int fd, void *buf, size_t n, bool out)
{
    uint8_t *b = buf;
    while (n) {
        ssize_t k = out ? write(fd, b, n) : read(fd, b, n);
        if (k <= 0)
            return -1;
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

int xproc_barrier(int fd, char tag)
{
    char got;
    if (xproc_io(fd, &tag, 1, true) || xproc_io(fd, &got, 1, false))
        return -1;
    return got == tag ? 0 : -1;
}

bool xproc_ready(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, 0) == 1;
}
