#!/usr/bin/env python3
"""Two builds of Tessera as a 4-node cluster, side by side: MiB/s and MiB
per server CPU-second of one tessera-bench workload, alternating rounds.

Each round starts four fresh `tessera server` processes of a build on
loopback ports (4 drives each under --root, the 16 endpoints listed
explicitly: one erasure set of 16, EC:4), waits until every node serves
S3, runs `tessera-bench <workload> --host <all four nodes>` with the given
options, and stops the nodes. The order of the builds alternates from
round to round. The server CPU (utime + stime of the four processes, from
/proc) is counted from the first progress line of the timed phase to the
end, so a GET's untimed preparation is left out; MiB per CPU-second is
the bytes moved after that line over that CPU. Medians per build at the
end.

A build is a path to a `tessera` binary, optionally followed by
`@NAME=VALUE,...` environment settings for its nodes, e.g.
`target/release/tessera@TESSERA_READ_CACHE=0`.

    benches/cluster/ab_builds.py --a /tmp/tessera-before --b target/release/tessera \\
        --rounds 4 put --obj-size 16MiB
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request

USER, PASSWORD = "benchadmin", "benchsecret123"
HERE = os.path.dirname(os.path.abspath(__file__))
WORKSPACE = os.path.dirname(os.path.dirname(HERE))


def parse_build(spec):
    path, _, env = spec.partition("@")
    settings = dict(kv.split("=", 1) for kv in env.split(",") if kv)
    return os.path.abspath(path), settings


def status(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


def cpu_seconds(pids):
    total = 0
    for p in pids:
        with open(f"/proc/{p}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def run_round(build, args, root, base_port):
    path, settings = build
    shutil.rmtree(root, ignore_errors=True)
    endpoints = []
    for n in range(1, 5):
        for d in range(1, 5):
            os.makedirs(f"{root}/n{n}/d{d}")
        endpoints += [f"http://127.0.0.1:{base_port + n}{root}/n{n}/d{d}" for d in range(1, 5)]
    env = dict(os.environ, TESSERA_ROOT_USER=USER, TESSERA_ROOT_PASSWORD=PASSWORD,
               TESSERA_LOG="warn", **settings)
    procs = []
    try:
        for n in range(1, 5):
            log = open(f"{root}/n{n}.log", "w")
            procs.append(subprocess.Popen(
                [path, "server", "--address", f"127.0.0.1:{base_port + n}", *endpoints],
                env=env, stdout=log, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + 60
        for n in range(1, 5):
            # Ready, and serving S3 (an unsigned request refused, not 503).
            for path_, want in (("/minio/health/ready", 200), ("/", 403)):
                while status(f"http://127.0.0.1:{base_port + n}{path_}") != want:
                    if time.monotonic() > deadline:
                        sys.exit(f"node {n} did not start; see {root}/n{n}.log")
                    time.sleep(0.1)
        hosts = ",".join(f"127.0.0.1:{base_port + n}" for n in range(1, 5))
        bench = subprocess.Popen(
            [args.bench, args.workload, "--host", hosts, "-c", str(args.concurrent),
             "--duration", args.duration, *args.options],
            env=dict(os.environ, AWS_ACCESS_KEY_ID=USER, AWS_SECRET_ACCESS_KEY=PASSWORD),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        pids = [p.pid for p in procs]
        cpu0, ops0, lines = None, 0, []
        progress = re.compile(r"\s*" + re.escape(args.workload) + r"\s+\d+s\s+(\d+) ops")
        for line in bench.stdout:
            lines.append(line)
            m = progress.match(line)
            if m and cpu0 is None:
                cpu0, ops0 = cpu_seconds(pids), int(m.group(1))
        bench.wait()
        cpu1 = cpu_seconds(pids)
        out = "".join(lines)
        m = re.search(r"throughput: ([\d.]+) MiB/s, [\d.]+ obj/s \((\d+) ok, (\d+) bytes", out)
        if bench.returncode != 0 or m is None or cpu0 is None:
            sys.exit(f"tessera-bench failed:\n{out}")
        mib_s, ok, moved = float(m.group(1)), int(m.group(2)), int(m.group(3))
        per_cpu = moved / ok * (ok - ops0) / (1 << 20) / (cpu1 - cpu0)
        return mib_s, per_cpu
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="first build: PATH[@NAME=VALUE,...]")
    ap.add_argument("--b", required=True, help="second build: PATH[@NAME=VALUE,...]")
    ap.add_argument("--rounds", type=int, default=4, help="rounds per build")
    ap.add_argument("--duration", default="8s", help="timed phase of each round")
    ap.add_argument("--concurrent", type=int, default=8)
    ap.add_argument("--bench", default=os.path.join(WORKSPACE, "target/release/tessera-bench"))
    ap.add_argument("--root", default="/tmp/tessera-ab-builds", help="drives (emptied per round)")
    ap.add_argument("--port", type=int, default=9200, help="nodes listen on PORT+1..PORT+4")
    ap.add_argument("workload", help="tessera-bench workload (put, get, ...)")
    ap.add_argument("options", nargs=argparse.REMAINDER, help="tessera-bench options")
    args = ap.parse_args()
    builds = {"a": parse_build(args.a), "b": parse_build(args.b)}
    results = {"a": [], "b": []}
    for r in range(args.rounds):
        for name in ("a", "b") if r % 2 == 0 else ("b", "a"):
            mib_s, per_cpu = run_round(builds[name], args, args.root, args.port)
            results[name].append((mib_s, per_cpu))
            print(f"round {r + 1} {name}: {mib_s:.0f} MiB/s, {per_cpu:.0f} MiB per CPU-s", flush=True)
    for name in ("a", "b"):
        rows = results[name]
        print(f"{name} ({getattr(args, name)}): median {statistics.median(x[0] for x in rows):.0f} "
              f"MiB/s, {statistics.median(x[1] for x in rows):.0f} MiB per CPU-s")
    shutil.rmtree(args.root, ignore_errors=True)


if __name__ == "__main__":
    main()
