"""Object lock (WORM) through boto3 against a real `tessera server`:
lock-enabled buckets, default retention, per-version retention and legal
hold, and what they forbid, for root and for an IAM user made with `mc`.

Codes and statuses are AWS S3's: removing a protected version is 403
AccessDenied; object lock asked of a bucket created without it is 400
InvalidRequest (object calls) or 409 InvalidBucketState (configuration);
no lock configuration is 404 ObjectLockConfigurationNotFoundError.
"""

import datetime
import time
import unittest

from botocore.exceptions import ClientError

import test_iam
from s3util import error_of, raw_request
from test_post import post
from tessera_server import unique_bucket


def utc(seconds_from_now):
    return datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds_from_now)


class LockCase(test_iam.IamCase):
    def locked_bucket(self, default=None):
        b = unique_bucket("lock")
        self.root.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
        if default:
            mode, days = default
            self.root.put_object_lock_configuration(
                Bucket=b,
                ObjectLockConfiguration={
                    "ObjectLockEnabled": "Enabled",
                    "Rule": {"DefaultRetention": {"Mode": mode, "Days": days}},
                },
            )
        return b

    def refused(self, code, status, call, **kwargs):
        with self.assertRaises(ClientError) as c:
            call(**kwargs)
        self.assertEqual(error_of(c), (code, status))


class BucketLock(LockCase):
    def test_lock_enabled_bucket_is_versioned_for_good(self):
        b = self.locked_bucket()
        self.assertEqual(self.root.get_bucket_versioning(Bucket=b)["Status"], "Enabled")
        cfg = self.root.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]
        self.assertEqual(cfg, {"ObjectLockEnabled": "Enabled"})
        self.refused(
            "InvalidBucketState", 409, self.root.put_bucket_versioning,
            Bucket=b, VersioningConfiguration={"Status": "Suspended"},
        )
        self.assertEqual(self.root.get_bucket_versioning(Bucket=b)["Status"], "Enabled")

    def test_default_retention_applies_to_new_versions(self):
        b = self.locked_bucket(("GOVERNANCE", 2))
        cfg = self.root.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]
        self.assertEqual(cfg["Rule"]["DefaultRetention"], {"Mode": "GOVERNANCE", "Days": 2})
        before = utc(0)
        v = self.root.put_object(Bucket=b, Key="k", Body=b"data")["VersionId"]
        h = self.root.head_object(Bucket=b, Key="k", VersionId=v)
        self.assertEqual(h["ObjectLockMode"], "GOVERNANCE")
        until = h["ObjectLockRetainUntilDate"]
        self.assertGreaterEqual(until, before + datetime.timedelta(days=2) - datetime.timedelta(seconds=1))
        self.assertLessEqual(until, utc(2 * 86400 + 5))
        r = self.root.get_object_retention(Bucket=b, Key="k", VersionId=v)["Retention"]
        self.assertEqual(r["Mode"], "GOVERNANCE")
        self.assertEqual(r["RetainUntilDate"], until)
        # An explicit retention wins over the default; years count too.
        self.root.put_object_lock_configuration(
            Bucket=b,
            ObjectLockConfiguration={
                "ObjectLockEnabled": "Enabled",
                "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Years": 1}},
            },
        )
        v2 = self.root.put_object(
            Bucket=b, Key="k2", Body=b"x",
            ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=utc(3600),
        )["VersionId"]
        self.assertEqual(self.root.head_object(Bucket=b, Key="k2", VersionId=v2)["ObjectLockMode"], "GOVERNANCE")
        v3 = self.root.put_object(Bucket=b, Key="k3", Body=b"x")["VersionId"]
        h3 = self.root.head_object(Bucket=b, Key="k3", VersionId=v3)
        self.assertEqual(h3["ObjectLockMode"], "COMPLIANCE")
        self.assertGreater(h3["ObjectLockRetainUntilDate"], utc(364 * 86400))
        # Removing the rule stops the default.
        self.root.put_object_lock_configuration(
            Bucket=b, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"},
        )
        v4 = self.root.put_object(Bucket=b, Key="k4", Body=b"x")["VersionId"]
        self.assertNotIn("ObjectLockMode", self.root.head_object(Bucket=b, Key="k4", VersionId=v4))

    def test_lock_refused_on_buckets_created_without_it(self):
        b = unique_bucket("nolock")
        self.root.create_bucket(Bucket=b)
        self.refused("ObjectLockConfigurationNotFoundError", 404, self.root.get_object_lock_configuration, Bucket=b)
        self.refused(
            "InvalidBucketState", 409, self.root.put_object_lock_configuration,
            Bucket=b, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"},
        )
        self.refused(
            "InvalidRequest", 400, self.root.put_object,
            Bucket=b, Key="k", Body=b"x", ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=utc(60),
        )
        self.refused(
            "InvalidRequest", 400, self.root.put_object,
            Bucket=b, Key="k", Body=b"x", ObjectLockLegalHoldStatus="ON",
        )
        self.root.put_object(Bucket=b, Key="k", Body=b"x")
        self.refused(
            "InvalidRequest", 400, self.root.put_object_legal_hold,
            Bucket=b, Key="k", LegalHold={"Status": "ON"},
        )
        self.refused(
            "InvalidRequest", 400, self.root.get_object_retention, Bucket=b, Key="k",
        )

    def test_configuration_validation(self):
        b = self.locked_bucket()
        for days, years in ((0, None), (36501, None), (None, 0), (None, 101)):
            rule = {"Mode": "GOVERNANCE"}
            if days is not None:
                rule["Days"] = days
            if years is not None:
                rule["Years"] = years
            self.refused(
                "InvalidRetentionPeriod", 400, self.root.put_object_lock_configuration,
                Bucket=b, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": rule}},
            )
        bad = [
            b"<ObjectLockConfiguration><ObjectLockEnabled>Disabled</ObjectLockEnabled></ObjectLockConfiguration>",
            b"<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention>"
            b"<Mode>GOVERNANCE</Mode><Days>1</Days><Years>1</Years></DefaultRetention></Rule></ObjectLockConfiguration>",
            b"<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention>"
            b"<Mode>FOREVER</Mode><Days>1</Days></DefaultRetention></Rule></ObjectLockConfiguration>",
            b"<NotLock/>",
        ]
        import base64
        import hashlib
        for doc in bad:
            md5 = base64.b64encode(hashlib.md5(doc).digest()).decode()
            r = raw_request(self.endpoint, "PUT", f"/{b}", "object-lock=", body=doc, headers={"Content-MD5": md5})
            self.assertEqual(r.status, 400, (doc, r.body))
            self.assertIn(b"<Code>MalformedXML</Code>", r.body)
        # Without Content-MD5 or a checksum the call is refused, as S3 does.
        good = b"<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>"
        r = raw_request(self.endpoint, "PUT", f"/{b}", "object-lock=", body=good)
        self.assertEqual(r.status, 400, r.body)
        self.assertIn(b"<Code>MissingContentMD5</Code>", r.body)


class VersionLock(LockCase):
    def test_compliance_holds_against_root(self):
        b = self.locked_bucket()
        until = utc(3600).replace(microsecond=0)
        v = self.root.put_object(
            Bucket=b, Key="c", Body=b"keep me",
            ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until,
        )["VersionId"]
        self.refused("AccessDenied", 403, self.root.delete_object, Bucket=b, Key="c", VersionId=v)
        self.refused(
            "AccessDenied", 403, self.root.delete_object,
            Bucket=b, Key="c", VersionId=v, BypassGovernanceRetention=True,
        )
        # Shortening, weakening or removing the retention is refused.
        self.refused(
            "AccessDenied", 403, self.root.put_object_retention,
            Bucket=b, Key="c", VersionId=v, Retention={"Mode": "COMPLIANCE", "RetainUntilDate": utc(1800)},
        )
        self.refused(
            "AccessDenied", 403, self.root.put_object_retention,
            Bucket=b, Key="c", VersionId=v, Retention={"Mode": "GOVERNANCE", "RetainUntilDate": utc(7200)},
            BypassGovernanceRetention=True,
        )
        # Extending is allowed.
        later = utc(7200).replace(microsecond=0)
        self.root.put_object_retention(
            Bucket=b, Key="c", VersionId=v, Retention={"Mode": "COMPLIANCE", "RetainUntilDate": later},
        )
        got = self.root.get_object_retention(Bucket=b, Key="c", VersionId=v)["Retention"]
        self.assertEqual(got["RetainUntilDate"], later)
        # Deleting without a version id adds a delete marker; the version stays.
        d = self.root.delete_object(Bucket=b, Key="c")
        self.assertTrue(d["DeleteMarker"])
        self.assertEqual(self.root.get_object(Bucket=b, Key="c", VersionId=v)["Body"].read(), b"keep me")
        # The delete marker itself is not protected.
        self.root.delete_object(Bucket=b, Key="c", VersionId=d["VersionId"])
        self.assertEqual(self.root.get_object(Bucket=b, Key="c")["Body"].read(), b"keep me")
        # Multi-delete refuses the locked version too.
        r = self.root.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "c", "VersionId": v}]})
        self.assertEqual([e["Code"] for e in r.get("Errors", [])], ["AccessDenied"])
        self.assertEqual(self.root.get_object(Bucket=b, Key="c", VersionId=v)["Body"].read(), b"keep me")

    def test_governance_bypass_needs_header_and_permission(self):
        b = self.locked_bucket(("GOVERNANCE", 1))
        v = self.root.put_object(Bucket=b, Key="g", Body=b"g")["VersionId"]
        self.refused("AccessDenied", 403, self.root.delete_object, Bucket=b, Key="g", VersionId=v)
        # Shortening without bypass is refused; extending is fine.
        self.refused(
            "AccessDenied", 403, self.root.put_object_retention,
            Bucket=b, Key="g", VersionId=v, Retention={"Mode": "GOVERNANCE", "RetainUntilDate": utc(60)},
        )
        # A user allowed everything but the bypass cannot use it.
        self.policy("lock-no-bypass", {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": ["s3:*"], "Resource": [f"arn:aws:s3:::{b}", f"arn:aws:s3:::{b}/*"]},
                          {"Effect": "Deny", "Action": ["s3:BypassGovernanceRetention"], "Resource": [f"arn:aws:s3:::{b}/*"]}],
        })
        user = self.user("locknobypass", "locknobypass-secret", "lock-no-bypass")
        self.refused(
            "AccessDenied", 403, user.delete_object, Bucket=b, Key="g", VersionId=v, BypassGovernanceRetention=True,
        )
        self.refused(
            "AccessDenied", 403, user.put_object_retention,
            Bucket=b, Key="g", VersionId=v, BypassGovernanceRetention=True,
            Retention={"Mode": "GOVERNANCE", "RetainUntilDate": utc(60)},
        )
        # Root (allowed everything) bypasses: shortening, then deleting.
        self.root.put_object_retention(
            Bucket=b, Key="g", VersionId=v, BypassGovernanceRetention=True,
            Retention={"Mode": "GOVERNANCE", "RetainUntilDate": utc(120)},
        )
        self.root.delete_object(Bucket=b, Key="g", VersionId=v, BypassGovernanceRetention=True)
        self.refused("NoSuchVersion", 404, self.root.get_object, Bucket=b, Key="g", VersionId=v)

    def test_legal_hold(self):
        b = self.locked_bucket()
        v = self.root.put_object(Bucket=b, Key="h", Body=b"h", ObjectLockLegalHoldStatus="ON")["VersionId"]
        self.assertEqual(self.root.head_object(Bucket=b, Key="h", VersionId=v)["ObjectLockLegalHoldStatus"], "ON")
        self.assertEqual(self.root.get_object_legal_hold(Bucket=b, Key="h", VersionId=v)["LegalHold"]["Status"], "ON")
        self.refused(
            "AccessDenied", 403, self.root.delete_object, Bucket=b, Key="h", VersionId=v, BypassGovernanceRetention=True,
        )
        self.root.put_object_legal_hold(Bucket=b, Key="h", VersionId=v, LegalHold={"Status": "OFF"})
        self.assertEqual(self.root.get_object_legal_hold(Bucket=b, Key="h", VersionId=v)["LegalHold"]["Status"], "OFF")
        self.root.delete_object(Bucket=b, Key="h", VersionId=v)
        # A version never given a hold has none to report.
        v2 = self.root.put_object(Bucket=b, Key="h2", Body=b"h")["VersionId"]
        self.refused("NoSuchObjectLockConfiguration", 404, self.root.get_object_legal_hold, Bucket=b, Key="h2", VersionId=v2)
        self.refused("NoSuchObjectLockConfiguration", 404, self.root.get_object_retention, Bucket=b, Key="h2", VersionId=v2)

    def test_retention_expires(self):
        b = self.locked_bucket()
        v = self.root.put_object(
            Bucket=b, Key="e", Body=b"e", ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=utc(3),
        )["VersionId"]
        self.refused("AccessDenied", 403, self.root.delete_object, Bucket=b, Key="e", VersionId=v)
        time.sleep(4)
        self.root.delete_object(Bucket=b, Key="e", VersionId=v)

    def test_bad_retention_requests(self):
        b = self.locked_bucket()
        self.refused(
            "InvalidRequest", 400, self.root.put_object,
            Bucket=b, Key="p", Body=b"p", ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=utc(-60),
        )
        r = raw_request(self.endpoint, "PUT", f"/{b}/p", body=b"p",
                        headers={"x-amz-object-lock-mode": "GOVERNANCE"})
        self.assertEqual(r.status, 400)
        self.assertIn(b"must both be supplied", r.body)
        r = raw_request(self.endpoint, "PUT", f"/{b}/p", body=b"p",
                        headers={"x-amz-object-lock-mode": "FOREVER",
                                 "x-amz-object-lock-retain-until-date": "2999-01-01T00:00:00Z"})
        self.assertEqual(r.status, 400)
        r = raw_request(self.endpoint, "PUT", f"/{b}/p", body=b"p",
                        headers={"x-amz-object-lock-mode": "GOVERNANCE",
                                 "x-amz-object-lock-retain-until-date": "next tuesday"})
        self.assertEqual(r.status, 400)
        self.assertIn(b"ISO 8601", r.body)

    def test_copy_and_multipart_take_their_own_lock(self):
        b = self.locked_bucket(("GOVERNANCE", 1))
        src = self.root.put_object(
            Bucket=b, Key="src", Body=b"s" * 100, ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=utc(3600),
            ObjectLockLegalHoldStatus="ON",
        )["VersionId"]
        c = self.root.copy_object(Bucket=b, Key="dst", CopySource={"Bucket": b, "Key": "src", "VersionId": src})
        h = self.root.head_object(Bucket=b, Key="dst", VersionId=c["VersionId"])
        self.assertEqual(h["ObjectLockMode"], "GOVERNANCE")
        self.assertNotIn("ObjectLockLegalHoldStatus", h)
        up = self.root.create_multipart_upload(
            Bucket=b, Key="mp", ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=utc(3600),
        )["UploadId"]
        e = self.root.upload_part(Bucket=b, Key="mp", UploadId=up, PartNumber=1, Body=b"m" * 10)["ETag"]
        done = self.root.complete_multipart_upload(
            Bucket=b, Key="mp", UploadId=up, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]},
        )
        self.assertEqual(self.root.head_object(Bucket=b, Key="mp", VersionId=done["VersionId"])["ObjectLockMode"], "COMPLIANCE")
        self.refused("AccessDenied", 403, self.root.delete_object, Bucket=b, Key="mp", VersionId=done["VersionId"])

    def test_mc_lock_legalhold_and_ilm(self):
        """What MinIO users type: mc mb --with-lock, mc retention, mc
        legalhold, mc rm of a protected version, mc ilm rule."""
        b = unique_bucket("mclock")
        self.mc("mb", "--with-lock", f"t/{b}")
        self.mc("retention", "set", "--default", "COMPLIANCE", "2d", f"t/{b}")
        self.assertIn(b"COMPLIANCE", self.mc("retention", "info", "--default", f"t/{b}"))
        v = self.root.put_object(Bucket=b, Key="obj", Body=b"mc")["VersionId"]
        self.assertIn(b"COMPLIANCE", self.mc("retention", "info", f"t/{b}/obj"))
        self.mc("legalhold", "set", f"t/{b}/obj")
        self.assertEqual(self.root.get_object_legal_hold(Bucket=b, Key="obj", VersionId=v)["LegalHold"]["Status"], "ON")
        done = self.run_mc("rm", "--version-id", v, f"t/{b}/obj")
        self.assertNotEqual(done.returncode, 0)
        self.assertIn(b"protected by object lock", done.stdout + done.stderr)
        self.assertEqual(self.root.get_object(Bucket=b, Key="obj", VersionId=v)["Body"].read(), b"mc")
        self.mc("ilm", "rule", "add", "--expire-days", "3", "--prefix", "logs/", f"t/{b}")
        rules = self.root.get_bucket_lifecycle_configuration(Bucket=b)["Rules"]
        self.assertEqual([(r["Filter"].get("Prefix"), r["Expiration"]) for r in rules], [("logs/", {"Days": 3})])
        self.mc("ilm", "rule", "rm", "--all", "--force", f"t/{b}")
        with self.assertRaises(ClientError):
            self.root.get_bucket_lifecycle_configuration(Bucket=b)

    def test_browser_upload_fields(self):
        b = self.locked_bucket()
        until = utc(3600).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        fields = {"x-amz-object-lock-mode": "COMPLIANCE", "x-amz-object-lock-retain-until-date": until,
                  "x-amz-object-lock-legal-hold": "ON"}
        p = self.root.generate_presigned_post(b, "posted", Fields=fields,
                                              Conditions=[{k: v} for k, v in fields.items()])
        status, _, body = post(self.endpoint, b, list(p["fields"].items()), b"from a form")
        self.assertEqual(status, 204, body)
        h = self.root.head_object(Bucket=b, Key="posted")
        self.assertEqual(h["ObjectLockMode"], "COMPLIANCE")
        self.assertEqual(h["ObjectLockRetainUntilDate"].strftime("%Y-%m-%dT%H:%M:%S.000Z"), until)
        self.assertEqual(h["ObjectLockLegalHoldStatus"], "ON")
        self.refused("AccessDenied", 403, self.root.delete_object, Bucket=b, Key="posted", VersionId=h["VersionId"])


if __name__ == "__main__":
    unittest.main()
