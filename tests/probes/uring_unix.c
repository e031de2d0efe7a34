/*
 * uring_unix ADDRESS stream|dgram TOKEN
 *
 * Reaches a unix-socket server with io_uring alone: the socket is made by IORING_OP_SOCKET,
 * connected by IORING_OP_CONNECT and the token sent by IORING_OP_SEND, so that neither
 * socket(2) nor connect(2) is called. ADDRESS is a path, or @NAME for an abstract socket.
 * Prints each step's result; exits 0 when the token was sent.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "uring.h"

static void report(const char *step, int res) {
    if (res < 0)
        printf("%s: %s\n", step, strerror(-res));
    else
        printf("%s: %d\n", step, res);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: uring_unix ADDRESS stream|dgram TOKEN\n");
        return 2;
    }
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    size_t n = strlen(argv[1]);
    if (n >= sizeof sa.sun_path) return 2;
    memcpy(sa.sun_path, argv[1], n);
    if (argv[1][0] == '@') sa.sun_path[0] = '\0';
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (argv[1][0] != '@'));
    int type = strcmp(argv[2], "dgram") == 0 ? SOCK_DGRAM : SOCK_STREAM;

    struct probe_ring ring;
    int res = probe_ring_open(&ring);
    report("io_uring_setup", res);
    if (res < 0) return 1;
    int fd = probe_ring_socket(&ring, AF_UNIX, type, 0);
    report("socket", fd);
    if (fd < 0) return 1;
    res = probe_ring_connect(&ring, fd, &sa, len);
    report("connect", res);
    if (res < 0) return 1;
    res = probe_ring_send(&ring, fd, argv[3], (uint32_t)strlen(argv[3]));
    report("send", res);
    return res < 0;
}
