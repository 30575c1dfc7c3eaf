"""Bucket lifecycle against a real `tessera server`: configurations put
and read with boto3 and the aws-cli (S3's validation, transitions stored
but not executed), the `x-amz-expiration` header, and the rules carried
out by the server's lifecycle pass under a clock the test advances
(`TESSERA_TEST_LIFECYCLE_CLOCK_FILE`), verified by listing versions:
current-version expiry, noncurrent expiry by days and by newer-version
count, removal of lone delete markers, abort of incomplete uploads, and
versions under object lock that are never removed.
"""

import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

from botocore.exceptions import ClientError

from s3util import client, error_of
from tessera_server import ACCESS_KEY, REGION, SECRET_KEY, ServerTestCase, unique_bucket

DAY = 86400
# A pass every second; the wait for one bounded for a loaded CI machine.
PASS_BOUND_S = 60

CLOCK = os.path.join(tempfile.mkdtemp(prefix="tessera-lc-clock-"), "offset")


def rule(rid, **parts):
    r = {"ID": rid, "Status": "Enabled", "Filter": parts.pop("Filter", {"Prefix": ""})}
    r.update(parts)
    return r


class Lifecycle(ServerTestCase):
    server_env = {
        "TESSERA_LIFECYCLE_INTERVAL": "1s",
        "TESSERA_LIFECYCLE_RATE": "0",
        "TESSERA_TEST_LIFECYCLE_CLOCK_FILE": CLOCK,
        "TESSERA_PROMETHEUS_AUTH_TYPE": "public",
    }

    def setUp(self):
        super().setUp()
        self.advance(0)
        self.s3 = client(self.endpoint)
        self.bucket = unique_bucket("lc")

    def advance(self, seconds):
        with open(CLOCK, "w") as f:
            f.write(str(seconds))

    def versioned(self, lock=False):
        if lock:
            self.s3.create_bucket(Bucket=self.bucket, ObjectLockEnabledForBucket=True)
        else:
            self.s3.create_bucket(Bucket=self.bucket)
            self.s3.put_bucket_versioning(Bucket=self.bucket, VersioningConfiguration={"Status": "Enabled"})

    def configure(self, *rules):
        self.s3.put_bucket_lifecycle_configuration(Bucket=self.bucket, LifecycleConfiguration={"Rules": list(rules)})

    def versions(self):
        r = self.s3.list_object_versions(Bucket=self.bucket)
        out = [(v["Key"], "v", v["IsLatest"]) for v in r.get("Versions", [])]
        out += [(m["Key"], "dm", m["IsLatest"]) for m in r.get("DeleteMarkers", [])]
        return sorted(out)

    def wait_for(self, what, predicate):
        deadline = time.monotonic() + PASS_BOUND_S
        while True:
            got = predicate()
            if got:
                return got
            if time.monotonic() > deadline:
                self.fail(f"{what}: not within {PASS_BOUND_S} s; versions {self.versions()}\n{self.server.log_tail(20)}")
            time.sleep(0.3)

    def metric(self, action):
        with urllib.request.urlopen(f"{self.endpoint}/minio/v2/metrics/cluster", timeout=10) as r:
            text = r.read().decode()
        for line in text.splitlines():
            if line.startswith(f'tessera_lifecycle_actions_total{{action="{action}"}}'):
                return int(float(line.split()[-1]))
        return 0

    def test_configuration_round_trip_and_validation(self):
        self.s3.create_bucket(Bucket=self.bucket)
        with self.assertRaises(ClientError) as c:
            self.s3.get_bucket_lifecycle_configuration(Bucket=self.bucket)
        self.assertEqual(error_of(c), ("NoSuchLifecycleConfiguration", 404))
        rules = [
            rule("logs", Filter={"Prefix": "logs/"}, Expiration={"Days": 7}),
            rule("tmp", Filter={"And": {"Prefix": "tmp/", "Tags": [{"Key": "k", "Value": "v"}],
                                        "ObjectSizeGreaterThan": 10}},
                 Expiration={"Date": datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)}),
            rule("old", NoncurrentVersionExpiration={"NoncurrentDays": 3, "NewerNoncurrentVersions": 2}),
            rule("mpu", AbortIncompleteMultipartUpload={"DaysAfterInitiation": 1}),
            rule("cold", Transitions=[{"Days": 30, "StorageClass": "GLACIER"}]),
        ]
        self.configure(*rules)
        got = self.s3.get_bucket_lifecycle_configuration(Bucket=self.bucket)["Rules"]
        self.assertEqual([r["ID"] for r in got], ["logs", "tmp", "old", "mpu", "cold"])
        self.assertEqual(got[0]["Expiration"], {"Days": 7})
        self.assertEqual(got[2]["NoncurrentVersionExpiration"], {"NoncurrentDays": 3, "NewerNoncurrentVersions": 2})
        self.assertEqual(got[4]["Transitions"][0]["StorageClass"], "GLACIER")
        # A rule without an ID is given one.
        self.configure({"Status": "Enabled", "Filter": {}, "Expiration": {"Days": 1}})
        got = self.s3.get_bucket_lifecycle_configuration(Bucket=self.bucket)["Rules"]
        self.assertTrue(got[0]["ID"])
        bad = [
            [rule("x", Expiration={"Days": 0})],
            [rule("x", Expiration={"Days": 1}), rule("x", Expiration={"Days": 2})],
            [rule("x")],
            [rule("x", Filter={"Tag": {"Key": "k", "Value": "v"}},
                  AbortIncompleteMultipartUpload={"DaysAfterInitiation": 1})],
            [rule(f"r{i}", Expiration={"Days": 1}) for i in range(1001)],
        ]
        for rules in bad:
            with self.assertRaises(ClientError, msg=str(rules)[:100]) as c:
                self.configure(*rules)
            self.assertEqual(c.exception.response["ResponseMetadata"]["HTTPStatusCode"], 400, str(rules)[:100])
        self.s3.delete_bucket_lifecycle(Bucket=self.bucket)
        with self.assertRaises(ClientError) as c:
            self.s3.get_bucket_lifecycle_configuration(Bucket=self.bucket)
        self.assertEqual(error_of(c), ("NoSuchLifecycleConfiguration", 404))

    def test_aws_cli_puts_and_gets(self):
        self.s3.create_bucket(Bucket=self.bucket)
        home = tempfile.mkdtemp(prefix="tessera-lc-aws-")
        doc = os.path.join(home, "lc.json")
        with open(doc, "w") as f:
            json.dump({"Rules": [rule("cli", Filter={"Prefix": "a/"}, Expiration={"Days": 5},
                                      Transitions=[{"Days": 1, "StorageClass": "STANDARD_IA"}])]}, f)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update({"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                    "AWS_DEFAULT_REGION": REGION, "AWS_CONFIG_FILE": os.path.join(home, "none"),
                    "AWS_EC2_METADATA_DISABLED": "true", "HOME": home})

        def aws(*args):
            done = subprocess.run([sys.executable, "-m", "awscli", *args, "--endpoint-url", self.endpoint],
                                  env=env, capture_output=True, text=True, timeout=120)
            self.assertEqual(done.returncode, 0, done.stderr)
            return done.stdout

        aws("s3api", "put-bucket-lifecycle-configuration", "--bucket", self.bucket,
            "--lifecycle-configuration", f"file://{doc}")
        got = json.loads(aws("s3api", "get-bucket-lifecycle-configuration", "--bucket", self.bucket))
        self.assertEqual(got["Rules"][0]["ID"], "cli")
        self.assertEqual(got["Rules"][0]["Expiration"], {"Days": 5})
        self.assertEqual(got["Rules"][0]["Transitions"], [{"Days": 1, "StorageClass": "STANDARD_IA"}])

    def test_expiration_header(self):
        self.s3.create_bucket(Bucket=self.bucket)
        self.configure(rule("week", Filter={"Prefix": "logs/"}, Expiration={"Days": 7}))
        put = self.s3.put_object(Bucket=self.bucket, Key="logs/a", Body=b"a")
        head = self.s3.head_object(Bucket=self.bucket, Key="logs/a")
        get = self.s3.get_object(Bucket=self.bucket, Key="logs/a")
        modified = head["LastModified"]
        due = (modified + datetime.timedelta(days=8)).strftime("%a, %d %b %Y 00:00:00 GMT")
        want = f'expiry-date="{due}", rule-id="week"'
        for r in (put, head, get):
            self.assertEqual(r["Expiration"], want)
        # A copy and a completed multipart upload are told too.
        copy = self.s3.copy_object(Bucket=self.bucket, Key="logs/b", CopySource={"Bucket": self.bucket, "Key": "logs/a"})
        self.assertIn('rule-id="week"', copy["Expiration"])
        up = self.s3.create_multipart_upload(Bucket=self.bucket, Key="logs/mp")["UploadId"]
        e = self.s3.upload_part(Bucket=self.bucket, Key="logs/mp", UploadId=up, PartNumber=1, Body=b"p")["ETag"]
        done = self.s3.complete_multipart_upload(Bucket=self.bucket, Key="logs/mp", UploadId=up,
                                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
        self.assertIn('rule-id="week"', done["Expiration"])
        self.s3.put_object(Bucket=self.bucket, Key="other", Body=b"o")
        self.assertNotIn("Expiration", self.s3.head_object(Bucket=self.bucket, Key="other"))

    def test_current_versions_expire_in_an_unversioned_bucket(self):
        self.s3.create_bucket(Bucket=self.bucket)
        for k in ("logs/a", "logs/b", "keep/c"):
            self.s3.put_object(Bucket=self.bucket, Key=k, Body=k.encode())
        self.configure(rule("logs", Filter={"Prefix": "logs/"}, Expiration={"Days": 2}))
        time.sleep(2)
        self.assertEqual(len(self.versions()), 3, "nothing is due yet")
        self.advance(3 * DAY)
        self.wait_for("logs/ expired", lambda: self.versions() == [("keep/c", "v", True)])

    def test_versioned_expiry_noncurrent_and_delete_markers(self):
        self.versioned()
        for body in (b"1", b"2", b"3", b"4"):
            self.s3.put_object(Bucket=self.bucket, Key="doc", Body=body)
        self.s3.put_object(Bucket=self.bucket, Key="gone", Body=b"g")
        self.s3.delete_object(Bucket=self.bucket, Key="gone")
        self.s3.delete_object(Bucket=self.bucket, Key="gone", VersionId=self.s3.list_object_versions(
            Bucket=self.bucket, Prefix="gone")["Versions"][0]["VersionId"])
        # "gone" is now a lone delete marker.
        self.configure(
            rule("keep-two", NoncurrentVersionExpiration={"NoncurrentDays": 1, "NewerNoncurrentVersions": 2}),
            rule("markers", Expiration={"ExpiredObjectDeleteMarker": True}),
        )
        self.wait_for("the lone delete marker removed", lambda: all(k != "gone" for k, _, _ in self.versions()))
        self.assertEqual(len([v for v in self.versions() if v[0] == "doc"]), 4, "noncurrent not due yet")
        self.advance(2 * DAY)
        self.wait_for("noncurrent beyond two removed", lambda: len(self.versions()) == 3)
        bodies = [self.s3.get_object(Bucket=self.bucket, Key="doc", VersionId=v["VersionId"])["Body"].read()
                  for v in self.s3.list_object_versions(Bucket=self.bucket)["Versions"]]
        self.assertEqual(bodies, [b"4", b"3", b"2"])
        # The current version expires into a delete marker.
        self.configure(rule("expire", Expiration={"Days": 1}))
        self.advance(3 * DAY)
        self.wait_for("a delete marker on doc", lambda: ("doc", "dm", True) in self.versions())
        self.assertGreater(self.metric("expired_current"), 0)
        self.assertGreater(self.metric("expired_noncurrent"), 0)
        self.assertGreater(self.metric("delete_markers_removed"), 0)

    def test_incomplete_uploads_are_aborted(self):
        self.s3.create_bucket(Bucket=self.bucket)
        old = self.s3.create_multipart_upload(Bucket=self.bucket, Key="up/a")["UploadId"]
        self.s3.upload_part(Bucket=self.bucket, Key="up/a", UploadId=old, PartNumber=1, Body=b"p")
        self.s3.create_multipart_upload(Bucket=self.bucket, Key="other/b")
        self.configure(rule("mpu", Filter={"Prefix": "up/"}, AbortIncompleteMultipartUpload={"DaysAfterInitiation": 1}))
        self.advance(2 * DAY)
        self.wait_for("up/a aborted", lambda: [u["Key"] for u in self.s3.list_multipart_uploads(
            Bucket=self.bucket).get("Uploads", [])] == ["other/b"])
        self.assertGreater(self.metric("uploads_aborted"), 0)

    def test_locked_versions_are_never_removed(self):
        self.versioned(lock=True)
        until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=30)
        for body in (b"old", b"new"):
            self.s3.put_object(Bucket=self.bucket, Key="k", Body=body,
                               ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until)
        self.s3.put_object(Bucket=self.bucket, Key="free", Body=b"a")
        self.s3.put_object(Bucket=self.bucket, Key="free", Body=b"b")
        self.configure(rule("all", NoncurrentVersionExpiration={"NoncurrentDays": 1}))
        self.advance(5 * DAY)
        self.wait_for("free's old version removed",
                      lambda: len([v for v in self.versions() if v[0] == "free"]) == 1)
        self.wait_for("the locked version counted as kept", lambda: self.metric("kept_locked") > 0)
        self.assertEqual(len([v for v in self.versions() if v[0] == "k"]), 2)


if __name__ == "__main__":
    unittest.main()
