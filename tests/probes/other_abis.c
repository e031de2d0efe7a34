/*
 * other_abis i386|x32 ADDRESS TOKEN
 *
 * Makes a unix socket through another system call ABI of the same x86_64 kernel, then
 * connects it to the pathname server at ADDRESS and sends TOKEN:
 * - i386: `int $0x80` with the i386 number of socket(2) (359), as a 32-bit program would;
 * - x32: the x86_64 instruction with the x32 numbers (__X32_SYSCALL_BIT | 41, | 42), which
 *   kernels built with CONFIG_X86_X32_ABI accept.
 * Prints what happened; exits 0 when the token was sent, 77 on another architecture.
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>
#include <errno.h>

#define X32_BIT 0x40000000L

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: other_abis i386|x32 ADDRESS TOKEN\n");
        return 2;
    }
#if defined(__x86_64__)
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    strncpy(sa.sun_path, argv[2], sizeof sa.sun_path - 1);
    long fd;
    int x32 = strcmp(argv[1], "x32") == 0;
    if (x32) {
        fd = syscall(X32_BIT | SYS_socket, AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0) fd = -errno;
    } else {
        /* The i386 entry point takes 32-bit registers: ebx, ecx, edx. */
        __asm__ volatile("int $0x80"
                         : "=a"(fd)
                         : "a"(359L), "b"((long)AF_UNIX), "c"((long)SOCK_STREAM), "d"(0L)
                         : "memory");
    }
    if (fd < 0) {
        printf("socket: %s\n", strerror((int)-fd));
        return 1;
    }
    printf("socket: %ld\n", fd);
    long res = x32 ? syscall(X32_BIT | SYS_connect, fd, &sa, sizeof sa)
                   : connect((int)fd, (struct sockaddr *)&sa, sizeof sa);
    if (res < 0) {
        printf("connect: %s\n", strerror(errno));
        return 1;
    }
    ssize_t sent = write((int)fd, argv[3], strlen(argv[3]));
    printf("send: %zd\n", sent);
    return sent < 0;
#else
    (void)argv;
    printf("not x86_64\n");
    return 77;
#endif
}
