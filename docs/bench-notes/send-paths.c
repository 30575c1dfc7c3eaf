/*
 * Sender CPU per GiB over loopback TCP by the way the bytes are handed to
 * the socket (docs/bench-notes/send-paths.md):
 *   mode 0: write() of one 512 KiB buffer (the kernel copies it)
 *   mode 1: send(MSG_ZEROCOPY) of the same buffer, reusing it only after
 *           the kernel's completion notifications (at most 64 sends out)
 *   mode 2: sendfile() of 512 KiB ranges of a cached 64 MiB file
 * The receiver is a forked process that reads into a 1 MiB buffer and
 * discards. CPU is the sender's (getrusage), softirq work done in its
 * context included. 8 GiB per run.
 *
 *   gcc -O2 -o send-paths send-paths.c
 *   dd if=/dev/urandom of=/tmp/f bs=1M count=64 && cat /tmp/f > /dev/null
 *   for i in $(seq 9); do for m in 0 1; do ./send-paths $m /tmp/f; done; done
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

#define REC (512 * 1024)
#define FILE_BYTES (64L << 20)
#define TOTAL (8L << 30)

static double cpu_now(void) {
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  return r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 + r.ru_stime.tv_sec +
         r.ru_stime.tv_usec / 1e6;
}

/* Counts the completed zero-copy sends off the error queue. */
static void reap(int s, long *out) {
  char control[256];
  struct msghdr msg = {0};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  while (recvmsg(s, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) >= 0) {
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      struct sock_extended_err *e = (void *)CMSG_DATA(c);
      if (e->ee_origin == SO_EE_ORIGIN_ZEROCOPY) *out -= e->ee_data - e->ee_info + 1;
    }
    msg.msg_controllen = sizeof control;
  }
}

int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: %s MODE FILE\n", argv[0]); return 2; }
  int mode = atoi(argv[1]);
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  if (bind(ls, (void *)&a, sizeof a) || listen(ls, 1) || getsockname(ls, (void *)&a, &al)) {
    perror("listen");
    return 1;
  }
  pid_t pid = fork();
  if (pid == 0) {
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(c, (void *)&a, sizeof a)) _exit(1);
    char *b = malloc(1 << 20);
    while (read(c, b, 1 << 20) > 0) {}
    _exit(0);
  }
  int s = accept(ls, 0, 0), one = 1;
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (mode == 1 && setsockopt(s, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one)) {
    perror("SO_ZEROCOPY");
    return 1;
  }
  char *buf = aligned_alloc(4096, REC);
  memset(buf, 7, REC);
  int fd = open(argv[2], O_RDONLY);
  if (fd < 0) { perror("open"); return 1; }
  double c0 = cpu_now();
  long sent = 0, out = 0;
  off_t at = 0;
  while (sent < TOTAL) {
    ssize_t n;
    if (mode == 0) {
      n = write(s, buf, REC);
    } else if (mode == 1) {
      n = send(s, buf, REC, MSG_ZEROCOPY);
      if (n > 0) out++;
      reap(s, &out);
      while (out > 64) {
        struct pollfd p = {s, 0, 0};
        poll(&p, 1, 10);
        reap(s, &out);
      }
    } else {
      if (at + 32 + REC > FILE_BYTES) at = 0;
      off_t o = at + 32;
      n = sendfile(s, fd, &o, REC);
      at += REC + 32;
    }
    if (n < 0) { perror("send"); return 1; }
    sent += n;
  }
  double c = cpu_now() - c0;
  close(s);
  waitpid(pid, 0, 0);
  printf("%s: %.1f ms of sender CPU per GiB\n",
         mode == 0 ? "write" : mode == 1 ? "MSG_ZEROCOPY" : "sendfile",
         c * 1000 / (TOTAL / (double)(1 << 30)));
  return 0;
}
