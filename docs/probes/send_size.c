/*
 * What a TCP send over loopback costs per MiB, by the size of each write.
 *
 * A child process reads a connection in 1 MiB reads; the parent writes a
 * 16 MiB buffer to it over and over for the given seconds, in writes of
 * CHUNK bytes on a non-blocking socket (poll() for room on EAGAIN, as an
 * event loop would). Both report their CPU (user + system, getrusage) per
 * MiB moved, so a change that only moves work from the sender to the
 * receiver shows as such.
 *
 *   gcc -O2 -o /tmp/send_size docs/probes/send_size.c
 *   for c in 524288 1048576 2097152 4194304; do /tmp/send_size $c 4; done
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

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static double cpu(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_utime.tv_sec + r.ru_utime.tv_usec * 1e-6 + r.ru_stime.tv_sec +
           r.ru_stime.tv_usec * 1e-6;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s <bytes per write> <seconds>\n", argv[0]);
        return 2;
    }
    size_t chunk = strtoul(argv[1], NULL, 10);
    double secs = atof(argv[2]);
    size_t len = 16 << 20;
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (ls < 0 || bind(ls, (void *)&a, sizeof a) || listen(ls, 1) ||
        getsockname(ls, (void *)&a, &al)) {
        perror("listen");
        return 1;
    }
    int out[2];
    if (pipe(out)) return 1;
    pid_t child = fork();
    if (child == 0) {
        int c = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(c, (void *)&a, sizeof a)) { perror("connect"); exit(1); }
        char *b = malloc(1 << 20);
        double t0 = cpu(), got = 0;
        ssize_t r;
        while ((r = read(c, b, 1 << 20)) > 0) got += r;
        double per_mib = (cpu() - t0) * 1000 / (got / 1048576);
        if (write(out[1], &per_mib, sizeof per_mib) != sizeof per_mib) exit(1);
        exit(0);
    }
    int s = accept(ls, NULL, NULL);
    fcntl(s, F_SETFL, O_NONBLOCK);
    char *m = malloc(len);
    for (size_t i = 0; i < len; i++) m[i] = (char)(i * 7);
    double t0 = now(), c0 = cpu(), sent = 0;
    while (now() - t0 < secs) {
        for (size_t off = 0; off < len;) {
            size_t n = len - off < chunk ? len - off : chunk;
            ssize_t w = write(s, m + off, n);
            if (w < 0 && errno == EAGAIN) {
                struct pollfd p = {s, POLLOUT, 0};
                poll(&p, 1, -1);
                continue;
            }
            if (w <= 0) { perror("write"); return 1; }
            off += w;
            sent += w;
        }
    }
    double el = now() - t0, sender = (cpu() - c0) * 1000 / (sent / 1048576);
    close(s);
    double receiver = 0;
    if (read(out[0], &receiver, sizeof receiver) != sizeof receiver) return 1;
    waitpid(child, NULL, 0);
    printf("%8zu-byte writes: %6.0f MiB/s, sender %.3f ms/MiB, receiver %.3f ms/MiB\n", chunk,
           sent / 1048576 / el, sender, receiver);
    return 0;
}
