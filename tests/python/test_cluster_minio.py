"""Interoperability of a four-node Tessera cluster with a four-node MinIO
cluster on the same drives: the contract that Tessera's cluster mode keeps
MinIO's distributed on-disk format.

Both run as an operator runs them: four processes on one private address
(10.77.x.1 on a veth pair made for the test: in a container, one with
/.dockerenv, MinIO waits forever for a loopback endpoint host "to resolve
to a valid IP"), each on its own port, with the same sixteen endpoints
`http://ADDR:PORT<root>/n{N}/d{D}` listed explicitly (one pool, one
erasure set of 16, MinIO's legacy argument style) and the same root
credentials.

- MinIO to Tessera: MinIO writes objects of every shape (empty, one byte,
  inline in xl.meta, a part file, a two-part multipart upload; user
  metadata, nested keys) through its four nodes and stops; the Tessera
  cluster starts on the same drives and endpoints, and every node lists
  the bucket with MinIO's keys, sizes and ETags and serves every object
  bit for bit, also with one node killed (SIGKILL).
- Tessera to MinIO: the Tessera cluster formats fresh drives and writes
  the same shapes through its four nodes, and stops; MinIO starts on those
  drives, lists and serves every object bit for bit, and HEAD shows the
  size, ETag and metadata Tessera gave.
- Tessera to MinIO with two erasure sets: eight drives per node, 32
  endpoints, two sets of 16 (MinIO's legacy style puts nodes 1 and 2 in
  the first, 3 and 4 in the second). The objects, and 24 more small ones,
  land in both sets, each in the set MinIO's key hash gives it: MinIO
  finds every one.

The MinIO binary comes from TESSERA_MINIO (`cargo xtask ci` exports it),
else target/tools/bin/minio; without it the test fails, it never skips.
The veth pair needs root and iproute2; without them the test fails too.

Run by hand:

    cd tests/python && TESSERA_BIN=../../target/debug/tessera \\
        ../../target/pyenv/bin/python -m unittest test_cluster_minio -v
"""

import hashlib
import os
import random
import shutil
import socket
import subprocess
import time
import unittest

from botocore.exceptions import BotoCoreError, ClientError

from s3util import client
from tessera_server import ACCESS_KEY, SECRET_KEY, stop_process
from test_cluster import ELECT_BOUND_S, FORM_BOUND_S, Cluster, http_get, run

KiB = 1024
MiB = 1024 * KiB

# MinIO on four processes formats the drives and reaches write quorum in a
# few seconds; a loaded 2-core CI machine gets ample room.
MINIO_READY_BOUND_S = 60
# How long S3 may keep answering "not ready" (503) once the nodes agree.
S3_READY_BOUND_S = 30
# A MinIO node that could not reach a peer's drive when it started connects
# it on its next drive monitor tick, 15 s later (erasure-sets.go,
# defaultMonitorConnectEndpointInterval); until then it lacks read quorum
# (503 SlowDownRead) though /minio/health/cluster says 200. Two ticks.
# In that window a node has also been seen to answer 500 once (a panic its
# handler recovered, on a loaded CI machine while another set of the
# cluster was still unhealthy); it is waited out the same way, and a 500
# that lasts the whole bound still fails.
MINIO_READ_BOUND_S = 40
# What a node still connecting its peers' drives answers.
MINIO_NOT_YET = (500, 503)

BUCKET = "interop"

# The shapes both sides write: (key, part sizes, user metadata, content
# type). 100 KiB is inline in xl.meta; so is 1 MiB in a set of 16 (a shard
# of 1 MiB / 12 is under MinIO's 128 KiB inline limit); 5 MiB + 17 bytes
# has a part file on every drive; the multipart upload has two parts of
# different sizes.
OBJECTS = [
    ("empty", [0], {}, None),
    ("one-byte", [1], {"case": "one byte"}, None),
    ("a/b/c.txt", [100 * KiB], {"case": "inline", "owner": "interop"}, "text/plain"),
    ("a/b/d/one-mib.bin", [MiB], {}, None),
    ("big/five-mib-plus-17", [5 * MiB + 17], {"case": "part file"}, "application/x-interop"),
    ("multipart/two-parts", [5 * MiB, MiB + 3], {"case": "multipart"}, None),
]


def minio_binary():
    """MinIO's server binary: TESSERA_MINIO, else target/tools/bin/minio
    (where `cargo xtask tools` installs it). Missing, the test fails."""
    path = os.environ.get("TESSERA_MINIO")
    if not path:
        here = os.path.dirname(os.path.abspath(__file__))
        path = os.path.join(here, "..", "..", "target", "tools", "bin", "minio")
        if not os.access(path, os.X_OK):
            raise RuntimeError(
                "TESSERA_MINIO is not set and target/tools/bin/minio does not exist: run "
                "`cargo xtask tools` or point TESSERA_MINIO at a MinIO server binary"
            )
    path = os.path.abspath(path)
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"TESSERA_MINIO={path} is not an executable file")
    return path


def ip(*args):
    done = run("ip", *args, check=False)
    if done.returncode != 0:
        raise AssertionError(f"ip {' '.join(args)} failed: {done.stderr.strip()}")


def private_address(test):
    """A non-loopback address of this host for the test's nodes: a veth
    pair (tsm<tag>a/b, apart from test_cluster.Partition's tsb/tsr/tsv
    names and 10.213 subnet) with 10.77.<tag>.1 on one end, removed in the
    test's cleanup even when the test fails."""
    if os.geteuid() != 0:
        test.fail("the test needs root to make a veth pair (MinIO refuses loopback endpoints)")
    if shutil.which("ip") is None:
        test.fail("the test needs the `ip` command (iproute2) to make a veth pair")
    tag = os.getpid() % 10000
    link, peer = f"tsm{tag}a", f"tsm{tag}b"
    address = f"10.77.{os.getpid() % 250}.1"
    ip("link", "add", link, "type", "veth", "peer", "name", peer)
    test.addCleanup(run, "ip", "link", "del", link, check=False)
    ip("addr", "add", f"{address}/24", "dev", link)
    ip("link", "set", link, "up")
    ip("link", "set", peer, "up")
    return address


def free_port_on(address):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def on_address(c, address, drives=4):
    """Cluster `c` (of `drives` drives per node) moved to `address`: its
    nodes listen there, and its endpoints name it, as MinIO needs them."""
    c.ports = []
    while len(c.ports) < 4:
        p = free_port_on(address)
        if p not in c.ports:
            c.ports.append(p)
    c.name = lambda i: f"{address}:{c.ports[i]}"
    c.url = lambda i, path: f"http://{address}:{c.ports[i]}{path}"
    c.endpoints = [
        f"http://{address}:{port}{c.root}/n{n}/d{d}"
        for n, port in enumerate(c.ports, 1)
        for d in range(1, drives + 1)
    ]
    return c


class MinioNodes:
    """`minio server` on the cluster's addresses, ports and drives: one
    process per node, each given all the endpoints. Logs go to
    minio{N}.log in the cluster's root; each node has its own HOME (MinIO
    keeps its certificates directory there)."""

    def __init__(self, c):
        self.c = c
        self.procs = [None] * len(c.ports)

    def log(self, i):
        return os.path.join(self.c.root, f"minio{i + 1}.log")

    def log_tail(self, i, lines=30):
        try:
            with open(self.log(i), "rb") as f:
                return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""

    def logs(self, lines=30):
        return "\n".join(f"--- minio node {i + 1}\n{self.log_tail(i, lines)}" for i in range(len(self.procs)))

    def start(self):
        # The environment is the test's, without any MINIO_* setting of the
        # caller (MINIO_VOLUMES and the like would change the deployment).
        env = {k: v for k, v in os.environ.items() if not k.startswith("MINIO_")}
        env.update({
            "MINIO_ROOT_USER": ACCESS_KEY,
            "MINIO_ROOT_PASSWORD": SECRET_KEY,
            # MinIO refuses drives on the root disk unless told it is a CI run.
            "MINIO_CI_CD": "1",
            "MINIO_BROWSER": "off",
            "MINIO_UPDATE": "off",
        })
        for i in range(len(self.procs)):
            home = os.path.join(self.c.root, f"minio-home{i + 1}")
            os.makedirs(home, exist_ok=True)
            with open(self.log(i), "ab") as log:
                self.procs[i] = subprocess.Popen(
                    [minio_binary(), "server", "--address", self.c.name(i), *self.c.endpoints],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    env=dict(env, HOME=home),
                )

    def wait_ready(self):
        """Waits until every node answers /minio/health/cluster with 200
        (the erasure set has write quorum) and S3 lists buckets."""
        deadline = time.monotonic() + MINIO_READY_BOUND_S
        waiting = list(range(len(self.procs)))
        while waiting:
            for i, p in enumerate(self.procs):
                if p.poll() is not None:
                    raise AssertionError(f"minio node {i + 1} exited with {p.returncode}:\n{self.logs()}")
            try:
                code, _ = http_get(self.c.url(waiting[0], "/minio/health/cluster"), timeout=2)
            except OSError:
                code = None
            if code == 200:
                waiting.pop(0)
                continue
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"minio node {waiting[0] + 1} not healthy within {MINIO_READY_BOUND_S} s "
                    f"(last answer {code}):\n{self.logs()}")
            time.sleep(0.3)
        s3_ready(s3_clients(self.c, range(len(self.procs))), "minio")

    def wait_readable(self, key):
        """Waits while nodes answer HEAD `key` of BUCKET with 503 or 500
        (read quorum not reached yet, see MINIO_READ_BOUND_S); any other
        error, or one that outlasts the bound, fails."""
        deadline = time.monotonic() + MINIO_READ_BOUND_S
        for n, s3 in s3_clients(self.c, range(len(self.procs))).items():
            while True:
                try:
                    s3.head_object(Bucket=BUCKET, Key=key)
                    break
                except ClientError as e:
                    last = e.response["ResponseMetadata"]["HTTPStatusCode"]
                    if last not in MINIO_NOT_YET or time.monotonic() > deadline:
                        raise AssertionError(
                            f"minio node {n} does not read {key}: HEAD answers {last} "
                            f"(waited up to {MINIO_READ_BOUND_S} s for 503s and 500s to end):\n"
                            f"{self.logs()}") from None
                    time.sleep(0.5)

    def stop(self):
        """SIGTERM to every node, then waits for each (SIGKILL after 10 s)."""
        for p in self.procs:
            if p is not None and p.poll() is None:
                p.terminate()
        for i, p in enumerate(self.procs):
            if p is not None:
                stop_process(p)
                self.procs[i] = None


def s3_clients(c, nodes):
    """{node number: S3 client} of cluster `c`'s nodes (indices)."""
    return {i + 1: client(c.url(i, "")) for i in nodes}


# MinIO's cluster may answer 503 (SlowDownWrite, SlowDownRead) for some
# seconds after /minio/health/cluster and ListBuckets say ready, while its
# nodes still connect each other's drives. The oracle's clients retry as
# an SDK does; Tessera's clients never retry.
MINIO_ATTEMPTS = 10


def minio_clients(c, nodes):
    """{node number: S3 client with SDK retries} for MinIO serving
    cluster `c`'s endpoints."""
    return {i + 1: client(c.url(i, ""), retries={"total_max_attempts": MINIO_ATTEMPTS, "mode": "standard"})
            for i in nodes}


def s3_ready(clients, who, bound=S3_READY_BOUND_S):
    """Waits until ListBuckets answers 200 through every node of
    `clients` ({node: client}); fails with the last error of the node that
    never did."""
    deadline = time.monotonic() + bound
    for n, s3 in clients.items():
        while True:
            try:
                s3.list_buckets()
                break
            except ClientError as e:
                err = e.response["Error"]
                last = (f"{e.response['ResponseMetadata']['HTTPStatusCode']} "
                        f"{err.get('Code')}: {err.get('Message')}")
            except (BotoCoreError, OSError) as e:
                last = str(e)
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{who} node {n} does not serve S3 within {bound} s: ListBuckets "
                    f"answers {last}")
            time.sleep(0.5)


def body(key, part, size):
    """The content of `part` of `key`: seeded, so both sides agree."""
    return random.Random(f"{key}#{part}").randbytes(size)


def write_objects(test, clients):
    """Creates BUCKET and writes OBJECTS through the nodes of `clients`
    ({node: client}) in turn (the parts of the multipart upload each
    through another node); returns {key: (size, md5, ETag, metadata,
    content type)} as written."""
    clients = list(clients.values())
    clients[0].create_bucket(Bucket=BUCKET)
    expected = {}
    for i, (key, parts, meta, ctype) in enumerate(OBJECTS):
        extra = {"ContentType": ctype} if ctype else {}
        datas = [body(key, n, size) for n, size in enumerate(parts, 1)]
        whole = b"".join(datas)
        at = lambda k: clients[(i + k) % len(clients)]
        if len(parts) == 1:
            etag = at(0).put_object(Bucket=BUCKET, Key=key, Body=whole, Metadata=meta, **extra)["ETag"]
            test.assertEqual(etag, f'"{hashlib.md5(whole).hexdigest()}"', key)
        else:
            upload = at(0).create_multipart_upload(Bucket=BUCKET, Key=key, Metadata=meta, **extra)["UploadId"]
            done = []
            for n, data in enumerate(datas, 1):
                got = at(n).upload_part(Bucket=BUCKET, Key=key, UploadId=upload, PartNumber=n, Body=data)
                done.append({"PartNumber": n, "ETag": got["ETag"]})
            etag = at(len(datas) + 1).complete_multipart_upload(
                Bucket=BUCKET, Key=key, UploadId=upload, MultipartUpload={"Parts": done})["ETag"]
            # S3's multipart ETag: the MD5 of the parts' MD5s, and their count.
            digests = b"".join(hashlib.md5(d).digest() for d in datas)
            test.assertEqual(etag, f'"{hashlib.md5(digests).hexdigest()}-{len(datas)}"', key)
        # The content type the writer reports is the one the reader must
        # show (given, or the writer's default when none is given).
        shown = at(0).head_object(Bucket=BUCKET, Key=key)["ContentType"]
        if ctype:
            test.assertEqual(shown, ctype, key)
        expected[key] = (len(whole), hashlib.md5(whole).hexdigest(), etag, meta, shown)
    return expected


def answer(call, what, **params):
    """call(**params); an S3 error fails the test naming the request (a
    HEAD error has no body, so the status is all there is to show)."""
    try:
        return call(**params)
    except ClientError as e:
        err = e.response["Error"]
        raise AssertionError(f"{what}: {e.response['ResponseMetadata']['HTTPStatusCode']} "
                             f"{err.get('Code')}: {err.get('Message')}") from None


def check_objects(test, clients, expected, who):
    """Through every node of `clients` ({node: client}): the bucket lists
    exactly the expected keys with their sizes and ETags, HEAD shows size,
    ETag, metadata and content type, and GET returns the content bit for
    bit."""
    for n, s3 in clients.items():
        where = f"{who} node {n}"
        listed = answer(s3.list_objects_v2, f"listing through {where}", Bucket=BUCKET)
        test.assertFalse(listed["IsTruncated"], where)
        test.assertEqual(
            [(o["Key"], o["Size"], o["ETag"]) for o in listed.get("Contents", [])],
            [(k, v[0], v[2]) for k, v in sorted(expected.items())], where)
        # A listing by "/" shows the nested keys as prefixes.
        top = s3.list_objects_v2(Bucket=BUCKET, Delimiter="/")
        test.assertEqual([o["Key"] for o in top.get("Contents", [])],
                         sorted(k for k in expected if "/" not in k), where)
        test.assertEqual([p["Prefix"] for p in top.get("CommonPrefixes", [])],
                         sorted({k.split("/")[0] + "/" for k in expected if "/" in k}), where)
        for key, (size, md5, etag, meta, ctype) in expected.items():
            head = answer(s3.head_object, f"HEAD {key} through {where}", Bucket=BUCKET, Key=key)
            test.assertEqual((head["ContentLength"], head["ETag"], head["Metadata"], head["ContentType"]),
                             (size, etag, meta, ctype), f"HEAD {key} through {where}")
            got = answer(s3.get_object, f"GET {key} through {where}", Bucket=BUCKET, Key=key)
            data = got["Body"].read()
            test.assertEqual((len(data), hashlib.md5(data).hexdigest(), got["ETag"]), (size, md5, etag),
                             f"GET {key} through {where}")


class ClusterMinio(unittest.TestCase):
    def deployment(self, drives=4):
        """A Tessera cluster and MinIO nodes on one set of drives and
        endpoints (`drives` per node); each stops in cleanup (MinIO first,
        then Tessera, whose cleanup removes the drives)."""
        address = private_address(self)
        c = on_address(Cluster(drives=drives), address, drives)
        self.addCleanup(c.cleanup)
        m = MinioNodes(c)
        self.addCleanup(m.stop)
        return c, m

    def tessera_ready(self, c, live):
        """Waits until the live nodes agree on a leader with quorum and
        each serves S3; returns their clients."""
        c.wait_agreed(live, FORM_BOUND_S, "forming")
        clients = s3_clients(c, live)
        try:
            s3_ready(clients, "tessera")
        except AssertionError as e:
            tails = "\n".join(f"--- tessera node {i + 1}\n{c.log_tail(i)}" for i in live)
            raise AssertionError(f"the cluster formed, but {e}\n{tails}") from None
        return clients

    def test_minio_writes_tessera_reads(self):
        c, m = self.deployment()
        started = time.monotonic()
        m.start()
        m.wait_ready()
        minio_up = time.monotonic() - started
        clients = minio_clients(c, range(4))
        expected = write_objects(self, clients)
        m.wait_readable("one-byte")
        check_objects(self, clients, expected, "minio")
        m.stop()

        for i in range(4):
            c.start(i)
        clients = self.tessera_ready(c, range(4))
        self.assertIn(BUCKET, [b["Name"] for b in clients[1].list_buckets()["Buckets"]])
        check_objects(self, clients, expected, "tessera")

        # A follower dies (the leader stays: the reads test the drives,
        # not an election): its four drives are gone, the twelve left hold
        # every object's twelve data shards (MinIO's parity 4 of 16).
        leader = c.wait_agreed(range(4), FORM_BOUND_S, "before the kill")["leader"]
        dead = next(i for i in range(4) if c.name(i) != leader)
        c.kill(dead)
        rest = [i for i in range(4) if i != dead]
        c.wait_agreed(rest, ELECT_BOUND_S, "the three left")
        check_objects(self, s3_clients(c, rest), expected, f"tessera (node {dead + 1} killed)")
        print(f"\nminio ready in {minio_up:.1f} s; tessera read everything through 4, then 3 nodes")

    def test_tessera_writes_minio_reads(self):
        c, m = self.deployment()
        for i in range(4):
            c.start(i)
        clients = self.tessera_ready(c, range(4))
        expected = write_objects(self, clients)
        check_objects(self, clients, expected, "tessera")
        c.stop_all()

        m.start()
        m.wait_ready()
        m.wait_readable("one-byte")
        check_objects(self, minio_clients(c, range(4)), expected, "minio")

    def test_tessera_writes_minio_reads_two_sets(self):
        c, m = self.deployment(drives=8)
        for i in range(4):
            c.start(i)
        clients = self.tessera_ready(c, range(4))
        expected = write_objects(self, clients)
        for i in range(24):
            key = f"spread/{i}"
            data = body(key, 1, 100 + i)
            through = list(clients.values())
            etag = through[i % 4].put_object(Bucket=BUCKET, Key=key, Body=data)["ETag"]
            shown = through[0].head_object(Bucket=BUCKET, Key=key)["ContentType"]
            expected[key] = (len(data), hashlib.md5(data).hexdigest(), etag, {}, shown)
        c.stop_all()
        # Each key is on the drives of one set: nodes 1-2 or nodes 3-4.
        in_set = [
            {k for k in expected
             if os.path.exists(f"{c.root}/n{first}/d1/{BUCKET}/{k}/xl.meta")}
            for first in (1, 3)
        ]
        self.assertEqual(in_set[0] | in_set[1], set(expected))
        self.assertEqual(in_set[0] & in_set[1], set())
        self.assertTrue(in_set[0] and in_set[1], in_set)

        m.start()
        m.wait_ready()
        m.wait_readable("one-byte")
        check_objects(self, minio_clients(c, range(4)), expected, "minio")
        print(f"\ntwo sets: {len(in_set[0])} and {len(in_set[1])} objects, all read by minio")


if __name__ == "__main__":
    unittest.main()
