"""`mc admin info` (MinIO's admin info call, `GET /minio/admin/v3/info`)
against a real `tessera server`.

- `mc admin info --json` reports the deployment id of the drives'
  format.json, every drive with its id (`xl.this`), place, state `ok` and
  space, the parity and the set layout; plain `mc admin info` exits 0 and
  prints the drive count line.
- The raw document carries madmin-go's field names.
- A drive directory removed under the running server is reported offline
  and counted out of the online drives.
- Unsigned: 403 AccessDenied; a wrong secret: 403 SignatureDoesNotMatch;
  any other admin call is still 501 NotImplemented.
- `mc admin heal` (the background heal status, `POST
  /minio/admin/v3/background-heal/status`): no heal on a whole deployment;
  after a drive is replaced by an empty one, the heal of it while the
  scanner's first pass runs (objects and bytes healed so far, as mc prints
  them), and when it ends every object and byte counted, the drive no
  longer healing.

The mc binary comes from TESSERA_MC, as in test_mc.py.
"""

import json
import os
import shutil
import time
import xml.etree.ElementTree as ET

from s3util import client, raw_request
from test_mc import McCase
from tessera_server import ACCESS_KEY, SECRET_KEY, unique_bucket

INFO = "/minio/admin/v3/info"


def code_of(body):
    try:
        return ET.fromstring(body).findtext("Code")
    except ET.ParseError:
        return None


def read_format(drive):
    with open(os.path.join(drive, ".minio.sys", "format.json")) as f:
        return json.load(f)


class McAdminCase(McCase):
    """A server with an mc alias `t` for it."""

    def mc(self, *args):
        """Runs mc; fails the test on a non-zero exit. Returns stdout text."""
        return super().mc(*args).decode()

    def info_json(self):
        """The InfoMessage of `mc admin info --json`, as mc decoded it."""
        out = json.loads(self.mc("--json", "admin", "info", "t"))
        self.assertEqual(out["status"], "success", out)
        return out["info"]

    def drive_paths(self):
        return [os.path.realpath(d) for d in self.server.drives]


class AdminInfoTests(McAdminCase):
    def test_json_reports_the_drives_format_and_layout(self):
        s3 = client(self.endpoint)
        bucket = unique_bucket("info")
        s3.create_bucket(Bucket=bucket)
        info = self.info_json()
        formats = [read_format(d) for d in self.server.drives]
        self.assertEqual({f["id"] for f in formats}, {info["deploymentID"]})
        self.assertEqual(info["mode"], "online")
        self.assertEqual(info["region"], "us-east-1")
        self.assertEqual(info["buckets"]["count"], len(s3.list_buckets()["Buckets"]))
        # Objects and usage are not counted: zero with the reason.
        self.assertEqual(info["objects"]["count"], 0)
        self.assertIn("not counted", info["objects"]["error"])
        self.assertIn("not counted", info["usage"]["error"])

        backend = info["backend"]
        self.assertEqual(backend["backendType"], "Erasure")
        self.assertEqual((backend["onlineDisks"], backend["offlineDisks"]), (4, 0))
        self.assertEqual((backend["standardSCParity"], backend["rrSCParity"]), (2, 1))
        self.assertEqual((backend["totalSets"], backend["totalDrivesPerSet"]), ([1], [4]))

        [server] = info["servers"]
        self.assertEqual(server["state"], "online")
        self.assertEqual(server["endpoint"], self.endpoint.removeprefix("http://"))
        self.assertEqual(server["scheme"], "http")
        self.assertEqual(server["network"], {server["endpoint"]: "online"})
        self.assertEqual((server["poolNumber"], server["poolNumbers"]), (1, [1]))
        # mc leaves out an uptime of 0 s (a server started this second).
        self.assertGreaterEqual(server.get("uptime", 0), 0)
        drives = server["drives"]
        self.assertEqual([d["path"] for d in drives], self.drive_paths())
        for i, (d, f) in enumerate(zip(drives, formats)):
            with self.subTest(drive=d["path"]):
                self.assertEqual(d["state"], "ok")
                self.assertEqual(d["endpoint"], d["path"])
                self.assertEqual(d["uuid"], f["xl"]["this"])
                self.assertEqual(f["xl"]["sets"][0][i], f["xl"]["this"])
                self.assertEqual((d["pool_index"], d["set_index"], d["disk_index"]), (0, 0, i))
                self.assertGreater(d["totalspace"], 0)
                self.assertGreater(d["availspace"], 0)
                self.assertLessEqual(d["usedspace"], d["totalspace"])
                st = os.statvfs(d["path"])
                self.assertEqual(d["totalspace"], st.f_blocks * st.f_frsize)

    def test_plain_output_prints_the_drive_line(self):
        out = self.mc("admin", "info", "t")
        self.assertIn(self.endpoint.removeprefix("http://"), out)
        self.assertIn("Drives: 4/4 OK", out)
        self.assertIn("4 drives online, 0 drives offline, EC:2", out)

    def test_raw_document_has_madmin_field_names(self):
        r = raw_request(self.endpoint, "GET", INFO, "metrics=false")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.headers["content-type"], "application/json")
        doc = json.loads(r.body)
        for key in ("mode", "region", "deploymentID", "buckets", "objects", "usage", "backend", "servers"):
            self.assertIn(key, doc)
        self.assertEqual(
            set(doc["backend"]),
            {"backendType", "onlineDisks", "offlineDisks", "standardSCParity", "rrSCParity",
             "totalSets", "totalDrivesPerSet"},
        )
        drive = doc["servers"][0]["drives"][0]
        for key in ("endpoint", "path", "state", "uuid", "totalspace", "usedspace", "availspace",
                    "pool_index", "set_index", "disk_index"):
            self.assertIn(key, drive)

    def test_unsigned_request_is_access_denied(self):
        r = raw_request(self.endpoint, "GET", INFO, sign=False)
        self.assertEqual((r.status, code_of(r.body)), (403, "AccessDenied"), r)

    def test_wrong_secret_is_a_signature_mismatch(self):
        r = raw_request(self.endpoint, "GET", INFO, secret_key=SECRET_KEY + "x")
        self.assertEqual((r.status, code_of(r.body)), (403, "SignatureDoesNotMatch"), r)
        # `mc alias set` checks the keys; MC_HOST_<alias> does not.
        host = self.endpoint.removeprefix("http://")
        wrong = f"http://{ACCESS_KEY}:{SECRET_KEY}x@{host}"
        done = self.run_mc("admin", "info", "wrong", env={"MC_HOST_wrong": wrong})
        self.assertNotEqual(done.returncode, 0)
        self.assertIn(b"signature", (done.stdout + done.stderr).lower())

    def test_other_admin_calls_are_not_implemented(self):
        for method, path in (("GET", "/minio/admin/v3/list-access-keys-bulk"), ("HEAD", INFO), ("POST", INFO)):
            with self.subTest(method=method, path=path):
                r = raw_request(self.endpoint, method, path)
                self.assertEqual(r.status, 501, r)
                if method != "HEAD":
                    self.assertEqual(code_of(r.body), "NotImplemented", r)
        done = self.run_mc("admin", "config", "get", "t", "api")
        self.assertNotEqual(done.returncode, 0)
        self.assertIn(b"not implemented", done.stdout + done.stderr)


class DriveGoneTests(McAdminCase):
    def test_removed_drive_is_offline(self):
        gone = self.server.drives[2]
        shutil.rmtree(gone)
        info = self.info_json()
        self.assertEqual((info["backend"]["onlineDisks"], info["backend"]["offlineDisks"]), (3, 1))
        states = {d["path"]: d["state"] for d in info["servers"][0]["drives"]}
        paths = self.drive_paths()
        self.assertEqual(states[paths[2]], "offline")
        self.assertEqual([states[p] for p in paths if p != paths[2]], ["ok"] * 3)
        out = self.mc("admin", "info", "t")
        self.assertIn("Drives: 3/4 OK", out)
        self.assertIn("3 drives online, 1 drive offline, EC:2", out)


class HealStatusTests(McAdminCase):
    def heal(self, alias="t", env=None):
        """`mc admin heal --json ALIAS`: the heal status as mc decoded it."""
        done = self.run_mc("--json", "admin", "heal", alias, env=env)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        out = json.loads(done.stdout)
        self.assertEqual(out["status"], "success", out)
        return out["HealInfo"]

    def test_a_replaced_drive_s_heal_is_shown_as_it_runs_and_when_it_ends(self):
        status = self.heal()
        self.assertEqual(status["sc_parity"], {"STANDARD": 2, "REDUCED_REDUNDANCY": 1})
        self.assertEqual(len(status["sets"]), 1)
        disks = status["sets"][0]["disks"]
        self.assertEqual([d["state"] for d in disks], ["ok"] * 4)
        self.assertFalse(any("heal_info" in d for d in disks), disks)
        self.assertIn("No active healing is detected for new disks.", self.mc("admin", "heal", "t"))

        s3 = client(self.endpoint)
        bucket = unique_bucket("heal")
        s3.create_bucket(Bucket=bucket)
        sizes = [(i * 37_003) % 400_000 for i in range(24)]
        for i, n in enumerate(sizes):
            s3.put_object(Bucket=bucket, Key=f"o{i}", Body=os.urandom(n))

        # The second drive is replaced by an empty one; the server comes
        # back with a slow scanner (4 versions a second) so that the heal
        # can be watched.
        self.server.stop()
        shutil.rmtree(self.server.drives[1])
        os.makedirs(self.server.drives[1])
        self.server.extra_env["TESSERA_SCANNER_RATE"] = "4"
        self.server.start()
        host = self.server.endpoint.removeprefix("http://")
        env = {"MC_HOST_h": f"http://{ACCESS_KEY}:{SECRET_KEY}@{host}"}

        def replaced(status):
            disk = status["sets"][0]["disks"][1]
            self.assertEqual(disk["disk_index"], 1)
            return disk

        deadline = time.monotonic() + 30
        while True:
            status = self.heal("h", env)
            disk = replaced(status)
            info = disk.get("heal_info")
            if info and info["items_healed"] > 0:
                break
            self.assertLess(time.monotonic(), deadline, status)
            time.sleep(0.1)
        self.assertFalse(info["finished"], info)
        self.assertTrue(disk["healing"], disk)
        self.assertEqual(status["HealDisks"], [disk["endpoint"]])
        self.assertEqual(info["pool_index"], 0)
        self.assertEqual(info["set_index"], 0)
        out = self.run_mc("admin", "heal", "h", env=env).stdout.decode()
        self.assertIn("Objects Healed:", out)
        self.assertIn("Heal rate:", out)

        deadline = time.monotonic() + 60
        while not info["finished"]:
            self.assertLess(time.monotonic(), deadline, info)
            time.sleep(0.5)
            disk = replaced(self.heal("h", env))
            info = disk["heal_info"]
        self.assertEqual(info["items_healed"], len(sizes))
        self.assertEqual(info["bytes_done"], sum(sizes))
        self.assertEqual((info["items_failed"], info["bytes_failed"]), (0, 0))
        self.assertNotIn("healing", disk)
        out = self.run_mc("admin", "heal", "h", env=env).stdout.decode()
        self.assertIn("No active healing is detected for new disks.", out)
