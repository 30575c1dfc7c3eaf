"""Bucket quotas through the real `mc quota` and boto3 against a real
`tessera server`: MinIO's hard quota (all versions count), refused writes
answered as MinIO answers them (400 XMinioAdminBucketQuotaExceeded), on
PUT, copy, multipart part upload and completion, and under concurrent
writers the quota is never passed.
"""

import concurrent.futures
import json
import unittest

from botocore.exceptions import ClientError

from s3util import client, error_of, raw_request
from tessera_server import unique_bucket
from test_mc import McCase

KIB = 1024
MIB = 1024 * 1024


class Quota(McCase):
    alias_options = ("--path", "on")

    def setUp(self):
        super().setUp()
        self.s3 = client(self.endpoint)
        self.bucket = unique_bucket("quota")
        self.s3.create_bucket(Bucket=self.bucket)

    def exceeded(self, call, **kwargs):
        with self.assertRaises(ClientError) as c:
            call(**kwargs)
        self.assertEqual(error_of(c), ("XMinioAdminBucketQuotaExceeded", 400))

    def set_quota(self, size):
        self.mc("quota", "set", f"t/{self.bucket}", "--size", str(size))

    def test_set_info_clear_with_mc(self):
        info = self.run_mc("quota", "info", f"t/{self.bucket}", "--json")
        self.assertNotEqual(info.returncode, 0, info.stdout)
        self.set_quota(3 * MIB)
        got = json.loads(self.mc("quota", "info", f"t/{self.bucket}", "--json"))
        self.assertEqual(got["quota"], 3 * MIB)
        self.assertEqual(got["type"], "hard")
        self.mc("quota", "clear", f"t/{self.bucket}")
        info = self.run_mc("quota", "info", f"t/{self.bucket}", "--json")
        self.assertNotEqual(info.returncode, 0, info.stdout)
        # No quota: any size goes.
        self.s3.put_object(Bucket=self.bucket, Key="big", Body=b"b" * (4 * MIB))
        missing = self.run_mc("quota", "set", "t/no-such-bucket-q", "--size", "1MiB")
        self.assertNotEqual(missing.returncode, 0)
        # Documents MinIO refuses are refused: not JSON, a negative size, a
        # quota type MinIO removed.
        for doc in (b"{not json", b'{"size":-1,"quotatype":"hard"}', b'{"size":10,"quotatype":"fifo"}'):
            r = raw_request(self.endpoint, "PUT", "/minio/admin/v3/set-bucket-quota", f"bucket={self.bucket}", body=doc)
            self.assertEqual(r.status, 400, (doc, r.body))
        info = self.run_mc("quota", "info", f"t/{self.bucket}", "--json")
        self.assertNotEqual(info.returncode, 0, info.stdout)

    def test_puts_stop_at_the_quota_and_deletes_free_space(self):
        self.set_quota(1 * MIB)
        self.exceeded(self.s3.put_object, Bucket=self.bucket, Key="too-big", Body=b"x" * MIB)
        for i in range(3):
            self.s3.put_object(Bucket=self.bucket, Key=f"o{i}", Body=b"x" * (300 * KIB))
        self.exceeded(self.s3.put_object, Bucket=self.bucket, Key="o3", Body=b"x" * (300 * KIB))
        self.s3.put_object(Bucket=self.bucket, Key="small", Body=b"x" * (100 * KIB))
        self.exceeded(self.s3.copy_object, Bucket=self.bucket, Key="copy", CopySource={"Bucket": self.bucket, "Key": "o0"})
        for i in range(3):
            self.s3.delete_object(Bucket=self.bucket, Key=f"o{i}")
        # The freed space is counted again (within the documented recount delay).
        self.s3.put_object(Bucket=self.bucket, Key="after", Body=b"x" * (300 * KIB))

    def test_versions_count(self):
        self.s3.put_bucket_versioning(Bucket=self.bucket, VersioningConfiguration={"Status": "Enabled"})
        self.set_quota(1 * MIB)
        for _ in range(3):
            self.s3.put_object(Bucket=self.bucket, Key="same", Body=b"v" * (300 * KIB))
        self.exceeded(self.s3.put_object, Bucket=self.bucket, Key="same", Body=b"v" * (300 * KIB))

    def test_quota_reached_mid_multipart(self):
        up = self.s3.create_multipart_upload(Bucket=self.bucket, Key="mp")["UploadId"]
        parts = []
        for n in (1, 2):
            e = self.s3.upload_part(Bucket=self.bucket, Key="mp", UploadId=up, PartNumber=n, Body=b"p" * (5 * MIB))["ETag"]
            parts.append({"PartNumber": n, "ETag": e})
        self.set_quota(8 * MIB)
        self.exceeded(self.s3.upload_part, Bucket=self.bucket, Key="mp", UploadId=up, PartNumber=3, Body=b"p" * (8 * MIB))
        self.exceeded(
            self.s3.complete_multipart_upload,
            Bucket=self.bucket, Key="mp", UploadId=up, MultipartUpload={"Parts": parts},
        )
        # One part fits.
        done = self.s3.complete_multipart_upload(
            Bucket=self.bucket, Key="mp", UploadId=up, MultipartUpload={"Parts": parts[:1]},
        )
        self.assertEqual(self.s3.head_object(Bucket=self.bucket, Key="mp")["ContentLength"], 5 * MIB)
        self.assertTrue(done["ETag"])

    def test_concurrent_writers_never_pass_the_quota(self):
        self.set_quota(2 * MIB)
        size = 200 * KIB

        def put(i):
            try:
                self.s3.put_object(Bucket=self.bucket, Key=f"c{i}", Body=b"c" * size)
                return True
            except ClientError as e:
                self.assertEqual(e.response["Error"]["Code"], "XMinioAdminBucketQuotaExceeded")
                return False

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            stored = sum(pool.map(put, range(24)))
        total = sum(o["Size"] for o in self.s3.list_objects_v2(Bucket=self.bucket).get("Contents", []))
        self.assertEqual(total, stored * size)
        self.assertLess(total, 2 * MIB)
        # Every write that could fit did: 10 of 200 KiB stay under 2 MiB.
        self.assertEqual(stored, 10)


if __name__ == "__main__":
    unittest.main()
