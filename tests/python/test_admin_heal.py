"""The heal's pace and heals on demand through MinIO's admin API, with the
real `mc` against a real `tessera server`.

- `mc admin config set|get|reset ALIAS scanner`: the scanner's speed
  (fastest, fast, default, slow, slowest) set on the running server, read
  back (plain and `--json`), shown by `tessera_scanner_rate`, kept across a
  restart (relative to the new start rate), reset to the start rate; mc
  asks for no restart. Refused as MinIO refuses them: an unknown speed, a
  key the scanner does not have here, the heal sub-system's keys (they
  mean nothing here), sub-systems not served (501), unknown sub-systems,
  bodies over MinIO's bound or not sealed with the caller's key.
- `mc admin heal ALIAS/BUCKET` after a drive lost its copies of some
  objects: the dry run reports and writes nothing; the heal prints each
  item as mc does and brings the shards back bit for bit (one level
  without `--recursive`, the rest with it); `--json` reports each item and
  the summary.
- The heal sequence protocol: a client token, polls with it, a wrong
  token, a second start on a running path, an overlapping path,
  `--force-stop`, a missing bucket, options not implemented.
- A four-node cluster: a speed set through one node holds on every node,
  a heal through one node rebuilds another node's drives, and a heal
  sequence is polled through any node.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.request
import xml.etree.ElementTree as ET
from urllib.parse import quote

from s3util import client, raw_request
from test_admin_info import McAdminCase
from test_cluster import FORM_BOUND_S, Cluster
from test_cluster_objects import body, metric_lines, wait_serving
from test_cluster_objects import client as node_client
from test_mc import mc_binary
from tessera_server import ACCESS_KEY, SECRET_KEY, read_tree, unique_bucket

MiB = 1024 * 1024
HEAL = "/minio/admin/v3/heal/"


def code_of(body_bytes):
    try:
        return ET.fromstring(body_bytes).findtext("Code")
    except ET.ParseError:
        return None


class ScannerSpeedTests(McAdminCase):
    server_env = {"TESSERA_PROMETHEUS_AUTH_TYPE": "public"}

    def failing_mc(self, *args):
        """Runs mc expecting it to fail; returns what it printed."""
        done = self.run_mc(*args)
        self.assertNotEqual(done.returncode, 0, done.stdout)
        return (done.stdout + done.stderr).decode()

    def rate_metric(self):
        with urllib.request.urlopen(f"{self.server.endpoint}/minio/v2/metrics/cluster", timeout=10) as r:
            text = r.read().decode()
        for line in text.splitlines():
            if line.startswith("tessera_scanner_rate "):
                return int(float(line.split()[1]))
        self.fail(f"no tessera_scanner_rate in\n{text}")

    def realias(self):
        """Points alias `t` at the server's endpoint (a restart takes a new
        port)."""
        type(self).endpoint = self.server.endpoint
        done = self.run_mc("alias", "set", "t", self.server.endpoint, ACCESS_KEY, SECRET_KEY, "--api", "S3v4")
        self.assertEqual(done.returncode, 0, done.stderr)

    def test_a_speed_is_set_read_kept_across_a_restart_and_reset(self):
        out = self.mc("admin", "config", "get", "t", "scanner")
        self.assertIn("scanner speed=default", out)
        self.assertIn("# scanner rate: 100 versions per second", out)
        self.assertEqual(self.rate_metric(), 100)

        out = self.mc("admin", "config", "set", "t", "scanner", "speed=slow")
        self.assertIn("Successfully applied new settings.", out)
        self.assertNotIn("restart", out)
        out = self.mc("admin", "config", "get", "t", "scanner")
        self.assertIn("scanner speed=slow", out)
        self.assertIn("# scanner rate: 10 versions per second", out)
        self.assertEqual(self.rate_metric(), 10)
        doc = json.loads(self.mc("--json", "admin", "config", "get", "t", "scanner"))
        self.assertEqual(doc["config"], [{"subSystem": "scanner", "kv": [{"key": "speed", "value": "slow"}]}])

        self.mc("admin", "config", "set", "t", "scanner", "speed=fastest")
        self.assertEqual(self.rate_metric(), 0)
        self.assertIn("rate: unlimited", self.mc("admin", "config", "get", "t", "scanner"))
        self.mc("admin", "config", "set", "t", "scanner", "speed=fast")
        self.assertEqual(self.rate_metric(), 1000)

        # Kept on the drives: a restart with another start rate keeps the
        # speed, relative to the new rate.
        self.server.stop()
        self.server.extra_env["TESSERA_SCANNER_RATE"] = "40"
        self.addCleanup(self.server.extra_env.pop, "TESSERA_SCANNER_RATE", None)
        self.server.start()
        self.realias()
        out = self.mc("admin", "config", "get", "t", "scanner")
        self.assertIn("scanner speed=fast", out)
        self.assertIn("# scanner rate: 400 versions per second (start rate 40", out)
        self.assertEqual(self.rate_metric(), 400)

        out = self.mc("admin", "config", "reset", "t", "scanner")
        self.assertIn("'scanner' is successfully reset.", out)
        self.assertNotIn("restart", out)
        self.assertIn("scanner speed=default", self.mc("admin", "config", "get", "t", "scanner"))
        self.assertEqual(self.rate_metric(), 40)
        self.mc("admin", "config", "set", "t", "scanner", "speed=slowest")
        self.assertEqual(self.rate_metric(), 1)
        self.mc("admin", "config", "reset", "t", "scanner", "speed")
        self.assertEqual(self.rate_metric(), 40)
        # Reset stays reset; the start rate is the environment's again.
        self.server.stop()
        del self.server.extra_env["TESSERA_SCANNER_RATE"]
        self.server.start()
        self.realias()
        self.assertIn("scanner speed=default", self.mc("admin", "config", "get", "t", "scanner"))
        self.assertEqual(self.rate_metric(), 100)

    def test_what_mc_asks_for_help_lists(self):
        out = self.mc("admin", "config", "get", "t")
        self.assertIn("scanner", out)
        out = self.mc("admin", "config", "set", "t", "scanner")
        self.assertIn("speed", out)
        self.assertIn("fastest|fast|default|slow|slowest", out)

    def test_refusals_name_the_reason_and_change_nothing(self):
        self.mc("admin", "config", "set", "t", "scanner", "speed=slow")
        self.addCleanup(self.run_mc, "admin", "config", "reset", "t", "scanner")
        for args, needle in (
            (("set", "t", "scanner", "speed=warp"), "unknown 'warp' value"),
            (("set", "t", "scanner", "delay=10"), "found invalid keys (delay=10) for 'scanner' sub-system"),
            (("set", "t", "scanner", "speed=fast", "cycle=1m"), "found invalid keys (cycle=1m)"),
            (("set", "t", "heal", "max_io=50"), "found invalid keys (max_io=50) for 'heal' sub-system"),
            (("set", "t", "heal", "max_sleep=1s", "bitrotscan=on"), "for 'heal' sub-system"),
            (("set", "t", "api", "requests_max=10"), "'api' is not implemented by Tessera"),
            (("set", "t", "nosuch", "x=y"), "unknown sub-system nosuch"),
            (("get", "t", "heal"), "'heal' is not implemented by Tessera"),
            (("get", "t", "notify_webhook"), "'notify_webhook' is not implemented by Tessera"),
            (("reset", "t", "heal"), "'heal' is not implemented by Tessera"),
        ):
            with self.subTest(args=args):
                self.assertIn(needle, self.failing_mc("admin", "config", *args))
        self.assertIn("scanner speed=slow", self.mc("admin", "config", "get", "t", "scanner"))
        self.assertEqual(self.rate_metric(), 10)

        big = b"x" * (262_272 + 1)
        r = raw_request(self.endpoint, "PUT", "/minio/admin/v3/set-config-kv", body=big)
        self.assertEqual((r.status, code_of(r.body)), (400, "XMinioAdminConfigTooLarge"), r)
        r = raw_request(self.endpoint, "PUT", "/minio/admin/v3/set-config-kv", body=b"scanner speed=fast")
        self.assertEqual((r.status, code_of(r.body)), (400, "XMinioAdminConfigBadJSON"), r)
        r = raw_request(self.endpoint, "PUT", "/minio/admin/v3/set-config-kv", body=b"x", sign=False)
        self.assertEqual((r.status, code_of(r.body)), (403, "AccessDenied"), r)
        self.assertEqual(self.rate_metric(), 10)


def mc_lines(out):
    return [line for line in out.splitlines() if line.strip()]


class HealSequenceTests(McAdminCase):
    # Every GET reads the drives: the healed shards are what is read.
    server_env = {"TESSERA_READ_CACHE": "off"}

    def put(self, s3, bucket, objects):
        for key, data in objects.items():
            s3.put_object(Bucket=bucket, Key=key, Body=data)

    def test_a_heal_brings_back_a_drive_s_copies_bit_for_bit(self):
        s3 = client(self.endpoint)
        bucket = unique_bucket("heal")
        s3.create_bucket(Bucket=bucket)
        objects = {
            "big": os.urandom(3 * MiB + 17),
            "small": os.urandom(5000),
            "dir/nested": os.urandom(300_000),
        }
        self.put(s3, bucket, objects)
        lost = os.path.join(self.server.drives[1], bucket)
        saved = read_tree(lost)
        self.assertEqual(len(saved), 5, sorted(saved))  # 3 xl.meta, 2 part files
        for top in ("big", "small", "dir"):
            shutil.rmtree(os.path.join(lost, top))

        # A dry run reports what is missing and writes nothing.
        out = self.mc("admin", "heal", "--dry-run", f"t/{bucket}")
        lines = mc_lines(out)
        self.assertEqual(lines[0], f"[Green  ->  Green] {bucket}/", out)
        self.assertEqual(
            sorted(lines[1:3]),
            [f"[Yellow -> Yellow] {bucket}/big", f"[Yellow -> Yellow] {bucket}/small"],
            out,
        )
        self.assertRegex(lines[3], r"^Healed:\s+0/2 objects;")
        self.assertEqual(read_tree(lost), {})

        # One level: the top-level objects; bit for bit as they were.
        out = self.mc("admin", "heal", f"t/{bucket}")
        lines = mc_lines(out)
        self.assertEqual(
            sorted(lines[1:3]),
            [f"[Yellow ->  Green] {bucket}/big", f"[Yellow ->  Green] {bucket}/small"],
            out,
        )
        self.assertRegex(lines[3], r"^Healed:\s+2/2 objects;")
        now = read_tree(lost)
        self.assertEqual(sorted(now), sorted(k for k in saved if not k.startswith("dir/")))
        for name, data in now.items():
            self.assertEqual(data, saved[name], name)

        # The rest with --recursive, under a prefix.
        out = self.mc("admin", "heal", "--recursive", f"t/{bucket}/dir")
        self.assertIn(f"[Yellow ->  Green] {bucket}/dir/nested", out)
        self.assertRegex(mc_lines(out)[-1], r"^Healed:\s+1/1 objects;")
        self.assertEqual(read_tree(lost), saved)

        # Two other drives lose their copies: a dry run with --json reports
        # each item (drive 1 and 3 hold them) and the summary, and heals
        # nothing.
        for d in (0, 2):
            shutil.rmtree(os.path.join(self.server.drives[d], bucket))
            os.makedirs(os.path.join(self.server.drives[d], bucket))
        out = self.mc("--json", "admin", "heal", "--dry-run", "--recursive", f"t/{bucket}")
        records = [json.loads(line) for line in mc_lines(out)]
        self.assertEqual(records[0]["type"], "bucket")
        items = {r["name"]: r for r in records if r["type"] == "object"}
        self.assertEqual(sorted(items), sorted(f"{bucket}/{k}" for k in objects))
        for r in items.values():
            self.assertEqual((r["before"]["online"], r["after"]["online"]), (2, 2), r)
            self.assertEqual([d["state"] for d in r["before"]["drives"]],
                             ["missing", "ok", "missing", "ok"], r)
            self.assertEqual(r["before"]["drives"][1]["endpoint"], os.path.realpath(self.server.drives[1]))
        summary = records[-1]
        self.assertEqual(summary["type"], "summary")
        self.assertEqual((summary["objects_scanned"], summary["objects_healed"]), (3, 0), summary)
        self.assertEqual(summary["size"], sum(len(v) for v in objects.values()))
        self.assertEqual(read_tree(os.path.join(self.server.drives[0], bucket)), {})

        # The healed shards are right: every object reads back from the
        # healed drive and the one other drive that has it.
        for key, data in objects.items():
            self.assertEqual(s3.get_object(Bucket=bucket, Key=key)["Body"].read(), data, key)

    def start(self, path, opts=None, query=""):
        return raw_request(self.endpoint, "POST", HEAL + path, query,
                           body=json.dumps(opts or {"recursive": True}).encode())

    def test_the_heal_sequence_protocol(self):
        s3 = client(self.endpoint)
        bucket = unique_bucket("seq")
        s3.create_bucket(Bucket=bucket)
        self.put(s3, bucket, {f"k{i}": b"v" * 10 for i in range(20)})
        # One version a second: the heal runs long enough to be watched.
        self.mc("admin", "config", "set", "t", "scanner", "speed=slowest")
        self.addCleanup(self.run_mc, "admin", "config", "reset", "t", "scanner")

        r = self.start(bucket)
        self.assertEqual(r.status, 200, r)
        started = json.loads(r.body)
        token = started["clientToken"]
        self.assertEqual(started["clientAddress"], "127.0.0.1")
        self.assertTrue(started["startTime"].endswith("Z"), started)

        # A second start on the running path picks it up again while it has
        # items waiting (the bucket's).
        time.sleep(0.5)
        r = self.start(bucket)
        self.assertEqual((r.status, json.loads(r.body)["clientToken"]), (200, token), r)
        r = self.start(f"{bucket}/k1")
        self.assertEqual((r.status, code_of(r.body)), (400, "XMinioHealOverlappingPaths"), r)
        r = self.start(bucket, query="clientToken=not-the-token")
        self.assertEqual((r.status, code_of(r.body)), (400, "XMinioHealInvalidClientToken"), r)
        r = self.start(bucket, query=f"clientToken={token}&forceStart=true")
        self.assertEqual((r.status, code_of(r.body)), (400, "InvalidRequest"), r)

        r = self.start(bucket, query=f"clientToken={token}")
        status = json.loads(r.body)
        self.assertEqual(status["summary"], "running", status)
        self.assertEqual(status["settings"]["recursive"], True)
        first = status["items"][0]
        self.assertEqual((first["resultId"], first["type"], first["bucket"]), (1, "bucket", bucket))
        self.assertEqual([d["state"] for d in first["after"]["drives"]], ["ok"] * 4)
        # Nothing waiting now: a start without force is refused.
        r = self.start(bucket)
        if r.status == 200:
            # An object's item came in between: taken, then refused.
            self.assertEqual(json.loads(r.body)["clientToken"], token)
            self.start(bucket, query=f"clientToken={token}")
            r = self.start(bucket)
        self.assertEqual((r.status, code_of(r.body)), (400, "XMinioHealAlreadyRunning"), r)

        out = self.mc("admin", "heal", "--force-stop", f"t/{bucket}")
        self.assertIn(f"Heal stopped successfully at `t/{bucket}`.", out)
        r = self.start(bucket, query=f"clientToken={token}")
        self.assertEqual(json.loads(r.body)["summary"], "finished", r)

        # --force-start replaces a running one.
        token = json.loads(self.start(bucket).body)["clientToken"]
        r = self.start(bucket, query="forceStart=true")
        self.assertEqual(r.status, 200, r)
        self.assertNotEqual(json.loads(r.body)["clientToken"], token)
        self.mc("admin", "heal", "--force-stop", f"t/{bucket}")

        out = self.run_mc("admin", "heal", f"t/{unique_bucket('none')}")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn(b"bucket does not exist", out.stdout + out.stderr)
        for opts, needle in (({"recreate": True}, "--rewrite"), ({"pool": 0}, "--pool")):
            r = self.start(bucket, opts)
            self.assertEqual((r.status, code_of(r.body)), (501, "NotImplemented"), r)
            self.assertIn(needle.encode(), r.body)
        r = raw_request(self.endpoint, "POST", HEAL + bucket, body=b"{not json")
        self.assertEqual((r.status, code_of(r.body)), (400, "XMinioRequestBodyParse"), r)
        r = raw_request(self.endpoint, "POST", HEAL + bucket, body=b"{}", sign=False)
        self.assertEqual((r.status, code_of(r.body)), (403, "AccessDenied"), r)


def cluster_mc(c, i, *args, check=True):
    """`mc ARGS` with alias `c` for node i: its stdout and stderr."""
    config = tempfile.mkdtemp(prefix="tessera-cluster-mc-")
    try:
        env = dict(os.environ, MC_HOST_c=f"http://{ACCESS_KEY}:{SECRET_KEY}@{c.name(i)}", MC_NO_COLOR="1")
        done = subprocess.run([mc_binary(), "--config-dir", config, "--no-color", *args],
                              env=env, capture_output=True, timeout=120)
    finally:
        shutil.rmtree(config, ignore_errors=True)
    if check:
        assert done.returncode == 0, (args, done.stdout, done.stderr, c.log_tail(i))
    return done.stdout.decode()


class ClusterHealTests(unittest.TestCase):
    def test_a_speed_set_through_one_node_holds_on_all_and_a_heal_rebuilds_a_node(self):
        c = Cluster()
        self.addCleanup(c.cleanup)
        for i in range(4):
            c.start(i)
        c.wait_agreed(range(4), FORM_BOUND_S, "forming")
        wait_serving(c, range(4))

        cluster_mc(c, 0, "admin", "config", "set", "c", "scanner", "speed=slow")
        for i in range(4):
            self.assertEqual(metric_lines(c, i, "tessera_scanner_rate"), {"": 10}, f"node {i + 1}")
            self.assertIn("scanner speed=slow", cluster_mc(c, i, "admin", "config", "get", "c", "scanner"))

        s3 = node_client(c, 1)
        bucket = unique_bucket("cheal")
        s3.create_bucket(Bucket=bucket)
        data = {"a": body(2 * MiB, 1), "b": body(1000, 2)}
        for k, v in data.items():
            s3.put_object(Bucket=bucket, Key=k, Body=v)
        node4 = [os.path.join(c.root, "n4", f"d{d}", bucket) for d in range(1, 5)]
        saved = [read_tree(p) for p in node4]
        self.assertTrue(all(saved), saved)
        for p in node4:
            for k in data:
                shutil.rmtree(os.path.join(p, k))

        out = cluster_mc(c, 1, "--quiet", "admin", "heal", f"c/{bucket}")
        self.assertRegex(out, r"Healed:\s+2/2 objects;")
        self.assertEqual([read_tree(p) for p in node4], saved)

        # A heal started through node 1 and polled through the others, as
        # behind a load balancer: its token names node 1, whose sequence
        # answers every poll (its items numbered on, none lost or repeated).
        def node(i):
            return f"http://{c.name(i)}"
        r = raw_request(node(0), "POST", HEAL + bucket, body=json.dumps({"recursive": True}).encode())
        self.assertEqual(r.status, 200, r)
        token = json.loads(r.body)["clientToken"]
        self.assertTrue(token.endswith(":0"), token)
        items, polls, deadline = [], 0, time.monotonic() + 60
        while True:
            polls += 1
            r = raw_request(node(polls % 4), "POST", HEAL + bucket, "clientToken=" + quote(token, safe=""))
            self.assertEqual(r.status, 200, (polls, r))
            status = json.loads(r.body)
            items += status.get("items", [])
            if status["summary"] == "finished":
                break
            self.assertEqual(status["summary"], "running", status)
            self.assertLess(time.monotonic(), deadline, status)
            time.sleep(0.2)
        self.assertEqual([i["resultId"] for i in items], list(range(1, len(items) + 1)), items)
        self.assertEqual(sorted(i["object"] for i in items if i["type"] == "object"), ["a", "b"])
        # A wrong token is refused by the node it names; a node the cluster
        # does not have names no sequence.
        for i, bad in ((2, "not-the-token:0"), (3, f"{token.split(':')[0]}:9")):
            r = raw_request(node(i), "POST", HEAL + bucket, "clientToken=" + quote(bad, safe=""))
            self.assertEqual((r.status, code_of(r.body)), (400, "XMinioHealInvalidClientToken"), r)

        cluster_mc(c, 2, "admin", "config", "reset", "c", "scanner")
        for i in range(4):
            self.assertEqual(metric_lines(c, i, "tessera_scanner_rate"), {"": 100}, f"node {i + 1}")


if __name__ == "__main__":
    unittest.main()
