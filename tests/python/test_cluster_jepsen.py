"""A Jepsen-style check of the four-node cluster under faults.

Clients write, overwrite, delete and read a handful of keys of a versioned
bucket through all four nodes while a seeded schedule injects faults one at
a time: a node killed with SIGKILL and restarted, a node frozen with
SIGSTOP and thawed, and (where network namespaces are available) a node cut
off from the others and reconnected. Every operation is recorded with when
it was invoked and when it completed, and with its outcome: acknowledged,
refused, or unknown (a timeout or a broken connection, which may or may not
have taken effect).

What must hold, checked on the history afterwards (an anomaly is any
violation):
- no read returns bytes that were not written: every value carries its
  writer's id, and its bytes are regenerated from the id and compared;
- no read is stale: a read does not return a value (or the key's absence)
  that an acknowledged write or delete had replaced before the read began;
- at the end, every node returns the same current value for every key, one
  that no acknowledged operation followed;
- every acknowledged write is readable, by its version id, with its exact
  bytes from every node, and every version a listing shows is a write that
  was made (no half-written object is visible).

The seed (`TESSERA_JEPSEN_SEED`; unset or `random` draws one) fixes the
keys, sizes and operations of each client and the fault schedule, and is
printed: the same seed replays the schedule, the timings are the
machine's. Each run explores a new schedule.

Seeds 886361246 and 1 replay schedules that expose stale reads when the
object layer answers what the drives that answer agree on: a write
acknowledged on twelve of the sixteen drives, four of them then behind a
faulted node, leaves the newer version short of its read quorum, and the
older version (or the key's absence) would be answered. The layer answers
a read-quorum error while the drives that did not answer could complete
the newer version (`pick_version` in the object crate's
`layer/set/quorum.rs`).
"""

import hashlib
import os
import random
import signal
import threading
import time
import unittest

import botocore.exceptions
from botocore.config import Config

import boto3
from tessera_server import ACCESS_KEY, SECRET_KEY
from test_cluster import FORM_BOUND_S, Cluster, Namespaces, namespaces_unavailable

BUCKET = "jepsen"
KEYS = [f"k{i}" for i in range(6)]
SIZES = [0, 1, 1000, 70_000, 300_000, 1_100_000]
CLIENTS = 4
RUN_S = float(os.environ.get("TESSERA_JEPSEN_SECONDS", "45"))
INF = float("inf")


def value(ident):
    """The bytes of write `ident` (`w<client>-<n>-<size>`)."""
    size = int(ident.rsplit("-", 1)[1])
    out = bytearray()
    block = hashlib.sha256(ident.encode()).digest()
    while len(out) < size:
        block = hashlib.sha256(block).digest()
        out += block * 32
    return bytes(out[:size])


def s3_client(url, attempts=1):
    """A client of node `url`; `attempts` > 1 retries as the AWS SDKs do
    (503 and broken connections, with backoff)."""
    return boto3.client(
        "s3",
        endpoint_url=url,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name="us-east-1",
        config=Config(
            retries={"max_attempts": attempts, "mode": "standard"},
            connect_timeout=2,
            read_timeout=15,
            s3={"addressing_style": "path"},
        ),
    )


class Op:
    __slots__ = ("kind", "key", "ident", "node", "invoke", "complete", "status", "version", "read")

    def __init__(self, kind, key, ident, node):
        self.kind, self.key, self.ident, self.node = kind, key, ident, node
        self.invoke, self.complete = time.monotonic(), INF
        self.status = "unknown"
        self.version = None
        # A read's result: ("absent",) or ("value", ident, bytes_ok).
        self.read = None

    def __repr__(self):
        return (f"{self.kind}({self.key}, {self.ident}) via node {self.node + 1} "
                f"[{self.invoke:.3f}, {self.complete:.3f}] {self.status} {self.read or ''}")


def outcome(e):
    """A refused operation (the server answered an error that means it did
    not happen) or an unknown one."""
    if isinstance(e, botocore.exceptions.ClientError):
        status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        # 4xx: refused before anything was written. 5xx: the write may have
        # reached some drives and been rolled back, or not: unknown.
        return "refused" if 400 <= status < 500 else "unknown"
    return "unknown"


class Client(threading.Thread):
    def __init__(self, n, c, seed, history, stop):
        super().__init__(daemon=True)
        self.n, self.rng = n, random.Random(f"{seed}/client{n}")
        self.history, self.stop = history, stop
        self.s3 = [s3_client(c.url(i, "")) for i in range(4)]
        self.written = 0

    def run(self):
        while not self.stop.is_set():
            key = self.rng.choice(KEYS)
            node = self.rng.randrange(4)
            roll = self.rng.random()
            if roll < 0.5:
                self.written += 1
                ident = f"w{self.n}-{self.written}-{self.rng.choice(SIZES)}"
                op = Op("write", key, ident, node)
                self.history.append(op)
                try:
                    r = self.s3[node].put_object(Bucket=BUCKET, Key=key, Body=value(ident),
                                                 Metadata={"id": ident})
                    op.version, op.status = r.get("VersionId"), "ok"
                except Exception as e:  # noqa: BLE001 (every failure is recorded)
                    op.status = outcome(e)
            elif roll < 0.85:
                op = Op("read", key, None, node)
                self.history.append(op)
                try:
                    r = self.s3[node].get_object(Bucket=BUCKET, Key=key)
                    data = r["Body"].read()
                    ident = r.get("Metadata", {}).get("id")
                    op.read = ("value", ident, ident is not None and data == value(ident))
                    op.status = "ok"
                except self.s3[node].exceptions.NoSuchKey:
                    op.read, op.status = ("absent",), "ok"
                except Exception as e:  # noqa: BLE001
                    op.status = outcome(e)
            else:
                op = Op("delete", key, None, node)
                self.history.append(op)
                try:
                    self.s3[node].delete_object(Bucket=BUCKET, Key=key)
                    op.status = "ok"
                except Exception as e:  # noqa: BLE001
                    op.status = outcome(e)
            # An unknown outcome keeps its completion at infinity: it may
            # take effect at any later time.
            if op.status != "unknown":
                op.complete = time.monotonic()


class Faults(threading.Thread):
    """One fault at a time, from a seeded schedule, until `stop`."""

    def __init__(self, c, net, seed, stop):
        super().__init__(daemon=True)
        self.c, self.net, self.stop = c, net, stop
        self.rng = random.Random(f"{seed}/faults")
        self.log = []
        self.error = None

    def run(self):
        try:
            kinds = ["kill", "pause"] + (["partition"] if self.net else [])
            while not self.stop.wait(self.rng.uniform(1.5, 3.5)):
                kind, node = self.rng.choice(kinds), self.rng.randrange(4)
                length = self.rng.uniform(2, 6)
                self.log.append((round(time.monotonic(), 3), kind, node + 1, round(length, 1)))
                if kind == "kill":
                    self.c.kill(node)
                    self.stop.wait(length)
                    self.c.start(node)
                elif kind == "pause":
                    self.c.procs[node].send_signal(signal.SIGSTOP)
                    self.stop.wait(length)
                    self.c.procs[node].send_signal(signal.SIGCONT)
                else:
                    self.net.isolate(node)
                    self.stop.wait(length)
                    self.net.isolate(node, on=False)
                # The next fault waits for the cluster to agree again, so at
                # most one node is ever out: the quorums hold.
                self.c.wait_agreed(range(4), FORM_BOUND_S, f"recovering from {kind} of node {node + 1}")
        except Exception as e:  # noqa: BLE001 (reported by the test)
            self.error = e


def check(history, final, versions_seen):
    """The anomalies of a history (a list of strings)."""
    anomalies = []
    by_key = {k: [op for op in history if op.key == k] for k in KEYS}
    writes = {op.ident: op for op in history if op.kind == "write"}
    for key, ops in by_key.items():
        acked = [op for op in ops if op.status == "ok" and op.kind in ("write", "delete")]

        def sources(result, before):
            """The operations that could have produced `result` (invoked
            before `before`): the write of that id, or any delete (and the
            initial absence)."""
            if result[0] == "value":
                w = writes.get(result[1])
                return [w] if w is not None and w.key == key and w.invoke < before else []
            return [op for op in ops if op.kind == "delete" and op.invoke < before] + [None]

        def overwritten_before(src, t):
            """Whether an acknowledged write or delete began after `src`
            completed and completed before `t`."""
            done = -INF if src is None else src.complete
            return any(done < y.invoke and y.complete < t for y in acked)

        for op in ops:
            if op.kind != "read" or op.status != "ok":
                continue
            if op.read[0] == "value" and not op.read[2]:
                anomalies.append(f"read returned bytes that were not written: {op}")
                continue
            srcs = sources(op.read, op.complete)
            if not srcs:
                anomalies.append(f"read returned a value never written to the key: {op}")
            elif all(overwritten_before(s, op.invoke) for s in srcs):
                anomalies.append(f"stale read: {op}")
        results = set(final[key])
        if len(results) != 1:
            anomalies.append(f"{key}: the nodes disagree at the end: {final[key]}")
            continue
        result = results.pop()
        srcs = sources(result, INF)
        if result[0] == "value" and not result[2]:
            anomalies.append(f"{key}: the final value's bytes were not written: {result}")
        elif not srcs:
            anomalies.append(f"{key}: the final value was never written: {result}")
        elif all(overwritten_before(s, INF) for s in srcs):
            anomalies.append(f"{key}: the final value {result} was replaced by an acknowledged operation")
    for ident, size, key in versions_seen:
        w = writes.get(ident)
        if w is None or w.key != key or int(ident.rsplit("-", 1)[1]) != size:
            anomalies.append(f"a listed version is no write that was made: {ident} {size} {key}")
    return anomalies


class CheckerFindsAnomalies(unittest.TestCase):
    """The checker on made-up histories: each anomaly it must find, and a
    valid history with overlapping operations it must accept."""

    @staticmethod
    def op(kind, key, ident, invoke, complete, status="ok", read=None):
        o = Op(kind, key, ident, 0)
        o.invoke, o.complete, o.status, o.read = invoke, complete, status, read
        return o

    def final(self, **values):
        out = {k: [("absent",)] * 4 for k in KEYS}
        for k, v in values.items():
            out[k] = [v] * 4
        return out

    def test_each_anomaly_is_found(self):
        w1 = self.op("write", "k0", "w0-1-1000", 0, 1)
        w2 = self.op("write", "k0", "w0-2-1", 2, 3)
        v1, v2 = ("value", w1.ident, True), ("value", w2.ident, True)
        # Valid: reads overlapping the second write may see either value.
        ok = [w1, w2, self.op("read", "k0", None, 1.5, 2.5, read=v1),
              self.op("read", "k0", None, 2.5, 3.5, read=v1),
              self.op("read", "k0", None, 2.5, 3.5, read=v2)]
        self.assertEqual(check(ok, self.final(k0=v2), [(w1.ident, 1000, "k0")]), [])
        cases = {
            "stale read": [w1, w2, self.op("read", "k0", None, 4, 5, read=v1)],
            "stale absence": [w1, self.op("read", "k0", None, 4, 5, read=("absent",))],
            "never written": [w1, self.op("read", "k0", None, 4, 5, read=("value", "w9-9-1", True))],
            "bytes not written": [w1, self.op("read", "k0", None, 4, 5, read=("value", w1.ident, False))],
        }
        for name, history in cases.items():
            self.assertTrue(check(history, self.final(k0=v1), []), name)
        # Final states: replaced by an acknowledged write, nodes disagreeing,
        # a version listed that no write made.
        self.assertTrue(check([w1, w2], self.final(k0=v1), []))
        split = self.final(k0=v2)
        split["k0"] = [v2, v2, v2, ("absent",)]
        self.assertTrue(check([w1, w2], split, []))
        self.assertTrue(check([w1, w2], self.final(k0=v2), [("w5-5-7", 7, "k0")]))
        # An unknown write may take effect at any time after it began.
        w3 = self.op("write", "k0", "w0-3-1", 4, INF, status="unknown")
        self.assertEqual(check([w1, w2, w3], self.final(k0=("value", w3.ident, True)), []), [])


class ClusterUnderFaults(unittest.TestCase):
    def test_acknowledged_writes_survive_and_reads_are_never_stale(self):
        wanted = os.environ.get("TESSERA_JEPSEN_SEED") or "random"
        seed = random.randrange(1 << 30) if wanted == "random" else int(wanted)
        print(f"\njepsen seed {seed} (TESSERA_JEPSEN_SEED={seed} replays the schedule)")
        why = namespaces_unavailable()
        net = None
        c = Cluster()
        self.addCleanup(c.cleanup)
        if why:
            print(f"network namespaces unavailable ({why}): faults are kills and pauses only")
        else:
            net = Namespaces(4)
            self.addCleanup(net.cleanup)
            c.name = lambda i: f"{net.ip(i)}:9000"
            c.url = lambda i, path: f"http://{net.ip(i)}:9000{path}"
            c.endpoints = [f"http://{net.ip(n)}:9000{c.root}/n{n + 1}/d{d}"
                           for n in range(4) for d in range(1, 5)]
            c.wrap = lambda i: ["ip", "netns", "exec", net.names[i]]
        for i in range(4):
            c.start(i)
        c.wait_agreed(range(4), FORM_BOUND_S, "forming")
        admin = s3_client(c.url(0, ""))
        deadline = time.monotonic() + 30
        while True:
            try:
                admin.create_bucket(Bucket=BUCKET)
                break
            except Exception:  # noqa: BLE001 (the layer may still be opening)
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        admin.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})

        history, stop = [], threading.Event()
        clients = [Client(n, c, seed, history, stop) for n in range(CLIENTS)]
        faults = Faults(c, net, seed, stop)
        for t in [*clients, faults]:
            t.start()
        time.sleep(RUN_S)
        stop.set()
        faults.join(timeout=FORM_BOUND_S + 30)
        for t in clients:
            t.join(timeout=60)
        self.assertFalse(any(t.is_alive() for t in [*clients, faults]), "a client or the faults hung")
        self.assertIsNone(faults.error, f"{faults.error}\nfaults: {faults.log}")
        # Every node up and agreed before the final reads.
        for i in range(4):
            if c.procs[i] is None:
                c.start(i)
        c.wait_agreed(range(4), FORM_BOUND_S, "after the run")

        # The final reads retry as an SDK does: a node just restarted may
        # not have reached every peer's drives yet, and a version whose
        # copies are partly on them answers 503 (a read-quorum error) until
        # it does. A read that still fails after the retries fails the test.
        s3 = [s3_client(c.url(i, ""), attempts=10) for i in range(4)]
        final = {k: [] for k in KEYS}
        for k in KEYS:
            for i in range(4):
                try:
                    r = s3[i].get_object(Bucket=BUCKET, Key=k)
                    ident = r.get("Metadata", {}).get("id")
                    data = r["Body"].read()
                    final[k].append(("value", ident, ident is not None and data == value(ident)))
                except s3[i].exceptions.NoSuchKey:
                    final[k].append(("absent",))
        acked = [op for op in history if op.kind == "write" and op.status == "ok"]
        lost = []
        for op in acked:
            for i in range(4):
                r = s3[i].get_object(Bucket=BUCKET, Key=op.key, VersionId=op.version)
                if r["Body"].read() != value(op.ident):
                    lost.append((op, i + 1))
        versions_seen = []
        pages = s3[1].get_paginator("list_object_versions").paginate(Bucket=BUCKET)
        for page in pages:
            for v in page.get("Versions", []):
                head = s3[2].head_object(Bucket=BUCKET, Key=v["Key"], VersionId=v["VersionId"])
                versions_seen.append((head.get("Metadata", {}).get("id"), v["Size"], v["Key"]))

        anomalies = check(history, final, versions_seen)
        anomalies += [f"acknowledged write lost or changed on node {n}: {op}" for op, n in lost]
        counts = {s: sum(1 for op in history if op.status == s) for s in ("ok", "refused", "unknown")}
        print(f"jepsen: {len(history)} operations ({counts['ok']} acknowledged, "
              f"{counts['refused']} refused, {counts['unknown']} unknown), "
              f"{len(faults.log)} faults {faults.log}, {len(acked)} acknowledged writes read back "
              f"from 4 nodes, {len(versions_seen)} versions listed, anomalies: {len(anomalies)}")
        self.assertEqual(anomalies, [], f"seed {seed}")
        self.assertGreater(counts["ok"], 100, "too few operations to say anything")
        self.assertGreater(len(faults.log), 3, "too few faults")


if __name__ == "__main__":
    unittest.main()
