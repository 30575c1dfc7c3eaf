/*
 * What a TCP send over loopback costs per MiB, by the size of each write.
 *
 * CONNS child processes each read one connection in 1 MiB reads; the
 * parent writes a buffer of MIB MiB (16 by default) to them over and over
 * for the given seconds, in writes of CHUNK bytes on non-blocking sockets
 * (poll() for room, as an event loop would), each connection at its own
 * place in the buffer. The parent reports its CPU (user + system,
 * getrusage) per MiB sent, and the children's together per MiB received,
 * so a change that only moves work from the sender to the receivers shows
 * as such.
 *
 *   gcc -O2 -o /tmp/send_size docs/probes/send_size.c
 *   for c in 524288 1048576 2097152 4194304; do /tmp/send_size $c 4; done
 *   # the shape of the 16 MiB GET row: 8 connections, 256 MiB of objects
 *   /tmp/send_size 2097152 4 8 256
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 64

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static double cpu(int who) {
    struct rusage r;
    getrusage(who, &r);
    return r.ru_utime.tv_sec + r.ru_utime.tv_usec * 1e-6 + r.ru_stime.tv_sec +
           r.ru_stime.tv_usec * 1e-6;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: %s <bytes per write> <seconds> [connections] [buffer MiB]\n",
                argv[0]);
        return 2;
    }
    size_t chunk = strtoul(argv[1], NULL, 10);
    double secs = atof(argv[2]);
    int conns = argc > 3 ? atoi(argv[3]) : 1;
    size_t len = (argc > 4 ? strtoul(argv[4], NULL, 10) : 16) << 20;
    if (chunk == 0 || conns < 1 || conns > MAX_CONNS || len < (size_t)conns) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (ls < 0 || bind(ls, (void *)&a, sizeof a) || listen(ls, MAX_CONNS) ||
        getsockname(ls, (void *)&a, &al)) {
        perror("listen");
        return 1;
    }
    for (int i = 0; i < conns; i++) {
        if (fork() == 0) {
            int c = socket(AF_INET, SOCK_STREAM, 0);
            if (connect(c, (void *)&a, sizeof a)) { perror("connect"); exit(1); }
            char *b = malloc(1 << 20);
            while (read(c, b, 1 << 20) > 0) {}
            exit(0);
        }
    }
    int s[MAX_CONNS];
    size_t off[MAX_CONNS];
    struct pollfd p[MAX_CONNS];
    for (int i = 0; i < conns; i++) {
        s[i] = accept(ls, NULL, NULL);
        if (s[i] < 0) { perror("accept"); return 1; }
        fcntl(s[i], F_SETFL, O_NONBLOCK);
        off[i] = (size_t)i * (len / conns);
    }
    char *m = malloc(len);
    for (size_t i = 0; i < len; i++) m[i] = (char)(i * 7);
    double t0 = now(), c0 = cpu(RUSAGE_SELF), sent = 0;
    while (now() - t0 < secs) {
        for (int i = 0; i < conns; i++) p[i] = (struct pollfd){s[i], POLLOUT, 0};
        if (poll(p, conns, -1) < 0) { perror("poll"); return 1; }
        for (int i = 0; i < conns; i++) {
            if (!(p[i].revents & POLLOUT)) continue;
            size_t at = off[i] % len, n = len - at < chunk ? len - at : chunk;
            ssize_t w = write(s[i], m + at, n);
            if (w < 0 && errno == EAGAIN) continue;
            if (w <= 0) { perror("write"); return 1; }
            off[i] += w;
            sent += w;
        }
    }
    double el = now() - t0, sender = (cpu(RUSAGE_SELF) - c0) * 1000 / (sent / 1048576);
    for (int i = 0; i < conns; i++) close(s[i]);
    while (wait(NULL) > 0) {}
    double receivers = cpu(RUSAGE_CHILDREN) * 1000 / (sent / 1048576);
    printf("%d connection(s), %zu MiB buffer, %8zu-byte writes: %6.0f MiB/s, sender %.3f ms/MiB, "
           "receivers %.3f ms/MiB\n",
           conns, len >> 20, chunk, sent / 1048576 / el, sender, receivers);
    return 0;
}
