"""Object lock and quotas shared with a real single-node MinIO on the same
four drives, one server at a time: the contract that Tessera reads and
writes the lock configuration, the versions' retention and legal hold and
the bucket quota where MinIO keeps them (the bucket's `.metadata.bin`, the
versions' metadata in `xl.meta`), and enforces what MinIO enforces.

- MinIO to Tessera: MinIO formats the drives; boto3 and `mc quota` make a
  lock-enabled bucket with a default GOVERNANCE retention, versions under
  that default, under COMPLIANCE, under a legal hold, and a bucket with a
  hard quota. What MinIO (the oracle) allows and refuses, and the lock
  documents it answers, are recorded; MinIO stops, Tessera starts on the
  drives and must allow and refuse the same and answer the same lock
  documents. Then Tessera lifts the governance retention with the bypass,
  as MinIO would.
- Tessera to MinIO: the same made against Tessera on fresh drives and
  checked on MinIO after Tessera stops.

Compared is whether each request is allowed, not its error code: where
S3 answers 403 AccessDenied for a protected version (as Tessera does),
MinIO answers 400 InvalidRequest ("Object is WORM protected").

The MinIO binary comes from TESSERA_MINIO, mc from TESSERA_MC; the test
fails without them, it never skips.
"""

import datetime
import json
import os
import tempfile
import time
import unittest

from s3util import client
from tessera_server import TesseraServer
from test_iam_minio import Mc, Minio, minio_client, outcome

LOCKED = "gov-locked"
LIFECYCLE = "gov-lifecycle"
QUOTA = "gov-quota"
QUOTA_BYTES = 64 * 1024


def in_hours(h):
    return (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=h)).replace(microsecond=0)


def make_everything(mc, s3):
    """The buckets and versions; returns the version ids by name."""
    s3.create_bucket(Bucket=LOCKED, ObjectLockEnabledForBucket=True)
    s3.put_object_lock_configuration(
        Bucket=LOCKED,
        ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}},
        },
    )
    v = {}
    v["gov"] = s3.put_object(Bucket=LOCKED, Key="gov", Body=b"governed")["VersionId"]
    v["comp"] = s3.put_object(
        Bucket=LOCKED, Key="comp", Body=b"complied",
        ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=in_hours(2),
    )["VersionId"]
    v["held"] = s3.put_object(Bucket=LOCKED, Key="held", Body=b"held", ObjectLockLegalHoldStatus="ON")["VersionId"]
    s3.create_bucket(Bucket=QUOTA)
    mc("quota", "set", f"s/{QUOTA}", "--size", str(QUOTA_BYTES))
    s3.create_bucket(Bucket=LIFECYCLE)
    s3.put_bucket_lifecycle_configuration(Bucket=LIFECYCLE, LifecycleConfiguration={"Rules": [
        {"ID": "logs", "Status": "Enabled", "Filter": {"Prefix": "logs/"}, "Expiration": {"Days": 1}},
        {"ID": "old", "Status": "Enabled", "Filter": {"Prefix": ""},
         "NoncurrentVersionExpiration": {"NoncurrentDays": 2}},
    ]})
    s3.put_object(Bucket=LIFECYCLE, Key="logs/a", Body=b"log")
    s3.put_object(Bucket=LIFECYCLE, Key="keep", Body=b"keep")
    return v


def allowed(call, **params):
    got = outcome(call, **params)
    return got[0] == "ok"


def check_everything(test, s3, v, who):
    """What `s3` is allowed and answers; nothing it allows changes state
    that a later check reads."""
    seen = {}
    for name in ("gov", "comp", "held"):
        seen[f"delete {name}"] = allowed(s3.delete_object, Bucket=LOCKED, Key=name, VersionId=v[name])
    seen["delete comp with bypass"] = allowed(
        s3.delete_object, Bucket=LOCKED, Key="comp", VersionId=v["comp"], BypassGovernanceRetention=True,
    )
    seen["delete held with bypass"] = allowed(
        s3.delete_object, Bucket=LOCKED, Key="held", VersionId=v["held"], BypassGovernanceRetention=True,
    )
    seen["shorten comp"] = allowed(
        s3.put_object_retention, Bucket=LOCKED, Key="comp", VersionId=v["comp"],
        Retention={"Mode": "COMPLIANCE", "RetainUntilDate": in_hours(1)}, BypassGovernanceRetention=True,
    )
    seen["suspend versioning"] = allowed(
        s3.put_bucket_versioning, Bucket=LOCKED, VersioningConfiguration={"Status": "Suspended"},
    )
    cfg = s3.get_object_lock_configuration(Bucket=LOCKED)["ObjectLockConfiguration"]
    seen["lock configuration"] = cfg
    for name in ("gov", "comp"):
        r = s3.get_object_retention(Bucket=LOCKED, Key=name, VersionId=v[name])["Retention"]
        seen[f"retention {name}"] = (r["Mode"], r["RetainUntilDate"].isoformat())
    seen["legal hold"] = s3.get_object_legal_hold(Bucket=LOCKED, Key="held", VersionId=v["held"])["LegalHold"]
    head = s3.head_object(Bucket=LOCKED, Key="gov", VersionId=v["gov"])
    seen["head gov"] = (head["ObjectLockMode"], head["ObjectLockRetainUntilDate"].isoformat())
    for name, body in (("gov", b"governed"), ("comp", b"complied"), ("held", b"held")):
        test.assertEqual(s3.get_object(Bucket=LOCKED, Key=name, VersionId=v[name])["Body"].read(), body, who)
    seen["over quota"] = allowed(s3.put_object, Bucket=QUOTA, Key="big", Body=b"q" * QUOTA_BYTES)
    rules = s3.get_bucket_lifecycle_configuration(Bucket=LIFECYCLE)["Rules"]
    seen["lifecycle rules"] = sorted(json.dumps(r, sort_keys=True) for r in rules)
    seen["x-amz-expiration"] = s3.head_object(Bucket=LIFECYCLE, Key="logs/a").get("Expiration")
    seen["no x-amz-expiration"] = s3.head_object(Bucket=LIFECYCLE, Key="keep").get("Expiration")
    return seen


class GovernanceMinio(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        # Tessera's lifecycle runs every second under a clock the test
        # moves, so MinIO's rules can be seen carried out.
        self.clock = os.path.join(tempfile.mkdtemp(prefix="tessera-gov-clock-"), "offset")
        with open(self.clock, "w") as f:
            f.write("0")
        self.tessera = TesseraServer(env={
            "TESSERA_LIFECYCLE_INTERVAL": "1s",
            "TESSERA_TEST_LIFECYCLE_CLOCK_FILE": self.clock,
        })
        self.addCleanup(self.tessera.cleanup)
        for d in self.tessera.drives:
            os.makedirs(d, exist_ok=True)
        self.minio = Minio(self.tessera.root, self.tessera.drives)
        self.addCleanup(self.minio.stop)
        config = os.path.join(self.tessera.root, "mc-config")
        os.makedirs(config)
        self.mc = Mc(self, config)
        self.started = time.monotonic()

    def start_minio(self):
        self.minio.start()
        self.mc.point_at(self.minio.endpoint, retry=True, log_tail=self.minio.log_tail)
        return minio_client(self.minio.endpoint)

    def start_tessera(self):
        self.tessera.start()
        self.mc.point_at(self.tessera.endpoint, retry=False, log_tail=self.tessera.log_tail)
        return client(self.tessera.endpoint)

    def expected(self, seen):
        """The answers both servers must give."""
        refused = {k: False for k in seen if k.startswith(("delete", "shorten", "suspend", "over"))}
        for k, want in refused.items():
            self.assertEqual(seen[k], want, f"{k} was allowed")

    def test_minio_made_tessera_enforces(self):
        s3 = self.start_minio()
        v = make_everything(self.mc, s3)
        oracle = check_everything(self, s3, v, "minio")
        self.expected(oracle)
        self.minio.stop()

        s3 = self.start_tessera()
        got = check_everything(self, s3, v, "tessera")
        self.assertEqual(got, oracle, "tessera against minio on minio's drives")
        self.assertIsNotNone(got["x-amz-expiration"])
        self.assertIn('rule-id="logs"', got["x-amz-expiration"])
        # MinIO's rules, carried out by Tessera two days on.
        with open(self.clock, "w") as f:
            f.write(str(3 * 86400))
        deadline = time.monotonic() + 60
        while [o["Key"] for o in s3.list_objects_v2(Bucket=LIFECYCLE).get("Contents", [])] != ["keep"]:
            self.assertLess(time.monotonic(), deadline, "logs/a not expired by tessera under minio's rules")
            time.sleep(0.3)
        # What MinIO would allow, Tessera allows: the governance bypass.
        s3.delete_object(Bucket=LOCKED, Key="gov", VersionId=v["gov"], BypassGovernanceRetention=True)
        self.assertEqual(s3.list_object_versions(Bucket=LOCKED, Prefix="gov").get("Versions", []), [])
        code = self.tessera.stop()
        self.assertEqual(code, 0, self.tessera.log_tail())
        print(f"\nminio -> tessera in {time.monotonic() - self.started:.1f} s")

    def test_tessera_made_minio_enforces(self):
        s3 = self.start_tessera()
        v = make_everything(self.mc, s3)
        mine = check_everything(self, s3, v, "tessera")
        self.expected(mine)
        code = self.tessera.stop()
        self.assertEqual(code, 0, self.tessera.log_tail())

        s3 = self.start_minio()
        got = check_everything(self, s3, v, "minio")
        self.assertEqual(got, mine, "minio against tessera on tessera's drives")
        s3.delete_object(Bucket=LOCKED, Key="gov", VersionId=v["gov"], BypassGovernanceRetention=True)
        self.assertEqual(s3.list_object_versions(Bucket=LOCKED, Prefix="gov").get("Versions", []), [])
        self.minio.stop()
        print(f"\ntessera -> minio in {time.monotonic() - self.started:.1f} s")


if __name__ == "__main__":
    unittest.main()
