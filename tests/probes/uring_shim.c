/*
 * An LD_PRELOAD shim that makes an unmodified program's unix sockets go through io_uring:
 * socket(AF_UNIX, ...) becomes IORING_OP_SOCKET and connect() to a unix address
 * IORING_OP_CONNECT. Everything else goes to the C library. What it did is appended to the
 * file named by URING_SHIM_LOG, so that a test can tell the ring was used (and not the
 * ordinary calls). A failure is the program's failure: there is no fallback.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "uring.h"

static struct probe_ring ring;
static int ring_state; /* 0: not tried; 1: open; negative errno: failed */

static void note(const char *format, ...) {
    const char *path = getenv("URING_SHIM_LOG");
    if (!path) return;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;
    char line[256];
    va_list args;
    va_start(args, format);
    int n = vsnprintf(line, sizeof line, format, args);
    va_end(args);
    if (n > 0) {
        ssize_t ignored = write(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
        (void)ignored;
    }
    close(fd);
}

static int ring_ready(void) {
    if (ring_state == 0) {
        int res = probe_ring_open(&ring);
        ring_state = res < 0 ? res : 1;
        if (res < 0) note("io_uring_setup: %s\n", strerror(-res));
    }
    return ring_state;
}

int socket(int domain, int type, int protocol) {
    if (domain != AF_UNIX) {
        int (*real)(int, int, int) = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
        return real(domain, type, protocol);
    }
    int state = ring_ready();
    if (state < 0) {
        errno = -state;
        return -1;
    }
    int fd = probe_ring_socket(&ring, domain, type, protocol);
    if (fd < 0) {
        note("socket via io_uring: %s\n", strerror(-fd));
        errno = -fd;
        return -1;
    }
    note("socket via io_uring: %d\n", fd);
    return fd;
}

int connect(int fd, const struct sockaddr *address, socklen_t len) {
    if (address == NULL || address->sa_family != AF_UNIX) {
        int (*real)(int, const struct sockaddr *, socklen_t) =
            (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "connect");
        return real(fd, address, len);
    }
    int state = ring_ready();
    if (state < 0) {
        errno = -state;
        return -1;
    }
    int res = probe_ring_connect(&ring, fd, address, (uint32_t)len);
    if (res < 0) {
        note("connect via io_uring: %s\n", strerror(-res));
        errno = -res;
        return -1;
    }
    note("connect via io_uring: ok\n");
    return 0;
}
