"""Objects across a four-node cluster of real `tessera server` processes
(four drives each, one erasure set of 16), through boto3.

Any node serves any object: what is written through one node is read back
bit for bit, listed, paginated and deleted through every other; a
multipart upload is started, fed and completed through different nodes; a
bucket's versioning turned on through one node holds at once for writes
through the others. Each object's shards are on all sixteen drives.

A node killed with SIGKILL does not stop the others: reads, writes and
deletes through them go on within the node's detection time, and the
killed node serves what was written without it once it is back. A node
stopped with SIGSTOP (a stalled peer) holds no request for longer than its
detection time either. A node replaced by one with blank drives gets its
objects back from the scanner's first pass. A rolling restart of every node under load fails
no operation of clients that retry as the AWS SDKs do.
"""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from tessera_server import ACCESS_KEY, SECRET_KEY, stop_process
from test_cluster import FORM_BOUND_S, Cluster, http_get, mc_admin
from test_mc import mc_binary

BUCKET = "shared"
# How long a request may wait for a node that died or stalled: the
# connection's pings find it within 3 s, and the lock partitions it owned
# move to the others after their hand-over (5 s and a margin) and the
# leader's next check (2 s); a loaded CI machine gets room on top.
DETECT_BOUND_S = 20
# How long the writes a node missed take to reach it once it is back: the
# others probe its drives every 5 s and retry the journal every 2 s.
HEAL_BOUND_S = 45


def client(c, i, retries=1):
    return boto3.client(
        "s3",
        endpoint_url=c.url(i, ""),
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name="us-east-1",
        config=Config(
            retries={"max_attempts": retries, "mode": "standard"},
            connect_timeout=3,
            read_timeout=30,
            s3={"addressing_style": "path"},
        ),
    )


def wait_serving(c, nodes, bound=30):
    deadline = time.monotonic() + bound
    for i in nodes:
        while True:
            try:
                client(c, i).list_buckets()
                break
            except Exception as e:  # noqa: BLE001 (any refusal while starting)
                if time.monotonic() > deadline:
                    raise AssertionError(f"node {i + 1} does not serve S3: {e}\n{c.log_tail(i)}")
                time.sleep(0.3)


def metric_lines(c, i, name):
    """Node i's samples of metric `name`: {labels text: value}."""
    code, text = http_get(c.url(i, "/minio/v2/metrics/cluster"))
    if code != 200:
        raise AssertionError(f"metrics of node {i + 1}: {code}")
    out = {}
    for line in text.decode().splitlines():
        series, _, value = line.rpartition(" ")
        if series == name or series.startswith(name + "{"):
            out[series[len(name):]] = int(float(value))
    return out


def journal_pending(c, i):
    """Node i's heal journal entries pending, from its metrics."""
    values = metric_lines(c, i, "tessera_heal_journal_pending")
    if "" not in values:
        raise AssertionError(f"no tessera_heal_journal_pending in node {i + 1}'s metrics")
    return values[""]


def body(n, seed):
    """`n` bytes, different for every seed."""
    out = bytearray()
    block = hashlib.sha256(f"{seed}".encode()).digest()
    while len(out) < n:
        block = hashlib.sha256(block).digest()
        out += block * 64
    return bytes(out[:n])


def mc(c, i, *args):
    """`mc ARGS` with alias `c` for node i; fails on a non-zero exit."""
    config = tempfile.mkdtemp(prefix="tessera-cluster-mc-")
    try:
        env = dict(os.environ, MC_HOST_c=f"http://{ACCESS_KEY}:{SECRET_KEY}@{c.name(i)}")
        done = subprocess.run([mc_binary(), "--config-dir", config, *args],
                              env=env, capture_output=True, timeout=60)
    finally:
        shutil.rmtree(config, ignore_errors=True)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


class AnyNodeServesAnyObject(unittest.TestCase):
    def check_identities_hold_on_every_node(self, c, s3):
        """A user, its policy, its service account and a bucket policy
        made through one node hold on every other as soon as the call
        returns."""
        mc(c, 0, "admin", "user", "add", "c", "cluster-user", "cluster-user-secret")
        mc(c, 1, "admin", "policy", "attach", "c", "readwrite", "--user", "cluster-user")
        mc(c, 2, "admin", "user", "svcacct", "add", "c", "cluster-user",
           "--access-key", "clustersvc1", "--secret-key", "clustersvc-secret")

        def clients(key, secret):
            return [boto3.client(
                "s3", endpoint_url=c.url(i, ""), aws_access_key_id=key,
                aws_secret_access_key=secret, region_name="us-east-1",
                config=Config(retries={"max_attempts": 1, "mode": "standard"},
                              s3={"addressing_style": "path"})) for i in range(4)]

        users = clients("cluster-user", "cluster-user-secret")
        svcs = clients("clustersvc1", "clustersvc-secret")
        for i in range(4):
            users[i].put_object(Bucket=BUCKET, Key=f"by-user/{i}", Body=b"u")
            svcs[i].head_object(Bucket=BUCKET, Key=f"by-user/{i}")
        mc(c, 2, "admin", "user", "disable", "c", "cluster-user")
        for i in range(4):
            for who in (users[i], svcs[i]):
                with self.assertRaises(ClientError, msg=f"node {i + 1}") as cm:
                    who.get_object(Bucket=BUCKET, Key="by-user/0")
                self.assertEqual(cm.exception.response["ResponseMetadata"]["HTTPStatusCode"], 403)
        mc(c, 3, "admin", "user", "remove", "c", "cluster-user")
        # A public-read policy set through node 2 serves anonymous reads
        # through every node.
        s3[1].put_bucket_policy(Bucket=BUCKET, Policy=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                           "Resource": f"arn:aws:s3:::{BUCKET}/by-user/*"}]}))
        for i in range(4):
            status, got = http_get(c.url(i, f"/{BUCKET}/by-user/{i}"))
            self.assertEqual((status, got), (200, b"u"), f"node {i + 1}")
        s3[2].delete_bucket_policy(Bucket=BUCKET)
        for i in range(4):
            status, _ = http_get(c.url(i, f"/{BUCKET}/by-user/{i}"))
            self.assertEqual(status, 403, f"node {i + 1}")
            s3[i].delete_object(Bucket=BUCKET, Key=f"by-user/{i}")

    def check_governance_holds_on_every_node(self, c, s3):
        """A lock-enabled bucket, its default retention, a CORS rule and a
        lifecycle rule made through some nodes hold on every other as soon
        as the call returns, and a quota set through one node is enforced
        by the others."""
        locked = BUCKET + "-locked"
        s3[1].create_bucket(Bucket=locked, ObjectLockEnabledForBucket=True)
        s3[2].put_object_lock_configuration(Bucket=locked, ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Days": 1}}})
        s3[3].put_bucket_cors(Bucket=locked, CORSConfiguration={"CORSRules": [
            {"AllowedOrigins": ["https://app.example"], "AllowedMethods": ["GET"]}]})
        s3[0].put_bucket_lifecycle_configuration(Bucket=locked, LifecycleConfiguration={"Rules": [
            {"ID": "week", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 7}}]})
        for i in range(4):
            v = s3[i].put_object(Bucket=locked, Key=f"k{i}", Body=b"locked")
            self.assertIn('rule-id="week"', v.get("Expiration", ""), f"node {i + 1}")
            for j in range(4):
                with self.assertRaises(ClientError, msg=f"node {j + 1}") as cm:
                    s3[j].delete_object(Bucket=locked, Key=f"k{i}", VersionId=v["VersionId"])
                self.assertEqual(cm.exception.response["Error"]["Code"], "AccessDenied")
            status, _ = http_get(c.url(i, f"/{locked}/k{i}"))
            self.assertEqual(status, 403, "anonymous")
        for i in range(4):
            self.assertEqual(
                s3[i].get_bucket_cors(Bucket=locked)["CORSRules"][0]["AllowedOrigins"],
                ["https://app.example"], f"node {i + 1}")
        mc(c, 2, "quota", "set", f"c/{BUCKET}", "--size", "1MiB")
        for i in range(4):
            with self.assertRaises(ClientError, msg=f"node {i + 1}") as cm:
                s3[i].put_object(Bucket=BUCKET, Key="too-big", Body=b"q" * (1 << 20))
            self.assertEqual(cm.exception.response["Error"]["Code"], "XMinioAdminBucketQuotaExceeded")
        mc(c, 1, "quota", "clear", f"c/{BUCKET}")
        for i in range(4):
            s3[i].put_object(Bucket=BUCKET, Key="fits-again", Body=b"q" * (1 << 20))
        s3[0].delete_object(Bucket=BUCKET, Key="fits-again")

    def test_objects_across_nodes_and_a_node_down(self):
        c = Cluster()
        self.addCleanup(c.cleanup)
        for i in range(4):
            c.start(i)
        c.wait_agreed(range(4), FORM_BOUND_S, "forming")
        wait_serving(c, range(4))
        s3 = [client(c, i) for i in range(4)]

        s3[0].create_bucket(Bucket=BUCKET)
        for i in range(4):
            names = [b["Name"] for b in s3[i].list_buckets()["Buckets"]]
            self.assertEqual(names, [BUCKET], f"node {i + 1}")
        self.check_identities_hold_on_every_node(c, s3)
        self.check_governance_holds_on_every_node(c, s3)

        # Every shape through a different node.
        objects = {}
        shapes = [0, 1, 100 << 10, 1 << 20, (5 << 20) + 17, 3 << 20]
        for n, size in enumerate(shapes):
            key = f"dir{n % 2}/obj{n}"
            objects[key] = body(size, n)
            s3[n % 4].put_object(Bucket=BUCKET, Key=key, Body=objects[key])

        # A multipart upload started on node 2, its parts sent to nodes 3
        # and 4, completed on node 1.
        parts = [body(5 << 20, "p1"), body((1 << 20) + 3, "p2")]
        up = s3[1].create_multipart_upload(Bucket=BUCKET, Key="multi")["UploadId"]
        etags = []
        for n, part in enumerate(parts, 1):
            r = s3[1 + n].upload_part(Bucket=BUCKET, Key="multi", UploadId=up, PartNumber=n, Body=part)
            etags.append({"PartNumber": n, "ETag": r["ETag"]})
        s3[0].complete_multipart_upload(
            Bucket=BUCKET, Key="multi", UploadId=up, MultipartUpload={"Parts": etags}
        )
        objects["multi"] = b"".join(parts)

        for i in range(4):
            for key, data in objects.items():
                got = s3[i].get_object(Bucket=BUCKET, Key=key)["Body"].read()
                self.assertEqual(hashlib.md5(got).hexdigest(), hashlib.md5(data).hexdigest(),
                                 f"{key} through node {i + 1}")
            listed = {o["Key"]: o["Size"] for o in
                      s3[i].list_objects_v2(Bucket=BUCKET).get("Contents", [])}
            self.assertEqual(listed, {k: len(v) for k, v in objects.items()}, f"node {i + 1}")
        r = s3[2].get_object(Bucket=BUCKET, Key="dir0/obj4", Range="bytes=1000-1048575")
        self.assertEqual(r["Body"].read(), objects["dir0/obj4"][1000:1048576])
        prefixes = s3[3].list_objects_v2(Bucket=BUCKET, Delimiter="/")
        self.assertEqual([p["Prefix"] for p in prefixes["CommonPrefixes"]], ["dir0/", "dir1/"])

        # Read caches: node 2 caches an object it reads again (from the
        # second read on); the version's removal through another node (an
        # overwrite through node 1, a delete through node 3) takes its
        # blocks out of node 2's cache, not only the remover's.
        cached = lambda: metric_lines(c, 1, "tessera_read_cache_bytes")[""]
        before = cached()
        for version, remover in ((0, 0), (1, 2)):
            data = body(3 << 20, f"cached{version}")
            s3[0].put_object(Bucket=BUCKET, Key="cached", Body=data)
            for _ in range(3):
                self.assertEqual(s3[1].get_object(Bucket=BUCKET, Key="cached")["Body"].read(), data)
            self.assertGreaterEqual(cached(), before + len(data), "node 2 cached the object")
            if version == 0:
                s3[remover].put_object(Bucket=BUCKET, Key="cached", Body=b"overwritten")
                self.assertEqual(s3[1].get_object(Bucket=BUCKET, Key="cached")["Body"].read(),
                                 b"overwritten")
            else:
                s3[remover].delete_object(Bucket=BUCKET, Key="cached")
            self.assertEqual(cached(), before, f"node {remover + 1} removed the version")

        # Pages continue on any node.
        keys, token, page = [], None, 0
        while True:
            kw = {"Bucket": BUCKET, "MaxKeys": 2}
            if token:
                kw["ContinuationToken"] = token
            r = s3[page % 4].list_objects_v2(**kw)
            keys += [o["Key"] for o in r.get("Contents", [])]
            page += 1
            if not r["IsTruncated"]:
                break
            token = r["NextContinuationToken"]
        self.assertEqual(keys, sorted(objects))
        self.assertEqual(page, 4)

        # Each object's shards are on all sixteen drives.
        for n in range(1, 5):
            for d in range(1, 5):
                meta = f"{c.root}/n{n}/d{d}/{BUCKET}/dir0/obj4/xl.meta"
                self.assertTrue(os.path.exists(meta), meta)

        # Versioning turned on through node 2 holds for writes through
        # every node at once (each had cached the bucket as unversioned).
        s3[1].put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        for i in range(4):
            self.assertEqual(s3[i].get_bucket_versioning(Bucket=BUCKET).get("Status"), "Enabled")
            s3[i].put_object(Bucket=BUCKET, Key="versioned", Body=f"v{i}".encode())
        versions = s3[2].list_object_versions(Bucket=BUCKET, Prefix="versioned")["Versions"]
        self.assertEqual(len(versions), 4, versions)
        got = s3[3].get_object(Bucket=BUCKET, Key="versioned")["Body"].read()
        self.assertEqual(got, b"v3")

        # A bucket deleted through node 2 is gone for every node at once
        # (each had found it, and caches what it found).
        s3[0].create_bucket(Bucket="short-lived")
        for i in range(4):
            s3[i].put_object(Bucket="short-lived", Key=f"o{i}", Body=b"x")
            s3[i].delete_object(Bucket="short-lived", Key=f"o{i}")
        s3[1].delete_bucket(Bucket="short-lived")
        for i in range(4):
            with self.assertRaises(s3[i].exceptions.NoSuchBucket, msg=f"node {i + 1}"):
                s3[i].put_object(Bucket="short-lived", Key="late", Body=b"y")

        # A delete through node 4 is seen by every node.
        s3[3].delete_object(Bucket=BUCKET, Key="dir1/obj1")
        for i in range(4):
            with self.assertRaises(s3[i].exceptions.NoSuchKey):
                s3[i].get_object(Bucket=BUCKET, Key="dir1/obj1")
        del objects["dir1/obj1"]

        # Node 4 killed: the others read, write and delete without it.
        c.kill(3)
        killed = time.monotonic()
        written_without = {}
        for key, data in objects.items():
            started = time.monotonic()
            got = s3[key.__len__() % 3].get_object(Bucket=BUCKET, Key=key)["Body"].read()
            self.assertEqual(got, data, key)
            self.assertLess(time.monotonic() - started, DETECT_BOUND_S, f"GET {key} with node 4 down")
        for n in range(6):
            key = f"while-down/{n}"
            written_without[key] = body((n + 1) * 700_001, f"down{n}")
            started = time.monotonic()
            s3[n % 3].put_object(Bucket=BUCKET, Key=key, Body=written_without[key])
            self.assertLess(time.monotonic() - started, DETECT_BOUND_S, f"PUT {key} with node 4 down")
        s3[2].delete_object(Bucket=BUCKET, Key="dir0/obj0")
        del objects["dir0/obj0"]
        for i in range(3):
            listed = {o["Key"] for o in s3[i].list_objects_v2(Bucket=BUCKET).get("Contents", [])}
            self.assertEqual(listed, set(objects) | set(written_without) | {"versioned"})
        down_for = time.monotonic() - killed

        # Each write that missed node 4's drives is in a heal journal, and
        # so is the delete (a delete marker: the bucket is versioned).
        journals = [f"{c.root}/n{n}/d{d}/.minio.sys/tessera/heal"
                    for n in range(1, 5) for d in range(1, 5)]
        entries = sum(len(os.listdir(j)) for j in journals if os.path.isdir(j))
        self.assertEqual(entries, len(written_without) + 1, [
            (j, open(f"{j}/{e}", "rb").read()) for j in journals if os.path.isdir(j)
            for e in os.listdir(j)])
        # ... which the nodes that wrote them show in their metrics.
        pending = [journal_pending(c, i) for i in range(3)]
        self.assertGreaterEqual(sum(pending), len(written_without) + 1, pending)

        # Back: the writes it missed reach its drives, and it serves them.
        c.start(3)
        c.wait_agreed(range(4), FORM_BOUND_S, "node 4 rejoining")
        back = time.monotonic()
        # The writes it missed are healed onto its drives from the heal
        # journal, without a scanner pass (hourly).
        missing = lambda: [  # noqa: E731
            f"n4/d{d}/{key}" for key in written_without for d in range(1, 5)
            if not os.path.exists(f"{c.root}/n4/d{d}/{BUCKET}/{key}/xl.meta")
        ]
        healed_by = time.monotonic() + HEAL_BOUND_S
        while missing() and time.monotonic() < healed_by:
            time.sleep(0.5)
        self.assertEqual(missing(), [], c.log_tail(0))
        healed_in = time.monotonic() - back
        left = [(j, os.listdir(j)) for j in journals if os.path.isdir(j) and os.listdir(j)]
        deadline = time.monotonic() + HEAL_BOUND_S
        while left and time.monotonic() < deadline:
            time.sleep(0.5)
            left = [(j, os.listdir(j)) for j in journals if os.path.isdir(j) and os.listdir(j)]
        self.assertEqual(left, [], "heal journal entries left after the heal")
        # Every node forgets the entries (the returned node itself may have
        # healed them first, from its sweep at start).
        deadline = time.monotonic() + HEAL_BOUND_S
        while any(journal_pending(c, i) for i in range(4)) and time.monotonic() < deadline:
            time.sleep(0.5)
        self.assertEqual([journal_pending(c, i) for i in range(4)], [0] * 4)
        wait_serving(c, [3])
        for key, data in {**objects, **written_without}.items():
            got = s3[3].get_object(Bucket=BUCKET, Key=key)["Body"].read()
            self.assertEqual(got, data, f"{key} through node 4 after its return")
        with self.assertRaises(s3[3].exceptions.NoSuchKey):
            s3[3].get_object(Bucket=BUCKET, Key="dir0/obj0")

        # A stalled node (SIGSTOP) holds no request through the others
        # longer than its detection time.
        c.procs[2].send_signal(signal.SIGSTOP)
        try:
            for n, (key, data) in enumerate(written_without.items()):
                started = time.monotonic()
                got = s3[n % 2].get_object(Bucket=BUCKET, Key=key)["Body"].read()
                self.assertEqual(got, data, key)
                self.assertLess(time.monotonic() - started, DETECT_BOUND_S, f"GET {key} with node 3 stalled")
            started = time.monotonic()
            s3[3].put_object(Bucket=BUCKET, Key="while-stalled", Body=b"x" * 1_000_000)
            self.assertLess(time.monotonic() - started, DETECT_BOUND_S, "PUT with node 3 stalled")
        finally:
            c.procs[2].send_signal(signal.SIGCONT)
        # Node 3 replaced by a blank one: its drives are formatted into
        # their places and the objects healed onto them by its scanner's
        # first pass (which waits for the lock service), not an hour later.
        c.kill(2)
        for d in range(1, 5):
            shutil.rmtree(f"{c.root}/n3/d{d}")
            os.makedirs(f"{c.root}/n3/d{d}")
        replaced = time.monotonic()
        c.start(2)
        everything = {**objects, **written_without, "while-stalled": b"x" * 1_000_000}
        absent = lambda: [  # noqa: E731
            f"n3/d{d}/{key}" for key in everything for d in range(1, 5)
            if not os.path.exists(f"{c.root}/n3/d{d}/{BUCKET}/{key}/xl.meta")
        ]
        while absent() and time.monotonic() < replaced + HEAL_BOUND_S:
            time.sleep(0.5)
        self.assertEqual(absent(), [], c.log_tail(2))
        refilled_in = time.monotonic() - replaced
        c.wait_agreed(range(4), FORM_BOUND_S, "the replaced node 3 back")
        for key, data in everything.items():
            self.assertEqual(s3[2].get_object(Bucket=BUCKET, Key=key)["Body"].read(), data, key)
        # `mc admin heal` through node 1 shows the heal of node 3's drives
        # that node 3's scanner ran: every object and byte, once its pass
        # ended.
        deadline = time.monotonic() + HEAL_BOUND_S
        while True:
            status = mc_admin(c, 0, "heal")["HealInfo"]
            disks = [d for s in status["sets"] for d in s["disks"] if "/n3/" in d["endpoint"]]
            self.assertEqual(len(disks), 4, status)
            infos = [d.get("heal_info") for d in disks]
            if all(h and h["finished"] for h in infos):
                break
            self.assertLess(time.monotonic(), deadline, status)
            time.sleep(0.5)
        # Every version of both buckets (the shared one is versioned since
        # the versioning check), delete markers included, with its bytes.
        versions = []
        for b in (BUCKET, BUCKET + "-locked"):
            listing = s3[0].list_object_versions(Bucket=b)
            versions += listing.get("Versions", []) + listing.get("DeleteMarkers", [])
        for d, h in zip(disks, infos):
            self.assertEqual((h["items_healed"], h["items_failed"]), (len(versions), 0), d)
            self.assertEqual(h["bytes_done"], sum(v.get("Size", 0) for v in versions), d)
            self.assertNotIn("healing", d)
        self.assertEqual(sorted(status["mrf"]), sorted(c.name(i) for i in range(4)))
        # Node 3's metrics say the same of its four drives.
        healed = metric_lines(c, 2, "tessera_replaced_drive_healed_versions")
        finished = metric_lines(c, 2, "tessera_replaced_drive_heal_finished")
        self.assertEqual(len(healed), 4, healed)
        self.assertTrue(all("/n3/" in labels for labels in healed), healed)
        self.assertEqual(set(healed.values()), {len(versions)})
        self.assertEqual(set(finished.values()), {1})
        self.assertEqual(status["offline_nodes"], [])
        print(f"\nnode 3 replaced by blank drives: {len(everything)} objects healed onto them "
              f"{refilled_in:.1f} s after its start")
        print(f"\nnode 4 down for {down_for:.1f} s: {len(objects)} objects read, "
              f"{len(written_without)} written, one deleted through the other nodes; "
              f"its missed writes healed {healed_in:.1f} s after it rejoined")


# Operations each phase of the rolling restart must complete (three
# workers, each a PUT then a GET of the same key counted as two).
PHASE_OPS = 6


class RollingRestart(unittest.TestCase):
    """Every node restarted in turn (SIGTERM, start, rejoin) under load:
    clients that retry as the AWS SDKs do (boto3's standard mode, each
    request to any node as DNS round robin spreads them) see no failed
    operation, and read back every byte they wrote."""

    def test_no_failed_operation_across_a_rolling_restart(self):
        import random
        import threading

        c = Cluster()
        self.addCleanup(c.cleanup)
        for i in range(4):
            c.start(i)
        c.wait_agreed(range(4), FORM_BOUND_S, "forming")
        wait_serving(c, range(4))
        client(c, 0).create_bucket(Bucket=BUCKET)

        stop, lock = threading.Event(), threading.Lock()
        stats = {"ok": 0, "failed": []}

        def work(n):
            rng = random.Random(n)
            s3 = [client(c, i, retries=10) for i in range(4)]
            k = 0
            while not stop.is_set():
                k += 1
                key, data = f"roll/{n}/{k}", body(rng.choice([0, 5000, 300_000, 2_000_000]), (n, k))
                try:
                    s3[rng.randrange(4)].put_object(Bucket=BUCKET, Key=key, Body=data)
                    got = s3[rng.randrange(4)].get_object(Bucket=BUCKET, Key=key)["Body"].read()
                    if got != data:
                        raise AssertionError(f"{key}: other bytes read back")
                    with lock:
                        stats["ok"] += 2
                except Exception as e:  # noqa: BLE001 (every failure is reported)
                    with lock:
                        stats["failed"].append(f"{key}: {e!r}")

        workers = [threading.Thread(target=work, args=(n,), daemon=True) for n in range(3)]
        for t in workers:
            t.start()
        def progress(phase):
            # Load runs through every phase of the restart: operations
            # complete before it and after each node rejoins, however slow
            # the machine (a count, not a time). A node is down only for
            # its restart, which the clients' retries span.
            with lock:
                base = stats["ok"]
            deadline = time.monotonic() + 120
            while True:
                with lock:
                    done, failed = stats["ok"] - base, list(stats["failed"])
                self.assertEqual(failed, [], phase)
                if done >= PHASE_OPS:
                    return
                self.assertLess(time.monotonic(), deadline, f"no load completed {phase}")
                time.sleep(0.1)

        started = time.monotonic()
        progress("before the first restart")
        for i in range(4):
            stopped = time.monotonic()
            # A drain may take up to the shutdown timeout (30 s): a node
            # killed before it ends fails the exit-code check, one that
            # drains longer fails the bound.
            code = stop_process(c.procs[i], timeout=40)
            self.assertEqual(code, 0, f"node {i + 1} exited with {code}: {c.log_tail(i)}")
            self.assertLess(time.monotonic() - stopped, 35, "drain beyond the shutdown timeout")
            c.procs[i] = None
            c.start(i)
            c.wait_agreed(range(4), FORM_BOUND_S, f"node {i + 1} back")
            wait_serving(c, [i])
            progress(f"after node {i + 1} rejoined")
        stop.set()
        for t in workers:
            t.join(timeout=120)
        self.assertEqual(stats["failed"], [])
        self.assertGreaterEqual(stats["ok"], PHASE_OPS * 5)
        print(f"\nrolling restart of 4 nodes in {time.monotonic() - started:.1f} s under load: "
              f"{stats['ok']} operations, none failed")


if __name__ == "__main__":
    unittest.main()
