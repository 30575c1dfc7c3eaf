/*
 * How much CPU the copy that a piped GET record is hashed from costs, by
 * the way it is made (docs/bench-notes/send-paths.md).
 *
 * Records of 512 KiB + 32 bytes at unaligned offsets of a cached 64 MiB
 * file, each spliced into a 1 MiB pipe (as a GET does), then copied and
 * read once (a XOR-multiply pass standing in for the hash), then the pipe
 * drained to /dev/null. The copy lands in one of 64 rotating buffers, so
 * that it is as cold in the CPU's caches as a GET's record buffers.
 *   mode 0: tee into a second pipe, read the copy out of it
 *   mode 1: mmap(MAP_POPULATE) the range and read it in place (no copy)
 *   mode 2: pread the range (the pages the splice pinned)
 *
 *   gcc -O2 -mavx2 -o piped-copy piped-copy.c
 *   dd if=/dev/urandom of=/tmp/f bs=1M count=64 && cat /tmp/f > /dev/null
 *   ./piped-copy /tmp/f
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define REC (512 * 1024 + 32)
#define NREC 120
#define NBUF 64

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t pass(const uint8_t *p, size_t n) {
  uint64_t s = 0;
  const uint64_t *q = (const uint64_t *)p;
  for (size_t i = 0; i < n / 8; i++) s ^= q[i] * (i | 1);
  return s;
}

static void fail(const char *what) { perror(what); exit(1); }

int main(int argc, char **argv) {
  if (argc != 2) { fprintf(stderr, "usage: %s FILE (64 MiB, cached)\n", argv[0]); return 2; }
  int fd = open(argv[1], O_RDONLY), nul = open("/dev/null", O_WRONLY);
  int p1[2], p2[2];
  if (fd < 0 || nul < 0 || pipe2(p1, O_NONBLOCK) || pipe2(p2, O_NONBLOCK)) fail("setup");
  if (fcntl(p1[1], F_SETPIPE_SZ, 1 << 20) < 0 || fcntl(p2[1], F_SETPIPE_SZ, 1 << 20) < 0) fail("F_SETPIPE_SZ");
  uint8_t *bufs[NBUF];
  for (int i = 0; i < NBUF; i++) {
    bufs[i] = aligned_alloc(4096, REC + 4096);
    memset(bufs[i], 1, REC + 4096);
  }
  const long ps = 4096;
  uint64_t acc = 0;
  for (int mode = 0; mode < 3; mode++) {
    for (int rep = 0; rep < 5; rep++) {
      double c0 = cpu_now();
      for (int r = 0; r < NREC; r++) {
        uint8_t *buf = bufs[(r * 7) % NBUF];
        off_t off = 32 + (off_t)r * REC;
        loff_t o = off;
        if (splice(fd, &o, p1[1], NULL, REC, 0) != REC) fail("splice");
        if (mode == 0) {
          if (tee(p1[0], p2[1], REC, 0) != REC) fail("tee");
          for (size_t got = 0; got < REC;) {
            ssize_t k = read(p2[0], buf + got, REC - got);
            if (k <= 0) fail("read");
            got += k;
          }
          acc += pass(buf, REC);
        } else if (mode == 1) {
          off_t a = off & ~(ps - 1);
          size_t len = (off - a) + REC;
          uint8_t *m = mmap(NULL, len, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, a);
          if (m == MAP_FAILED) fail("mmap");
          acc += pass(m + (off - a), REC);
          munmap(m, len);
        } else {
          if (pread(fd, buf, REC, off) != REC) fail("pread");
          acc += pass(buf, REC);
        }
        for (size_t left = REC; left;) {
          ssize_t k = splice(p1[0], NULL, nul, NULL, left, 0);
          if (k <= 0) fail("drain");
          left -= k;
        }
      }
      double mib = NREC * (REC / 1048576.0);
      printf("mode %d: %.3f ms of CPU per MiB\n", mode, (cpu_now() - c0) * 1000 / mib);
    }
  }
  printf("(%lu)\n", (unsigned long)acc);
  return 0;
}
