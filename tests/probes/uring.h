/*
 * A minimal io_uring client for the tests' probes: one ring, one operation at a time, raw
 * system calls (no liburing, which a test machine may lack). The structures and numbers are
 * the kernel's user-space ABI (include/uapi/linux/io_uring.h), written out here so that the
 * probes build with older kernel headers too; only what the probes use is named.
 */
#ifndef CLI_SANDBOX_PROBE_URING_H
#define CLI_SANDBOX_PROBE_URING_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The same numbers on every architecture (they were unified before io_uring existed). */
#define PROBE_NR_IO_URING_SETUP 425
#define PROBE_NR_IO_URING_ENTER 426

#define PROBE_OP_CONNECT 16
#define PROBE_OP_SEND 26
#define PROBE_OP_SOCKET 45

#define PROBE_OFF_SQ_RING 0ULL
#define PROBE_OFF_CQ_RING 0x8000000ULL
#define PROBE_OFF_SQES 0x10000000ULL
#define PROBE_FEAT_SINGLE_MMAP 1u
#define PROBE_ENTER_GETEVENTS 1u

struct probe_sqring_offsets {
    uint32_t head, tail, ring_mask, ring_entries, flags, dropped, array, resv1;
    uint64_t user_addr;
};

struct probe_cqring_offsets {
    uint32_t head, tail, ring_mask, ring_entries, overflow, cqes, flags, resv1;
    uint64_t user_addr;
};

struct probe_uring_params {
    uint32_t sq_entries, cq_entries, flags, sq_thread_cpu, sq_thread_idle, features, wq_fd;
    uint32_t resv[3];
    struct probe_sqring_offsets sq_off;
    struct probe_cqring_offsets cq_off;
};

/* 64 bytes: the fields the probes set, the rest as padding of the same size. */
struct probe_sqe {
    uint8_t opcode;
    uint8_t flags;
    uint16_t ioprio;
    int32_t fd;
    uint64_t off;
    uint64_t addr;
    uint32_t len;
    uint32_t op_flags;
    uint64_t user_data;
    uint8_t rest[24];
};

struct probe_cqe {
    uint64_t user_data;
    int32_t res;
    uint32_t flags;
};

_Static_assert(sizeof(struct probe_sqe) == 64, "an io_uring submission entry is 64 bytes");
_Static_assert(sizeof(struct probe_uring_params) == 120, "io_uring_params is 120 bytes");

struct probe_ring {
    int fd;
    uint32_t *sq_tail, *sq_mask, *sq_array;
    struct probe_sqe *sqes;
    uint32_t *cq_head, *cq_tail, *cq_mask;
    struct probe_cqe *cqes;
};

/* Sets up a ring; 0, or a negative errno (io_uring_setup's or mmap's). */
static inline int probe_ring_open(struct probe_ring *r) {
    struct probe_uring_params p;
    memset(&p, 0, sizeof p);
    long fd = syscall(PROBE_NR_IO_URING_SETUP, 4, &p);
    if (fd < 0) return -errno;
    r->fd = (int)fd;
    size_t sq_size = p.sq_off.array + p.sq_entries * sizeof(uint32_t);
    size_t cq_size = p.cq_off.cqes + p.cq_entries * sizeof(struct probe_cqe);
    if (p.features & PROBE_FEAT_SINGLE_MMAP) {
        if (cq_size > sq_size) sq_size = cq_size;
        cq_size = sq_size;
    }
    char *sq = mmap(0, sq_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
                    PROBE_OFF_SQ_RING);
    if (sq == MAP_FAILED) return -errno;
    char *cq = sq;
    if (!(p.features & PROBE_FEAT_SINGLE_MMAP)) {
        cq = mmap(0, cq_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
                  PROBE_OFF_CQ_RING);
        if (cq == MAP_FAILED) return -errno;
    }
    void *sqes = mmap(0, p.sq_entries * sizeof(struct probe_sqe), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_POPULATE, r->fd, PROBE_OFF_SQES);
    if (sqes == MAP_FAILED) return -errno;
    r->sq_tail = (uint32_t *)(sq + p.sq_off.tail);
    r->sq_mask = (uint32_t *)(sq + p.sq_off.ring_mask);
    r->sq_array = (uint32_t *)(sq + p.sq_off.array);
    r->sqes = sqes;
    r->cq_head = (uint32_t *)(cq + p.cq_off.head);
    r->cq_tail = (uint32_t *)(cq + p.cq_off.tail);
    r->cq_mask = (uint32_t *)(cq + p.cq_off.ring_mask);
    r->cqes = (struct probe_cqe *)(cq + p.cq_off.cqes);
    return 0;
}

/* Runs one operation and waits for it: its result (negative errno on failure), or the negative
 * errno of io_uring_enter. */
static inline int probe_ring_run(struct probe_ring *r, const struct probe_sqe *sqe) {
    uint32_t tail = *r->sq_tail;
    uint32_t index = tail & *r->sq_mask;
    r->sqes[index] = *sqe;
    r->sq_array[index] = index;
    __atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
    if (syscall(PROBE_NR_IO_URING_ENTER, r->fd, 1, 1, PROBE_ENTER_GETEVENTS, 0, 0) < 0)
        return -errno;
    uint32_t head = *r->cq_head;
    while (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE)) {
    }
    int res = r->cqes[head & *r->cq_mask].res;
    __atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
    return res;
}

/* IORING_OP_SOCKET: the domain in fd, the type (with its flags) in off, the protocol in len. */
static inline int probe_ring_socket(struct probe_ring *r, int domain, int type, int protocol) {
    struct probe_sqe sqe;
    memset(&sqe, 0, sizeof sqe);
    sqe.opcode = PROBE_OP_SOCKET;
    sqe.fd = domain;
    sqe.off = (uint64_t)type;
    sqe.len = (uint32_t)protocol;
    return probe_ring_run(r, &sqe);
}

/* IORING_OP_CONNECT: the address in addr, its length in off. */
static inline int probe_ring_connect(struct probe_ring *r, int fd, const void *address, uint32_t len) {
    struct probe_sqe sqe;
    memset(&sqe, 0, sizeof sqe);
    sqe.opcode = PROBE_OP_CONNECT;
    sqe.fd = fd;
    sqe.addr = (uint64_t)(uintptr_t)address;
    sqe.off = len;
    return probe_ring_run(r, &sqe);
}

/* IORING_OP_SEND: the buffer in addr, its length in len. */
static inline int probe_ring_send(struct probe_ring *r, int fd, const void *buf, uint32_t len) {
    struct probe_sqe sqe;
    memset(&sqe, 0, sizeof sqe);
    sqe.opcode = PROBE_OP_SEND;
    sqe.fd = fd;
    sqe.addr = (uint64_t)(uintptr_t)buf;
    sqe.len = len;
    return probe_ring_run(r, &sqe);
}

#endif
