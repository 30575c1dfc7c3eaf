"""Writes as S3 clients send them today, through boto3 against a real
`tessera server`: conditional writes (If-None-Match: * and If-Match on
PutObject and CompleteMultipartUpload, and a race of conditional writers),
and a CompleteMultipartUpload retried after a success.

Codes and statuses are AWS S3's: a failed condition is 412
PreconditionFailed; If-Match on a key with no object is 404 NoSuchKey; a
key whose latest version is a delete marker counts as having no object.
"""

import concurrent.futures
import hashlib
import threading
import unittest

from botocore.exceptions import ClientError

from s3util import client, error_of, raw_request
from tessera_server import ServerTestCase, unique_bucket

MiB = 1024 * 1024
PART = 5 * MiB


class ConditionalWrites(ServerTestCase):
    def setUp(self):
        super().setUp()
        self.s3 = client(self.endpoint)
        self.bucket = unique_bucket("cond")
        self.s3.create_bucket(Bucket=self.bucket)

    def test_if_none_match_star_creates_only_once(self):
        first = self.s3.put_object(Bucket=self.bucket, Key="k", Body=b"one", IfNoneMatch="*")
        self.assertEqual(first["ETag"], '"%s"' % hashlib.md5(b"one").hexdigest())
        with self.assertRaises(ClientError) as c:
            self.s3.put_object(Bucket=self.bucket, Key="k", Body=b"two", IfNoneMatch="*")
        self.assertEqual(error_of(c), ("PreconditionFailed", 412))
        got = self.s3.get_object(Bucket=self.bucket, Key="k")["Body"].read()
        self.assertEqual(got, b"one")

    def test_if_none_match_star_on_a_large_streamed_body(self):
        body = b"x" * (3 * MiB)
        self.s3.put_object(Bucket=self.bucket, Key="big", Body=body, IfNoneMatch="*")
        with self.assertRaises(ClientError) as c:
            self.s3.put_object(Bucket=self.bucket, Key="big", Body=b"y" * (3 * MiB), IfNoneMatch="*")
        self.assertEqual(error_of(c), ("PreconditionFailed", 412))
        got = self.s3.get_object(Bucket=self.bucket, Key="big")["Body"].read()
        self.assertEqual(got, body)

    def test_delete_marker_counts_as_absent(self):
        b = unique_bucket("condv")
        self.s3.create_bucket(Bucket=b)
        self.s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
        self.s3.put_object(Bucket=b, Key="k", Body=b"old")
        self.s3.delete_object(Bucket=b, Key="k")
        self.s3.put_object(Bucket=b, Key="k", Body=b"new", IfNoneMatch="*")
        self.assertEqual(self.s3.get_object(Bucket=b, Key="k")["Body"].read(), b"new")

    def test_if_match(self):
        etag = self.s3.put_object(Bucket=self.bucket, Key="m", Body=b"v1")["ETag"]
        with self.assertRaises(ClientError) as c:
            self.s3.put_object(Bucket=self.bucket, Key="m", Body=b"v2",
                               IfMatch='"%s"' % hashlib.md5(b"other").hexdigest())
        self.assertEqual(error_of(c), ("PreconditionFailed", 412))
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="m")["Body"].read(), b"v1")
        self.s3.put_object(Bucket=self.bucket, Key="m", Body=b"v2", IfMatch=etag)
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="m")["Body"].read(), b"v2")
        # The ETag is now v2's: the old one no longer matches.
        with self.assertRaises(ClientError) as c:
            self.s3.put_object(Bucket=self.bucket, Key="m", Body=b"v3", IfMatch=etag)
        self.assertEqual(error_of(c), ("PreconditionFailed", 412))

    def test_if_match_on_missing_key_is_no_such_key(self):
        with self.assertRaises(ClientError) as c:
            self.s3.put_object(Bucket=self.bucket, Key="absent", Body=b"x", IfMatch='"abc"')
        self.assertEqual(error_of(c), ("NoSuchKey", 404))
        with self.assertRaises(ClientError):
            self.s3.head_object(Bucket=self.bucket, Key="absent")

    def _upload(self, key, parts=2):
        up = self.s3.create_multipart_upload(Bucket=self.bucket, Key=key)["UploadId"]
        listed = []
        for n in range(1, parts + 1):
            size = PART if n < parts else 1000
            r = self.s3.upload_part(Bucket=self.bucket, Key=key, UploadId=up, PartNumber=n,
                                    Body=bytes([n]) * size)
            listed.append({"PartNumber": n, "ETag": r["ETag"]})
        return up, listed

    def test_complete_if_none_match(self):
        up, parts = self._upload("mp")
        self.s3.complete_multipart_upload(Bucket=self.bucket, Key="mp", UploadId=up,
                                          MultipartUpload={"Parts": parts}, IfNoneMatch="*")
        up2, parts2 = self._upload("mp")
        with self.assertRaises(ClientError) as c:
            self.s3.complete_multipart_upload(Bucket=self.bucket, Key="mp", UploadId=up2,
                                              MultipartUpload={"Parts": parts2}, IfNoneMatch="*")
        self.assertEqual(error_of(c), ("PreconditionFailed", 412))
        # The failed condition leaves the upload in place, as S3 does.
        listed = self.s3.list_parts(Bucket=self.bucket, Key="mp", UploadId=up2)["Parts"]
        self.assertEqual(len(listed), 2)

    def test_complete_if_match(self):
        up, parts = self._upload("mm")
        with self.assertRaises(ClientError) as c:
            self.s3.complete_multipart_upload(Bucket=self.bucket, Key="mm", UploadId=up,
                                              MultipartUpload={"Parts": parts}, IfMatch='"abc"')
        self.assertEqual(error_of(c), ("NoSuchKey", 404))
        etag = self.s3.put_object(Bucket=self.bucket, Key="mm", Body=b"v1")["ETag"]
        with self.assertRaises(ClientError) as c:
            self.s3.complete_multipart_upload(Bucket=self.bucket, Key="mm", UploadId=up,
                                              MultipartUpload={"Parts": parts},
                                              IfMatch='"%s"' % hashlib.md5(b"no").hexdigest())
        self.assertEqual(error_of(c), ("PreconditionFailed", 412))
        done = self.s3.complete_multipart_upload(Bucket=self.bucket, Key="mm", UploadId=up,
                                                 MultipartUpload={"Parts": parts}, IfMatch=etag)
        self.assertTrue(done["ETag"].endswith('-2"'))

    def test_racing_conditional_writers_one_wins(self):
        """Many writers of one new key with If-None-Match: *, all released
        at once: exactly one gets 200, every other 412 (or 409
        ConditionalRequestConflict, which AWS may answer to a concurrent
        conflict), and the object is the winner's."""
        writers = 16
        barrier = threading.Barrier(writers)
        clients = [client(self.endpoint) for _ in range(writers)]

        def write(i):
            body = b"writer-%d-" % i + b"z" * (i * 70_000)
            barrier.wait()
            try:
                r = clients[i].put_object(Bucket=self.bucket, Key="race", Body=body, IfNoneMatch="*")
                return ("ok", r["ETag"], body)
            except ClientError as e:
                err = e.response["Error"].get("Code"), e.response["ResponseMetadata"]["HTTPStatusCode"]
                return ("err", err, None)

        with concurrent.futures.ThreadPoolExecutor(writers) as pool:
            results = list(pool.map(write, range(writers)))
        wins = [r for r in results if r[0] == "ok"]
        self.assertEqual(len(wins), 1, results)
        for r in results:
            if r[0] == "err":
                self.assertIn(r[1], [("PreconditionFailed", 412), ("ConditionalRequestConflict", 409)])
        got = self.s3.get_object(Bucket=self.bucket, Key="race")
        self.assertEqual(got["ETag"], wins[0][1])
        self.assertEqual(got["Body"].read(), wins[0][2])

    def test_racing_if_match_writers_one_wins(self):
        """Writers all holding the same current ETag: one replaces it, the
        others' condition no longer holds."""
        etag = self.s3.put_object(Bucket=self.bucket, Key="cas", Body=b"base")["ETag"]
        writers = 12
        barrier = threading.Barrier(writers)
        clients = [client(self.endpoint) for _ in range(writers)]

        def write(i):
            barrier.wait()
            try:
                clients[i].put_object(Bucket=self.bucket, Key="cas", Body=b"w%d" % i, IfMatch=etag)
                return "ok"
            except ClientError as e:
                return e.response["ResponseMetadata"]["HTTPStatusCode"]

        with concurrent.futures.ThreadPoolExecutor(writers) as pool:
            results = list(pool.map(write, range(writers)))
        self.assertEqual(results.count("ok"), 1, results)
        self.assertTrue(all(r in ("ok", 412, 409) for r in results), results)


class RetriedComplete(ServerTestCase):
    def setUp(self):
        super().setUp()
        self.s3 = client(self.endpoint)
        self.bucket = unique_bucket("retry")
        self.s3.create_bucket(Bucket=self.bucket)

    def _upload(self, key):
        up = self.s3.create_multipart_upload(Bucket=self.bucket, Key=key)["UploadId"]
        parts = []
        for n, size in ((1, PART), (2, 777)):
            r = self.s3.upload_part(Bucket=self.bucket, Key=key, UploadId=up, PartNumber=n,
                                    Body=bytes([n + 40]) * size)
            parts.append({"PartNumber": n, "ETag": r["ETag"]})
        return up, parts

    def test_repeated_complete_answers_the_same(self):
        up, parts = self._upload("k")
        first = self.s3.complete_multipart_upload(Bucket=self.bucket, Key="k", UploadId=up,
                                                  MultipartUpload={"Parts": parts})
        again = self.s3.complete_multipart_upload(Bucket=self.bucket, Key="k", UploadId=up,
                                                  MultipartUpload={"Parts": parts})
        for field in ("ETag", "Bucket", "Key", "Location"):
            self.assertEqual(first[field], again[field], field)
        self.assertEqual(self.s3.head_object(Bucket=self.bucket, Key="k")["ContentLength"], PART + 777)

    def test_repeated_complete_with_other_parts_is_no_such_upload(self):
        up, parts = self._upload("k2")
        self.s3.complete_multipart_upload(Bucket=self.bucket, Key="k2", UploadId=up,
                                          MultipartUpload={"Parts": parts})
        with self.assertRaises(ClientError) as c:
            self.s3.complete_multipart_upload(Bucket=self.bucket, Key="k2", UploadId=up,
                                              MultipartUpload={"Parts": parts[:1]})
        self.assertEqual(error_of(c), ("NoSuchUpload", 404))

    def test_repeated_complete_after_overwrite_is_no_such_upload(self):
        up, parts = self._upload("k3")
        self.s3.complete_multipart_upload(Bucket=self.bucket, Key="k3", UploadId=up,
                                          MultipartUpload={"Parts": parts})
        self.s3.put_object(Bucket=self.bucket, Key="k3", Body=b"newer")
        with self.assertRaises(ClientError) as c:
            self.s3.complete_multipart_upload(Bucket=self.bucket, Key="k3", UploadId=up,
                                              MultipartUpload={"Parts": parts})
        self.assertEqual(error_of(c), ("NoSuchUpload", 404))

    def test_repeated_complete_with_if_none_match_succeeds(self):
        up, parts = self._upload("k4")
        first = self.s3.complete_multipart_upload(Bucket=self.bucket, Key="k4", UploadId=up,
                                                  MultipartUpload={"Parts": parts}, IfNoneMatch="*")
        again = self.s3.complete_multipart_upload(Bucket=self.bucket, Key="k4", UploadId=up,
                                                  MultipartUpload={"Parts": parts}, IfNoneMatch="*")
        self.assertEqual(first["ETag"], again["ETag"])

    def test_unknown_upload_is_still_no_such_upload(self):
        self.s3.put_object(Bucket=self.bucket, Key="k5", Body=b"x")
        with self.assertRaises(ClientError) as c:
            self.s3.complete_multipart_upload(
                Bucket=self.bucket, Key="k5", UploadId="nosuchupload",
                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"%s"' % ("0" * 32)}]})
        self.assertEqual(error_of(c), ("NoSuchUpload", 404))


class PartsCountAndDelete(ServerTestCase):
    def setUp(self):
        super().setUp()
        self.s3 = client(self.endpoint)
        self.bucket = unique_bucket("pc")
        self.s3.create_bucket(Bucket=self.bucket)

    def _multipart(self, key, sizes):
        up = self.s3.create_multipart_upload(Bucket=self.bucket, Key=key)["UploadId"]
        parts = []
        for n, size in enumerate(sizes, 1):
            r = self.s3.upload_part(Bucket=self.bucket, Key=key, UploadId=up, PartNumber=n,
                                    Body=bytes([n]) * size)
            parts.append({"PartNumber": n, "ETag": r["ETag"]})
        self.s3.complete_multipart_upload(Bucket=self.bucket, Key=key, UploadId=up,
                                          MultipartUpload={"Parts": parts})

    def test_part_number_tells_the_parts_count(self):
        self._multipart("three", [PART, PART, 10])
        for n, size in ((1, PART), (3, 10)):
            head = self.s3.head_object(Bucket=self.bucket, Key="three", PartNumber=n)
            self.assertEqual(head["PartsCount"], 3)
            self.assertEqual(head["ContentLength"], size)
            got = self.s3.get_object(Bucket=self.bucket, Key="three", PartNumber=n)
            self.assertEqual(got["PartsCount"], 3)
            self.assertEqual(got["ResponseMetadata"]["HTTPStatusCode"], 206)
            self.assertEqual(got["Body"].read(), bytes([n]) * size)
        # Without partNumber S3 does not send the count.
        self.assertNotIn("PartsCount", self.s3.head_object(Bucket=self.bucket, Key="three"))

    def test_one_part_multipart_object_tells_its_count(self):
        """A multipart object of one part is still multipart: AWS answers
        206 with x-amz-mp-parts-count: 1 for its part 1."""
        self._multipart("one", [100])
        got = self.s3.get_object(Bucket=self.bucket, Key="one", PartNumber=1)
        self.assertEqual(got["PartsCount"], 1)
        self.assertEqual(got["ResponseMetadata"]["HTTPStatusCode"], 206)
        self.assertEqual(got["Body"].read(), bytes([1]) * 100)

    def test_plain_object_part_one_is_the_object(self):
        self.s3.put_object(Bucket=self.bucket, Key="plain", Body=b"abc")
        got = self.s3.get_object(Bucket=self.bucket, Key="plain", PartNumber=1)
        self.assertNotIn("PartsCount", got)
        self.assertEqual(got["ResponseMetadata"]["HTTPStatusCode"], 200)
        self.assertEqual(got["Body"].read(), b"abc")

    def test_delete_on_unversioned_bucket(self):
        """AWS: 204, and neither x-amz-delete-marker nor x-amz-version-id,
        for a key that exists and for one that does not."""
        self.s3.put_object(Bucket=self.bucket, Key="d", Body=b"x")
        for key in ("d", "d", "never-there"):
            r = raw_request(self.endpoint, "DELETE", f"/{self.bucket}/{key}")
            self.assertEqual(r.status, 204, r)
            self.assertNotIn("x-amz-delete-marker", r.headers)
            self.assertNotIn("x-amz-version-id", r.headers)
            self.assertEqual(r.body, b"")
        with self.assertRaises(ClientError) as c:
            self.s3.head_object(Bucket=self.bucket, Key="d")
        self.assertEqual(error_of(c), ("404", 404))
        answer = self.s3.delete_object(Bucket=self.bucket, Key="d")
        self.assertNotIn("DeleteMarker", answer)
        self.assertNotIn("VersionId", answer)


if __name__ == "__main__":
    unittest.main()
