// recv_floor: the least CPU a receiver on this machine spends per small TCP segment on loopback,
// with nothing of ringperf in it: no HTTP, no SSE, no record. It sets a floor under the
// "worker CPU per paced SSE event" figure of perf/README.md (#24): a client cannot spend less per
// event than the kernel's own receive path, whatever it does in user space.
//
// A sender thread (pinned to CPU 1) writes EVENT_BYTES-byte events on STREAMS loopback TCP
// connections, round robin, each event its own segment at its own paced time (RATE events/s in
// all), or BURST events in one write. The receiver (pinned to CPU 0) reads them with
//   epoll      epoll_wait, then one recv per ready socket until EAGAIN (a readiness loop, as
//              ringperf's legacy driver);
//   epoll-ts   the same with recvmsg and SO_TIMESTAMPING receive stamps (as ringperf reads);
//   uring      one multishot IORING_OP_RECV per socket into a provided-buffer ring; one
//              io_uring_enter per batch of completions (as ringperf's multishot path, stamps
//              aside).
// It prints the receiver thread's CPU time per event (CLOCK_THREAD_CPUTIME_ID), events per
// wake-up, and the rate reached.
//
// Build: cc -O2 -o recv_floor perf/recv_floor.c -luring -lpthread  (liburing-dev >= 2.3)
//        without liburing's headers, the readiness modes alone:
//        cc -O2 -DRECV_FLOOR_NO_URING -o recv_floor perf/recv_floor.c -lpthread
// Run:   recv_floor MODE STREAMS RATE SECONDS [BURST]
#define _GNU_SOURCE
#include <errno.h>
#ifndef RECV_FLOOR_NO_URING
#include <liburing.h>
#endif
#include <time.h> // before linux/errqueue.h, which needs struct timespec
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define EVENT_BYTES 120
#define BUF_COUNT 4096
#define BUF_SIZE 4096
#define BGID 7

static int streams, burst = 1;
static double rate, seconds;
static int *tx, *rx;
static long long total_events;
static atomic_int go;

static long long now_ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    sched_setaffinity(0, sizeof s, &s);
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

// The sender: event k goes to stream k % streams at k / rate seconds after the start.
static void *sender(void *arg) {
    (void)arg;
    pin(1);
    char ev[EVENT_BYTES * 64];
    memset(ev, 'x', sizeof ev);
    while (!atomic_load(&go)) {
    }
    long long start = now_ns(CLOCK_MONOTONIC);
    long long writes = total_events / burst;
    for (long long k = 0; k < writes; k++) {
        long long due = start + (long long)((double)k * burst * 1e9 / rate);
        while (now_ns(CLOCK_MONOTONIC) < due) {
        }
        size_t len = (size_t)EVENT_BYTES * burst, off = 0;
        int fd = tx[k % streams];
        while (off < len) {
            ssize_t n = send(fd, ev + off, len - off, 0);
            if (n < 0) {
                if (errno == EAGAIN || errno == EINTR) continue;
                die("send");
            }
            off += (size_t)n;
        }
    }
    return NULL;
}

static void connect_pairs(void) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (bind(l, (void *)&a, sizeof a) || listen(l, 4096) || getsockname(l, (void *)&a, &al))
        die("listen");
    for (int i = 0; i < streams; i++) {
        tx[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(tx[i], (void *)&a, sizeof a)) die("connect");
        rx[i] = accept4(l, NULL, NULL, SOCK_NONBLOCK);
        if (rx[i] < 0) die("accept");
        int one = 1;
        setsockopt(tx[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    close(l);
}

static long long run_epoll(int stamps, long long *wakeups) {
    int ep = epoll_create1(0);
    for (int i = 0; i < streams; i++) {
        struct epoll_event e = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        if (stamps) {
            int f = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
            setsockopt(rx[i], SOL_SOCKET, SO_TIMESTAMPING, &f, sizeof f);
        }
        epoll_ctl(ep, EPOLL_CTL_ADD, rx[i], &e);
    }
    static char buf[65536];
    char ctl[256];
    long long want = total_events * EVENT_BYTES, got = 0, stamp_sum = 0;
    struct epoll_event evs[256];
    while (got < want) {
        int n = epoll_wait(ep, evs, 256, 1000);
        (*wakeups)++;
        for (int j = 0; j < n; j++) {
            int fd = rx[evs[j].data.u32];
            for (;;) {
                ssize_t r;
                if (stamps) {
                    struct iovec v = {buf, sizeof buf};
                    struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1, .msg_control = ctl,
                                       .msg_controllen = sizeof ctl};
                    r = recvmsg(fd, &m, 0);
                    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); r > 0 && c; c = CMSG_NXTHDR(&m, c))
                        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPING)
                            stamp_sum += ((struct timespec *)CMSG_DATA(c))->tv_nsec;
                } else {
                    r = recv(fd, buf, sizeof buf, 0);
                }
                if (r > 0) {
                    got += r;
                    continue;
                }
                if (r < 0 && errno != EAGAIN) die("recv");
                break;
            }
        }
    }
    close(ep);
    return stamp_sum;
}

#ifndef RECV_FLOOR_NO_URING
static void run_uring(long long *wakeups) {
    struct io_uring ring;
    struct io_uring_params p = {.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN};
    if (io_uring_queue_init_params(4096, &ring, &p)) {
        memset(&p, 0, sizeof p);
        if (io_uring_queue_init_params(4096, &ring, &p)) die("io_uring_queue_init");
    }
    size_t ring_bytes = sizeof(struct io_uring_buf) * BUF_COUNT;
    struct io_uring_buf_ring *br =
        mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    char *bufs = malloc((size_t)BUF_COUNT * BUF_SIZE);
    struct io_uring_buf_reg reg = {.ring_addr = (unsigned long)br, .ring_entries = BUF_COUNT,
                                   .bgid = BGID};
    if (br == MAP_FAILED || !bufs || io_uring_register_buf_ring(&ring, &reg, 0))
        die("buffer ring");
    io_uring_buf_ring_init(br);
    int mask = io_uring_buf_ring_mask(BUF_COUNT);
    for (int i = 0; i < BUF_COUNT; i++)
        io_uring_buf_ring_add(br, bufs + (size_t)i * BUF_SIZE, BUF_SIZE, (unsigned short)i, mask, i);
    io_uring_buf_ring_advance(br, BUF_COUNT);
    for (int i = 0; i < streams; i++) {
        struct io_uring_sqe *s = io_uring_get_sqe(&ring);
        if (!s) {
            io_uring_submit(&ring);
            s = io_uring_get_sqe(&ring);
        }
        io_uring_prep_recv_multishot(s, rx[i], NULL, 0, 0);
        s->flags |= IOSQE_BUFFER_SELECT;
        s->buf_group = BGID;
        s->user_data = (unsigned long long)i;
    }
    io_uring_submit(&ring);
    long long want = total_events * EVENT_BYTES, got = 0;
    while (got < want) {
        struct io_uring_cqe *cqe;
        if (io_uring_submit_and_wait(&ring, 1) < 0) die("wait");
        (*wakeups)++;
        unsigned head, seen = 0, returned = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            seen++;
            if (cqe->res > 0) got += cqe->res;
            if (cqe->flags & IORING_CQE_F_BUFFER) {
                unsigned short bid = (unsigned short)(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
                io_uring_buf_ring_add(br, bufs + (size_t)bid * BUF_SIZE, BUF_SIZE, bid, mask,
                                      (int)returned++);
            }
            if (!(cqe->flags & IORING_CQE_F_MORE)) {
                if (cqe->res < 0 && cqe->res != -ENOBUFS) {
                    fprintf(stderr, "recv: %s\n", strerror(-cqe->res));
                    exit(1);
                }
                struct io_uring_sqe *s = io_uring_get_sqe(&ring);
                io_uring_prep_recv_multishot(s, rx[cqe->user_data], NULL, 0, 0);
                s->flags |= IOSQE_BUFFER_SELECT;
                s->buf_group = BGID;
                s->user_data = cqe->user_data;
            }
        }
        io_uring_buf_ring_advance(br, (int)returned);
        io_uring_cq_advance(&ring, seen);
    }
    io_uring_queue_exit(&ring);
}
#endif

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s epoll|epoll-ts|uring STREAMS RATE SECONDS [BURST]\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    streams = atoi(argv[2]);
    rate = atof(argv[3]);
    seconds = atof(argv[4]);
    if (argc > 5) burst = atoi(argv[5]);
    if (streams < 1 || rate <= 0 || seconds <= 0 || burst < 1 || burst > 64) return 2;
#ifdef RECV_FLOOR_NO_URING
    if (!strcmp(mode, "uring")) {
        fprintf(stderr, "built without liburing (RECV_FLOOR_NO_URING): no uring mode\n");
        return 2;
    }
#endif
    total_events = (long long)(rate * seconds) / burst * burst;
    tx = calloc((size_t)streams, sizeof *tx);
    rx = calloc((size_t)streams, sizeof *rx);
    connect_pairs();
    pin(0);
    pthread_t t;
    pthread_create(&t, NULL, sender, NULL);
    long long wakeups = 0, c0 = now_ns(CLOCK_THREAD_CPUTIME_ID), w0 = now_ns(CLOCK_MONOTONIC);
    atomic_store(&go, 1);
#ifndef RECV_FLOOR_NO_URING
    if (!strcmp(mode, "uring"))
        run_uring(&wakeups);
    else
#endif
        run_epoll(!strcmp(mode, "epoll-ts"), &wakeups);
    long long cpu = now_ns(CLOCK_THREAD_CPUTIME_ID) - c0, wall = now_ns(CLOCK_MONOTONIC) - w0;
    pthread_join(t, NULL);
    printf("{\"mode\": \"%s\", \"streams\": %d, \"burst\": %d, \"events\": %lld, "
           "\"rate_asked\": %.0f, \"rate_reached\": %.0f, \"receiver_ns_per_event\": %.1f, "
           "\"events_per_wakeup\": %.2f}\n",
           mode, streams, burst, total_events, rate, total_events / (wall / 1e9),
           (double)cpu / total_events, (double)total_events / wakeups);
    return 0;
}
