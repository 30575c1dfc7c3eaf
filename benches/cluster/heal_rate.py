#!/usr/bin/env python3
"""Heal rate of a replaced node: how fast a 4-node cluster puts a node's
data back on its fresh, empty drives, for Tessera and for MinIO on the
same layout, in GiB of the node's data per hour on this machine.

Each run starts a 4-node cluster (4 processes of 4 drives, the 16
endpoints listed explicitly: one pool, one erasure set of 16, the default
parity EC:4) on a private veth address, writes `--objects` objects of
`--size` bytes through all four nodes into one bucket, and waits until all
16 drives hold every object. Then node 4 is replaced: SIGTERM, its four
drive directories emptied, the same command line started again. From that
restart the script polls node 4's drives until each holds every object in
full (`<drive>/<bucket>/<key>/xl.meta`, and for an object with a part file
a data dir whose `part.1` has the size node 1's drives hold), and reports
the bytes on node 4's drives (xl.meta and part.1), the seconds to the first
object and to the last, MiB/s and GiB/h.

The runs, in order:
- Tessera with the scanner's default rate (TESSERA_SCANNER_RATE unset:
  100 object versions per second per node). A replaced node's data comes
  back through the full scanner pass each node starts when it starts.
- Tessera with TESSERA_SCANNER_RATE=0 (unlimited) on all four nodes.
- MinIO with its defaults: it heals a fresh drive by itself (its drive
  monitor looks for fresh drives every 10 s). No `mc admin heal` or other
  trigger is sent; node 4's log lines about formatting and healing are
  printed with the second they appeared, so the output shows when MinIO
  noticed the drives and that it needed nothing to start.

A heal that cannot finish is not waited for to the end of `--timeout`:
once node 4's Tessera scanner has ended its pass at start with objects
still missing and nothing queued (its next pass is TESSERA_SCANNER_INTERVAL,
an hour, away), and its drives have not changed for 10 s, the run is
reported as stalled, with what it healed and its scanner's counters.
`--tessera-env TESSERA_SCANNER_INTERVAL=10s` gives both Tessera runs later
passes within the wait (and turns that early end off); every node then
scans again every 10 s, so such a figure is not the pass at start's alone.

Both servers listen on the same kind of address: a veth pair made for the
run (MinIO refuses loopback endpoints on this machine, which it takes for a
container), as tests/python/test_cluster_minio.py does; the start-up code
is that test's and tests/python/test_cluster.py's. Needs root and iproute2.
The Tessera binary is copied into the run's temporary directory first, so a
build that replaces it meanwhile cannot give the restarted node another one.

Full measurement (release build; 256 objects of 4 MiB):

    cd /work/main && target/pyenv/bin/python benches/cluster/heal_rate.py

A small check (a debug build's figures are not to be quoted; objects of
1 MiB are inline in xl.meta in a set of 16, 2 MiB ones have part files):

    target/pyenv/bin/python benches/cluster/heal_rate.py --objects 16 \\
        --size 2MiB --tessera target/debug/tessera

Exits non-zero when a run timed out, stalled or failed, naming it.
"""

import argparse
import concurrent.futures
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "python"))

from botocore.exceptions import BotoCoreError, ClientError  # noqa: E402

from s3util import client  # noqa: E402
from tessera_server import ACCESS_KEY, SECRET_KEY, stop_process  # noqa: E402
from test_cluster import ELECT_BOUND_S, FORM_BOUND_S, Cluster, http_get  # noqa: E402
from test_cluster_minio import (  # noqa: E402
    MINIO_READY_BOUND_S,
    MinioNodes,
    minio_binary,
    on_address,
    private_address,
    s3_clients,
    s3_ready,
)

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

BUCKET = "heal-rate"
NODES = 4
DRIVES = 4
# Node 4 (index 3) is the one replaced.
REPLACED = 3
# How long a write may keep meeting 5xx answers or refused connections
# (MinIO answers 503 until every node has connected every drive).
WRITE_RETRY_BOUND_S = 60
# How long after the last write every one of the 16 drives may take to
# hold every object (both servers heal writes that missed a drive within
# seconds: Tessera's heal journal, MinIO's MRF queue).
SETTLE_BOUND_S = 120
# How long MinIO may take to log that it finished healing once the files
# are all in place (its tracker is updated after the last object).
MINIO_FINISH_LOG_BOUND_S = 30
# The most log lines of node 4 printed for a run.
LOG_LINES_SHOWN = 25
# How often the heal wait asks node 4 whether anything still heals it, and
# how long it waits on once the answer is no and nothing changes on its
# drives (a heal in flight when the pass ended lands within it).
STALL_CHECK_S = 2
STALL_GRACE_S = 10

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class RunFailed(Exception):
    pass


class Cleanups:
    """What private_address() needs of a unittest.TestCase: a place for
    its clean-up (the veth pair's removal) and a way to fail."""

    def __init__(self):
        self.calls = []

    def addCleanup(self, f, *args, **kwargs):
        self.calls.append((f, args, kwargs))

    def fail(self, msg):
        raise RunFailed(msg)

    def run(self):
        while self.calls:
            f, args, kwargs = self.calls.pop()
            try:
                f(*args, **kwargs)
            except Exception as e:  # a clean-up that fails must not hide the others
                print(f"warning: clean-up {f.__name__} failed: {e}", file=sys.stderr)


def parse_size(text):
    m = re.fullmatch(r"\s*(\d+)\s*(B|K|KiB|M|MiB|G|GiB)?\s*", text, re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r}: expected bytes, e.g. 4MiB, 512KiB, 1048576")
    unit = (m.group(2) or "B").upper()
    return int(m.group(1)) * {"B": 1, "K": KiB, "KIB": KiB, "M": MiB, "MIB": MiB, "G": GiB, "GIB": GiB}[unit]


def human(n):
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def tail(path, lines=40):
    try:
        with open(path, "rb") as f:
            return "\n".join(ANSI.sub("", f.read().decode("utf-8", "replace")).splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


def state(proc):
    if proc is None:
        return "stopped"
    code = proc.poll()
    return "running" if code is None else f"exited with {code}"


class LogWatch:
    """New lines of one log that match `pattern`, each with the seconds
    since `t0` at which a poll first saw it: the log's own timestamps (if
    any) are the server's, these are on the same clock as the heal."""

    def __init__(self, path, pattern):
        self.path, self.pattern, self.t0 = path, re.compile(pattern, re.IGNORECASE), None
        try:
            self.offset = os.path.getsize(path)
        except FileNotFoundError:
            self.offset = 0
        self.rest = b""
        self.seen = []

    def poll(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return
        self.offset += len(data)
        *lines, self.rest = (self.rest + data).split(b"\n")
        at = time.monotonic() - self.t0
        for raw in lines:
            line = ANSI.sub("", raw.decode("utf-8", "replace")).strip()
            if line and self.pattern.search(line):
                self.seen.append((at, line))

    def first(self, pattern):
        """Seconds at which the first line matching `pattern` was seen."""
        return next((at for at, line in self.seen if re.search(pattern, line, re.IGNORECASE)), None)


# Deployments: the two servers behind one interface, so the measurement is
# the same code for both.

class TesseraDeployment:
    server = "tessera"

    def __init__(self, address, env, keep):
        self.env, self.keep = dict(env), keep
        self.c = on_address(Cluster(nodes=NODES, drives=DRIVES), address)
        self.root = self.c.root

    def start_all(self):
        for i in range(NODES):
            self.c.start(i, env=self.env)

    def wait_ready(self):
        self.c.wait_agreed(range(NODES), FORM_BOUND_S, "tessera forming")
        try:
            s3_ready(s3_clients(self.c, range(NODES)), "tessera")
        except AssertionError as e:
            raise RunFailed(f"the cluster formed, but {e}\n{self.tails(range(NODES))}") from None

    def stop(self, i):
        p, self.c.procs[i] = self.c.procs[i], None
        stop_process(p)

    def wait_rest(self, rest):
        # The others agree on a leader without node 4 (an election if it
        # led), so the heal timing holds no election.
        self.c.wait_agreed(rest, ELECT_BOUND_S, "tessera without node 4")

    def start(self, i):
        self.c.start(i, env=self.env)

    def proc(self, i):
        return self.c.procs[i]

    def log(self, i):
        return self.c.log(i)

    def command(self, i):
        # Cluster.start's settings, then the run's.
        env = {"TESSERA_ROOT_USER": ACCESS_KEY, "TESSERA_ROOT_PASSWORD": SECRET_KEY,
               "TESSERA_PROMETHEUS_AUTH_TYPE": "public", **self.env}
        envs = [f"{k}={v}" for k, v in sorted(env.items())]
        return shlex.join([*envs, os.environ["TESSERA_BIN"], "server", "--address", self.c.name(i),
                           *self.c.endpoints])

    def log_pattern(self):
        return r"format|heal|scann|replaced|error|warn"

    def scanner(self):
        """Node 4's scanner and healer gauges and counters from its
        metrics ({name: value}), or a string saying why there are none."""
        try:
            code, body = http_get(self.c.url(REPLACED, "/minio/v2/metrics/node"), timeout=5)
        except OSError as e:
            return f"node 4's metrics did not answer: {e}"
        if code != 200:
            return f"node 4's metrics answered {code}"
        values = {}
        for line in body.decode("utf-8", "replace").splitlines():
            m = re.fullmatch(r"tessera_(scanner_\w+|heal_queue_length|heal_journal_pending)\s+([0-9.e+-]+)", line)
            if m:
                values[m.group(1).removesuffix("_total")] = float(m.group(2))
        return values

    def stalled(self):
        """Why nothing heals node 4 any more, or None while something may:
        its scanner's pass at start has ended, and neither the heal queue
        nor the heal journal holds anything, so what is still missing waits
        for the next pass (TESSERA_SCANNER_INTERVAL, 1h by default). With
        an interval of the caller's, a next pass may come soon: only the
        timeout ends the wait then."""
        if "TESSERA_SCANNER_INTERVAL" in self.env:
            return None
        v = self.scanner()
        if isinstance(v, str) or v.get("scanner_cycles", 0) < 1:
            return None
        if v.get("heal_queue_length", 0) or v.get("heal_journal_pending", 0):
            return None
        return (f"node 4's scanner pass ended (checked {v.get('scanner_checked_versions', 0):.0f}, "
                f"healed {v.get('scanner_healed_versions', 0):.0f}, errors "
                f"{v.get('scanner_errors', 0):.0f}) with objects still missing, and nothing is "
                "queued: the next pass is TESSERA_SCANNER_INTERVAL (1h) away")

    def notes(self, watch):
        v = self.scanner()
        if isinstance(v, str):
            return [v]
        return ["node 4's metrics at the end: " + ", ".join(f"{k} {n:g}" for k, n in sorted(v.items()))]

    def tails(self, nodes):
        return "\n".join(f"--- tessera node {i + 1}, {state(self.proc(i))} ({self.log(i)})\n{tail(self.log(i))}"
                         for i in nodes)

    def cleanup(self):
        if self.keep:
            self.c.stop_all()
        else:
            self.c.cleanup()


class Minio(MinioNodes):
    """MinioNodes with one node started on its own, with the command line
    and environment every node gets (MinioNodes.start's)."""

    def env(self, i):
        # The caller's MINIO_* settings are left out (MINIO_VOLUMES and the
        # like would change the deployment); the rest is MinioNodes.start's.
        env = {k: v for k, v in os.environ.items() if not k.startswith("MINIO_")}
        env.update({
            "MINIO_ROOT_USER": ACCESS_KEY,
            "MINIO_ROOT_PASSWORD": SECRET_KEY,
            # MinIO refuses drives on the root disk unless told it is a CI run.
            "MINIO_CI_CD": "1",
            "MINIO_BROWSER": "off",
            "MINIO_UPDATE": "off",
        })
        home = os.path.join(self.c.root, f"minio-home{i + 1}")
        os.makedirs(home, exist_ok=True)
        env["HOME"] = home
        return env

    def argv(self, i):
        return [minio_binary(), "server", "--address", self.c.name(i), *self.c.endpoints]

    def start_node(self, i):
        with open(self.log(i), "ab") as log:
            self.procs[i] = subprocess.Popen(
                self.argv(i), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=self.env(i))

    def start(self):
        for i in range(len(self.procs)):
            self.start_node(i)


class MinioDeployment:
    server = "minio"

    def __init__(self, address, keep):
        self.keep = keep
        self.c = on_address(Cluster(nodes=NODES, drives=DRIVES), address)
        self.root = self.c.root
        self.m = Minio(self.c)

    def start_all(self):
        self.m.start()

    def wait_ready(self):
        try:
            self.m.wait_ready()
        except AssertionError as e:
            raise RunFailed(str(e)) from None

    def stop(self, i):
        p, self.m.procs[i] = self.m.procs[i], None
        stop_process(p)

    def wait_rest(self, rest):
        # The others answer the cluster health check (write quorum with
        # node 4's drives gone: 12 of 16).
        deadline = time.monotonic() + MINIO_READY_BOUND_S
        for i in rest:
            while True:
                try:
                    code, _ = http_get(self.c.url(i, "/minio/health/cluster"), timeout=2)
                except OSError:
                    code = None
                if code == 200:
                    break
                if time.monotonic() > deadline:
                    raise RunFailed(f"minio node {i + 1} not healthy without node 4 within "
                                    f"{MINIO_READY_BOUND_S} s (last answer {code}):\n{self.tails(rest)}")
                time.sleep(0.3)

    def start(self, i):
        self.m.start_node(i)

    def proc(self, i):
        return self.m.procs[i]

    def log(self, i):
        return self.m.log(i)

    def command(self, i):
        fixed = {k: v for k, v in self.m.env(i).items() if k.startswith("MINIO_") or k == "HOME"}
        envs = [f"{k}={v}" for k, v in sorted(fixed.items())]
        return shlex.join([*envs, *self.m.argv(i)])

    def log_pattern(self):
        return r"heal|format|fresh|unformatted|error"

    def stalled(self):
        # MinIO retries a drive's heal by itself (up to 3 more times), so
        # only the timeout ends its wait.
        return None

    def notes(self, watch):
        noticed = watch.first(r"Healing drive")
        finished = watch.first(r"Healing of drive .* is (finished|complete)")
        notes = ["no `mc admin heal` or other trigger was sent: healing had to start by itself"]
        if noticed is None:
            notes.append("node 4's log has no 'Healing drive' line")
        else:
            notes.append(f"node 4 logged 'Healing drive ...' {noticed:.1f} s after its restart "
                         "(its drive monitor looks for fresh drives every 10 s)")
        failed = sum(1 for _, line in watch.seen if re.search(r"unable to heal object", line, re.IGNORECASE))
        retried = watch.first(r"is incomplete, retrying")
        if failed:
            notes.append(f"node 4 logged 'unable to heal object' {failed} times (MinIO's read quorum error, "
                         "'Storage resources are insufficient for the read operation', on a try before it "
                         "reads the other nodes' drives); the drive's heal is retried at the monitor's next tick")
        if retried is not None:
            notes.append(f"node 4 logged a drive's heal incomplete and retried it {retried:.1f} s after "
                         "its restart")
        if finished is not None:
            notes.append(f"node 4 logged 'Healing of drive ... is finished/complete' {finished:.1f} s after its "
                         "restart")
        return notes

    def tails(self, nodes):
        return "\n".join(f"--- minio node {i + 1}, {state(self.proc(i))} ({self.log(i)})\n{tail(self.log(i))}"
                         for i in nodes)

    def cleanup(self):
        self.m.stop()
        if not self.keep:
            self.c.cleanup()


# What the drives hold.

def drives_of(root, node):
    """The drive directories of node `node` (1-based)."""
    return [os.path.join(root, f"n{node}", f"d{d}") for d in range(1, DRIVES + 1)]


def object_state(drive, key):
    """(xl.meta size, [part.1 sizes of its data dirs]) of `key` on
    `drive`, or None while it has no xl.meta. An object small enough to be
    inline in xl.meta has no data dir."""
    obj = os.path.join(drive, BUCKET, key)
    try:
        meta = os.stat(os.path.join(obj, "xl.meta")).st_size
    except FileNotFoundError:
        return None
    parts = []
    try:
        with os.scandir(obj) as entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    try:
                        parts.append(os.stat(os.path.join(e.path, "part.1")).st_size)
                    except FileNotFoundError:
                        pass
    except FileNotFoundError:
        return None
    return meta, parts


def reference(root, keys):
    """{key: part.1 size on every drive, None if inline}, once all 16
    drives hold every object alike; None while they do not yet (and the
    first key that is not, for the error message)."""
    ref = {}
    for key in keys:
        states = [object_state(d, key) for n in range(1, NODES + 1) for d in drives_of(root, n)]
        if any(s is None for s in states):
            return None, key
        sizes = {tuple(s[1]) for s in states}
        if len(sizes) != 1 or len(next(iter(sizes))) > 1:
            return None, key
        parts = next(iter(sizes))
        ref[key] = parts[0] if parts else None
    return ref, None


def wait_settled(root, keys):
    deadline = time.monotonic() + SETTLE_BOUND_S
    while True:
        ref, missing = reference(root, keys)
        if ref is not None:
            return ref
        if time.monotonic() > deadline:
            states = {f"n{n}/d{d + 1}": object_state(dr, missing)
                      for n in range(1, NODES + 1) for d, dr in enumerate(drives_of(root, n))}
            raise RunFailed(f"the 16 drives do not all hold {missing} alike {SETTLE_BOUND_S} s after "
                            f"the writes: (xl.meta size, part.1 sizes) per drive: {states}")
        time.sleep(1)


def node_bytes(root, node, keys):
    """Bytes of xl.meta and part.1 files of `keys` on node `node`'s drives."""
    total = 0
    for d in drives_of(root, node):
        for key in keys:
            s = object_state(d, key)
            if s is not None:
                total += s[0] + sum(s[1])
    return total


def empty_drives(root, node):
    """A replaced node's blank drives: every drive directory kept (the
    mount points), everything in it gone."""
    for d in drives_of(root, node):
        with os.scandir(d) as entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    shutil.rmtree(e.path)
                else:
                    os.unlink(e.path)


# Writing.

def write_objects(urls, keys, size, threads):
    """PUTs every key, key i through node i % 4, from `threads` threads;
    returns the seconds taken. Each object is one random block with its
    index in the first bytes, so no two are alike."""
    block = os.urandom(size)
    local = threading.local()

    def put(i, key):
        if not hasattr(local, "clients"):
            local.clients = [client(u) for u in urls]
        s3 = local.clients[i % len(urls)]
        stamp = i.to_bytes(8, "big")
        body = stamp[:size] + block[len(stamp[:size]):]
        retry(lambda: s3.put_object(Bucket=BUCKET, Key=key, Body=body),
              f"PUT {key} through node {i % len(urls) + 1}")

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=threads) as pool:
        for f in [pool.submit(put, i, k) for i, k in enumerate(keys)]:
            f.result()
    return time.monotonic() - started


def make_bucket(s3):
    # A retried CreateBucket may find the bucket its first try made.
    try:
        s3.create_bucket(Bucket=BUCKET)
    except ClientError as e:
        if e.response["Error"].get("Code") != "BucketAlreadyOwnedByYou":
            raise


def retry(call, what):
    """call(), again while it meets a 5xx answer or a refused connection,
    for at most WRITE_RETRY_BOUND_S."""
    deadline = time.monotonic() + WRITE_RETRY_BOUND_S
    while True:
        try:
            return call()
        except ClientError as e:
            status = e.response["ResponseMetadata"]["HTTPStatusCode"]
            last = f"{status} {e.response['Error'].get('Code')}: {e.response['Error'].get('Message')}"
            if status < 500:
                raise RunFailed(f"{what}: {last}") from None
        except (BotoCoreError, OSError) as e:
            last = str(e)
        if time.monotonic() > deadline:
            raise RunFailed(f"{what}: still failing after {WRITE_RETRY_BOUND_S} s: {last}")
        time.sleep(0.5)


# One run.

def measure(dep, setting, args):
    """Starts `dep`, writes, replaces node 4 and times its heal; returns
    the run's result (a dict)."""
    keys = [f"obj-{i:06d}" for i in range(args.objects)]
    result = {"server": dep.server, "setting": setting, "objects": args.objects}
    print(f"\n== {dep.server}, {setting}: drives and logs in {dep.root}", flush=True)
    dep.start_all()
    dep.wait_ready()
    urls = [dep.c.url(i, "") for i in range(NODES)]
    retry(lambda: make_bucket(client(urls[0])), "CreateBucket")
    took = write_objects(urls, keys, args.size, args.threads)
    print(f"   wrote {args.objects} objects of {human(args.size)} through {NODES} nodes in {took:.1f} s "
          f"({args.objects * args.size / MiB / took:.1f} MiB/s)", flush=True)
    ref = wait_settled(dep.root, keys)
    inline = sum(1 for v in ref.values() if v is None)
    before = node_bytes(dep.root, REPLACED + 1, keys)
    print(f"   every drive holds every object ({inline} inline in xl.meta); node 4 holds {human(before)}",
          flush=True)

    # Node 4 is replaced: stopped, its drives emptied, started again with
    # the same command line.
    dep.stop(REPLACED)
    empty_drives(dep.root, REPLACED + 1)
    rest = [i for i in range(NODES) if i != REPLACED]
    dep.wait_rest(rest)
    print(f"   node 4 stopped (SIGTERM), its drives emptied; restarting it:\n   {dep.command(REPLACED)}",
          flush=True)

    pending = {(d, k) for d in drives_of(dep.root, REPLACED + 1) for k in keys}
    # The watch starts at the log's end before the restart, so it sees
    # every line the new process writes.
    watch = LogWatch(dep.log(REPLACED), dep.log_pattern())
    t0 = watch.t0 = time.monotonic()
    dep.start(REPLACED)
    first = done = stalled = None
    deadline = t0 + args.timeout
    checked = changed = t0
    while True:
        for d, k in list(pending):
            s = object_state(d, k)
            if s is None:
                continue
            if first is None:
                first = time.monotonic() - t0
            if ref[k] is None or ref[k] in s[1]:
                pending.discard((d, k))
                changed = time.monotonic()
        watch.poll()
        if not pending:
            done = time.monotonic() - t0
            break
        for i in range(NODES):
            p = dep.proc(i)
            if p is None or p.poll() is not None:
                code = None if p is None else p.returncode
                raise RunFailed(f"{dep.server} node {i + 1} exited ({code}) during the heal:\n{dep.tails([i])}")
        now = time.monotonic()
        if now > deadline:
            break
        if now - checked >= STALL_CHECK_S:
            checked = now
            why = dep.stalled()
            if why and now - changed >= STALL_GRACE_S:
                stalled = (why, changed - t0)
                break
        time.sleep(args.poll)

    if dep.server == "minio" and done is not None:
        # MinIO logs the end of a drive's heal after its tracker is saved:
        # wait a little for it, so the notes can say when MinIO was done.
        until = time.monotonic() + MINIO_FINISH_LOG_BOUND_S
        while watch.first(r"Healing of drive .* is (finished|complete)") is None and time.monotonic() < until:
            time.sleep(args.poll)
            watch.poll()
    watch.poll()

    healed = node_bytes(dep.root, REPLACED + 1, keys)
    result.update(bytes=healed, before=before, first=first, done=done,
                  complete=len(keys) * DRIVES - len(pending), pairs=len(keys) * DRIVES,
                  log=watch.seen, notes=dep.notes(watch), command=dep.command(REPLACED))
    if stalled is not None:
        result["stalled"] = stalled[1]
        last = f", the last {stalled[1]:.1f} s after the restart" if result["complete"] else ""
        result["error"] = (f"stalled: {stalled[0]}; {result['complete']} of {result['pairs']} "
                           f"(drive, object) pairs healed{last}")
    elif done is None:
        result["error"] = (f"timed out after {args.timeout:.0f} s: {result['complete']} of "
                           f"{result['pairs']} (drive, object) pairs healed")
    report_run(result)
    return result


def report_run(r):
    if r.get("done") is not None:
        print(f"   first object after {fmt_s(r['first'])}, every object on node 4's {DRIVES} drives after "
              f"{r['done']:.1f} s: {human(r['bytes'])} healed ({rate_mib(r)} MiB/s, {rate_gib_h(r)} GiB/h)")
        if r["first"] is not None and r["done"] - r["first"] >= 1:
            # The rate once healing shows on the drives: without the time
            # to notice the drives, which does not grow with the data.
            span = r["done"] - r["first"]
            print(f"   from the first object to the last: {span:.1f} s, {r['bytes'] / MiB / span:.1f} MiB/s, "
                  f"{r['bytes'] / GiB / (span / 3600):.2f} GiB/h")
    else:
        print(f"   {r['error']}; first object after {fmt_s(r.get('first'))}; {human(r['bytes'])} on node 4")
    if r["bytes"] != r["before"]:
        print(f"   (node 4 held {human(r['before'])} before it was replaced)")
    shown, more = condensed(r["log"])
    if shown:
        print("   node 4's log lines about formatting and healing (seconds after its restart; "
              "lines alike but for names and numbers shown twice and counted):")
        for at, line, alike in shown:
            print(f"     +{at:6.1f} s  {line[:220]}" + (f"  [{alike} more like it]" if alike else ""))
        if more:
            print(f"     ... and {more} more")
    for n in r["notes"]:
        print(f"   {n}")
    sys.stdout.flush()


def condensed(lines):
    """([(seconds, line, how many more alike)], lines left out) of a
    watch's lines: stack frames and MinIO's "API: SYSTEM..." headers left
    out, lines that differ only in names and numbers (one per drive or per
    object) shown twice with a count, at most LOG_LINES_SHOWN in all."""
    shown, groups, more = [], {}, 0
    for at, line in lines:
        if re.match(r"\d+: /|API: SYSTEM\.", line):
            continue
        body = re.sub(r"^\S*\d{4}-\d\d-\d\dT\S+\s+", "", line)
        shape = re.sub(r"'[^']*'|\"[^\"]*\"|\S*/\S*|\d+", "#", body)
        if shape in groups:
            g = groups[shape]
            if g[1] < 2:
                g[1] += 1
                if len(shown) < LOG_LINES_SHOWN:
                    g[0] = len(shown)
                    shown.append([at, line, 0])
                    continue
            else:
                shown[g[0]][2] += 1
                continue
        elif len(shown) < LOG_LINES_SHOWN:
            groups[shape] = [len(shown), 1]
            shown.append([at, line, 0])
            continue
        more += 1
    return shown, more


def fmt_s(s):
    return "-" if s is None else f"{s:.1f} s"


def rate_mib(r):
    return f"{r['bytes'] / MiB / r['done']:.1f}" if r.get("done") else "-"


def rate_gib_h(r):
    return f"{r['bytes'] / GiB / (r['done'] / 3600):.2f}" if r.get("done") else "-"


def summary(results, command, debug):
    print("\n## Heal rate of a replaced node (4 nodes x 4 drives, one erasure set of 16, EC:4)\n")
    if debug:
        print("**Debug build of Tessera: these figures are not to be quoted.**\n")
    print("| server | setting | objects | node bytes healed | s to first object | s to done | MiB/s | GiB/h |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        if "bytes" not in r:
            print(f"| {r['server']} | {r['setting']} | {r['objects']} | failed | - | - | - | - |")
            continue
        if r.get("done") is not None:
            done = f"{r['done']:.1f}"
        else:
            done = f"{'stalled' if 'stalled' in r else 'timed out'} ({r['complete']}/{r['pairs']} healed)"
        first = f"{r['first']:.1f}" if r.get("first") is not None else "-"
        print(f"| {r['server']} | {r['setting']} | {r['objects']} | {r['bytes']:,} ({human(r['bytes'])}) "
              f"| {first} | {done} | {rate_mib(r)} | {rate_gib_h(r)} |")
    print(f"\nCommand: `{command}`")
    print("\nSeconds count from node 4's restart; done is when each of its 4 drives holds every object "
          "(xl.meta, and part.1 at the size node 1's drives hold), polled on the file system. "
          "Bytes are node 4's xl.meta and part.1 files at the end.")


def shown(env, but=None):
    """The settings of `env` (but one) for the setting column."""
    items = [f"{k}={v}" for k, v in sorted(env.items()) if k != but]
    return "; " + ", ".join(items) if items else ""


def interrupted(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main():
    default_tessera = os.path.join(REPO, "target", "release", "tessera")
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tessera", default=None,
                   help=f"tessera binary (default {default_tessera}, else target/debug/tessera)")
    p.add_argument("--minio", default=os.environ.get("TESSERA_MINIO")
                   or os.path.join(REPO, "target", "tools", "bin", "minio"),
                   help="MinIO server binary (default env TESSERA_MINIO, else target/tools/bin/minio)")
    p.add_argument("--objects", type=int, default=256, help="objects written (default 256)")
    p.add_argument("--size", type=parse_size, default=4 * MiB, help="bytes per object (default 4MiB)")
    p.add_argument("--threads", type=int, default=4, help="writer threads (default 4)")
    p.add_argument("--timeout", type=float, default=900, help="bound of each heal, seconds (default 900)")
    p.add_argument("--poll", type=float, default=0.5, help="seconds between file-system polls (default 0.5)")
    p.add_argument("--runs", default="tessera,tessera-rate0,minio",
                   help="which runs, in order (default tessera,tessera-rate0,minio)")
    p.add_argument("--tessera-env", action="append", default=[], metavar="TESSERA_X=VALUE",
                   help="a setting for every Tessera node of both Tessera runs (repeatable), shown "
                        "in the setting column, e.g. TESSERA_SCANNER_INTERVAL=10s")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (drives, logs)")
    args = p.parse_args()
    if args.objects < 1 or args.size < 1 or args.threads < 1:
        p.error("--objects, --size and --threads must be positive")
    runs = [r.strip() for r in args.runs.split(",") if r.strip()]
    extra = {}
    for item in args.tessera_env:
        k, eq, v = item.partition("=")
        if not eq or not k.startswith("TESSERA_"):
            p.error(f"--tessera-env {item!r}: expected TESSERA_NAME=VALUE")
        extra[k] = v
    unknown = [r for r in runs if r not in ("tessera", "tessera-rate0", "minio")]
    if unknown:
        p.error(f"unknown runs {unknown}: tessera, tessera-rate0, minio")
    command = shlex.join([sys.executable, *sys.argv])

    tessera = args.tessera
    if tessera is None:
        tessera = default_tessera
        if not os.access(tessera, os.X_OK):
            tessera = os.path.join(REPO, "target", "debug", "tessera")
            print(f"warning: no {default_tessera}: using {tessera}", file=sys.stderr)
    tessera = os.path.abspath(tessera)
    debug = any(r.startswith("tessera") for r in runs) and f"{os.sep}debug{os.sep}" in tessera
    if debug:
        print(f"warning: {tessera} is a debug build: its figures are not to be quoted", file=sys.stderr)
    if any(r.startswith("tessera") for r in runs) and not os.access(tessera, os.X_OK):
        p.error(f"{tessera} is not an executable file")
    os.environ["TESSERA_MINIO"] = os.path.abspath(args.minio)
    if "minio" in runs:
        minio_binary()

    # The servers get the defaults: the caller's TESSERA_* settings (a
    # scanner rate, a drive timeout) are left out; MinioNodes leaves out
    # MINIO_* the same way.
    for k in [k for k in os.environ if k.startswith("TESSERA_") and k != "TESSERA_MINIO"]:
        if k not in ("TESSERA_BIN", "TESSERA_MC"):
            print(f"note: {k} of the caller's environment is not passed to the servers", file=sys.stderr)
        del os.environ[k]

    # SIGTERM ends the run through the finally blocks, as Ctrl-C does.
    signal.signal(signal.SIGTERM, interrupted)

    work = tempfile.mkdtemp(prefix="tessera-heal-rate-")
    # Every cluster's drives and logs go under `work` (Cluster uses mkdtemp).
    tempfile.tempdir = work
    cleanups = Cleanups()
    results, failed = [], []
    try:
        # A copy of the binary: a build that replaces target/*/tessera
        # while this runs cannot give the restarted node another build.
        if any(r.startswith("tessera") for r in runs):
            os.environ["TESSERA_BIN"] = os.path.join(work, "tessera")
            shutil.copy2(tessera, os.environ["TESSERA_BIN"])
        address = private_address(cleanups)
        print(f"heal rate: {args.objects} objects of {human(args.size)} ({human(args.objects * args.size)}), "
              f"4 nodes x 4 drives on {address}; tessera {tessera}; minio {args.minio}", flush=True)
        for run in runs:
            if run == "minio":
                setting = "defaults (fresh-drive healing)"
                dep = MinioDeployment(address, args.keep)
            elif run == "tessera":
                setting = "TESSERA_SCANNER_RATE default (100/s per node)" + shown(extra)
                dep = TesseraDeployment(address, extra, args.keep)
            else:
                env = dict(extra, TESSERA_SCANNER_RATE="0")
                setting = "TESSERA_SCANNER_RATE=0 (unlimited)" + shown(env, but="TESSERA_SCANNER_RATE")
                dep = TesseraDeployment(address, env, args.keep)
            try:
                r = measure(dep, setting, args)
            except (RunFailed, AssertionError, RuntimeError, OSError) as e:
                # The error's first line, then every node's state and log
                # tail (the tails some errors carry would come twice).
                what = str(e).splitlines()[0] if str(e) else type(e).__name__
                print(f"\n{dep.server}, {setting}: FAILED: {what}\n{dep.tails(range(NODES))}", flush=True)
                r = {"server": dep.server, "setting": setting, "objects": args.objects, "error": f"failed: {what}"}
            finally:
                dep.cleanup()
            results.append(r)
            if "error" in r:
                failed.append(f"{r['server']} ({r['setting']}): {r['error'].splitlines()[0]}")
        summary(results, command, debug)
    finally:
        cleanups.run()
        if args.keep:
            print(f"\nkept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if failed:
        print("\n" + "\n".join(f"FAILED: {f}" for f in failed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt as e:
        print(f"\ninterrupted ({e or 'Ctrl-C'}): every server stopped, the temporary files removed",
              file=sys.stderr)
        sys.exit(130)
