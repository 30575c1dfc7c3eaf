"""The S3 API through boto3 against a real `tessera server`."""

import base64
import concurrent.futures
import datetime
import hashlib
import http.client
import os
import random
import shutil
import socket
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from s3util import client, error_of, no_url_encoding_client, raw_request, signed_headers
from tessera_server import (
    ACCESS_KEY,
    REGION,
    SECRET_KEY,
    ServerTestCase,
    TesseraServer,
    unique_bucket,
)

MiB = 1024 * 1024


def data_of(size, seed=0):
    return random.Random(seed).randbytes(size)


def md5_etag(data):
    return '"' + hashlib.md5(data).hexdigest() + '"'


def lower(headers):
    return {k.lower(): v for k, v in headers.items()}


def multipart_etag(parts):
    digest = hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest()
    return f'"{digest}-{len(parts)}"'


class Boto3Case(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.s3 = client(cls.endpoint)

    def new_bucket(self, prefix="b"):
        name = unique_bucket(prefix)
        self.s3.create_bucket(Bucket=name)
        return name

    def assert_error(self, code, status, fn, *args, **kwargs):
        with self.assertRaises(ClientError) as ctx:
            fn(*args, **kwargs)
        self.assertEqual(error_of(ctx), (code, status), ctx.exception.response)
        return ctx.exception.response

    def put(self, bucket, key, body=b"", **kwargs):
        return self.s3.put_object(Bucket=bucket, Key=key, Body=body, **kwargs)

    def get(self, bucket, key, **kwargs):
        return self.s3.get_object(Bucket=bucket, Key=key, **kwargs)["Body"].read()

    def keys_of(self, bucket, **kwargs):
        keys = []
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, **kwargs):
            keys.extend(o["Key"] for o in page.get("Contents", []))
        return keys


class BucketTests(Boto3Case):
    def test_create_list_head_delete(self):
        name = unique_bucket()
        response = self.s3.create_bucket(Bucket=name)
        self.assertEqual(response["ResponseMetadata"]["HTTPStatusCode"], 200)
        names = [b["Name"] for b in self.s3.list_buckets()["Buckets"]]
        self.assertIn(name, names)
        self.assertEqual(names, sorted(names))
        self.s3.head_bucket(Bucket=name)
        self.s3.delete_bucket(Bucket=name)
        self.assert_error("404", 404, self.s3.head_bucket, Bucket=name)
        self.assertNotIn(name, [b["Name"] for b in self.s3.list_buckets()["Buckets"]])

    def test_create_twice_is_already_owned(self):
        name = self.new_bucket()
        self.assert_error("BucketAlreadyOwnedByYou", 409, self.s3.create_bucket, Bucket=name)

    def test_missing_bucket(self):
        name = unique_bucket("missing")
        self.assert_error("404", 404, self.s3.head_bucket, Bucket=name)
        self.assert_error("NoSuchBucket", 404, self.s3.list_objects_v2, Bucket=name)
        self.assert_error("NoSuchBucket", 404, self.s3.delete_bucket, Bucket=name)
        self.assert_error("NoSuchBucket", 404, self.s3.put_object, Bucket=name, Key="k", Body=b"x")

    def test_invalid_bucket_name(self):
        for name in ("ab", "UPPERCASE", "under_score", "-leading-dash", "a" * 64, "192.168.1.1"):
            with self.subTest(name=name):
                self.assert_error("InvalidBucketName", 400, self.s3.create_bucket, Bucket=name)

    def test_delete_non_empty_bucket(self):
        name = self.new_bucket()
        self.put(name, "dir/object", b"data")
        response = self.assert_error("BucketNotEmpty", 409, self.s3.delete_bucket, Bucket=name)
        self.assertTrue(response["Error"]["Message"])
        self.s3.head_bucket(Bucket=name)
        self.s3.delete_object(Bucket=name, Key="dir/object")
        self.s3.delete_bucket(Bucket=name)
        self.assert_error("404", 404, self.s3.head_bucket, Bucket=name)

    def test_location(self):
        name = self.new_bucket()
        location = self.s3.get_bucket_location(Bucket=name)["LocationConstraint"]
        self.assertIn(location, (None, "", "us-east-1"))


class ObjectTests(Boto3Case):
    def test_put_get_head_delete_with_metadata(self):
        bucket = self.new_bucket()
        body = data_of(1000, seed=1)
        put = self.put(
            bucket,
            "docs/report.bin",
            body,
            ContentType="application/x-tessera-test",
            Metadata={"Color": "blue", "answer": "42"},
            CacheControl="max-age=60",
            ContentDisposition='attachment; filename="report.bin"',
        )
        self.assertEqual(put["ETag"], md5_etag(body))

        got = self.s3.get_object(Bucket=bucket, Key="docs/report.bin")
        self.assertEqual(got["Body"].read(), body)
        self.assertEqual(got["ETag"], md5_etag(body))
        self.assertEqual(got["ContentLength"], len(body))
        self.assertEqual(got["ContentType"], "application/x-tessera-test")
        self.assertEqual(got["Metadata"], {"color": "blue", "answer": "42"})
        self.assertEqual(got["CacheControl"], "max-age=60")
        self.assertEqual(got["ContentDisposition"], 'attachment; filename="report.bin"')
        self.assertIsInstance(got["LastModified"], datetime.datetime)
        now = datetime.datetime.now(datetime.timezone.utc)
        self.assertLess(abs((now - got["LastModified"]).total_seconds()), 120)

        head = self.s3.head_object(Bucket=bucket, Key="docs/report.bin")
        self.assertEqual(head["ContentLength"], len(body))
        self.assertEqual(head["ETag"], md5_etag(body))
        self.assertEqual(head["ContentType"], "application/x-tessera-test")
        self.assertEqual(head["Metadata"], {"color": "blue", "answer": "42"})
        self.assertEqual(head["LastModified"], got["LastModified"])

        deleted = self.s3.delete_object(Bucket=bucket, Key="docs/report.bin")
        self.assertEqual(deleted["ResponseMetadata"]["HTTPStatusCode"], 204)
        self.assert_error("NoSuchKey", 404, self.s3.get_object, Bucket=bucket, Key="docs/report.bin")
        self.assert_error("404", 404, self.s3.head_object, Bucket=bucket, Key="docs/report.bin")
        # Deleting what is not there succeeds.
        again = self.s3.delete_object(Bucket=bucket, Key="docs/report.bin")
        self.assertEqual(again["ResponseMetadata"]["HTTPStatusCode"], 204)

    def test_default_content_type(self):
        bucket = self.new_bucket()
        self.put(bucket, "plain", b"abc")
        content_type = self.s3.head_object(Bucket=bucket, Key="plain")["ContentType"]
        self.assertIn(content_type, ("binary/octet-stream", "application/octet-stream"))

    def test_overwrite(self):
        bucket = self.new_bucket()
        self.put(bucket, "k", b"first", Metadata={"v": "1"})
        self.put(bucket, "k", b"second!", Metadata={"v": "2"})
        got = self.s3.get_object(Bucket=bucket, Key="k")
        self.assertEqual(got["Body"].read(), b"second!")
        self.assertEqual(got["Metadata"], {"v": "2"})

    def test_empty_object(self):
        bucket = self.new_bucket()
        put = self.put(bucket, "empty", b"")
        self.assertEqual(put["ETag"], md5_etag(b""))
        got = self.s3.get_object(Bucket=bucket, Key="empty")
        self.assertEqual(got["ContentLength"], 0)
        self.assertEqual(got["Body"].read(), b"")

    def test_keys_with_special_characters(self):
        bucket = self.new_bucket()
        keys = [
            "with space.txt",
            "plus+sign",
            "percent%20literal",
            "unicode-\u00e9\u00e8-\u65e5\u672c-\U0001f600",
            "tilde~and=equals&amp",
            "question?mark#hash",
            "trailing-slash-dir/",
            "semi;colon,comma'quote\"",
        ]
        for i, key in enumerate(keys):
            with self.subTest(key=key):
                body = f"body {i}".encode()
                self.put(bucket, key, body)
                self.assertEqual(self.get(bucket, key), body)
                self.assertEqual(self.s3.head_object(Bucket=bucket, Key=key)["ContentLength"], len(body))
        self.assertEqual(sorted(self.keys_of(bucket)), sorted(keys))

    def test_dot_segments_refused(self):
        # Keys are paths on the drives (MinIO's layout), so `.` and `..`
        # segments are refused, as MinIO refuses them.
        bucket = self.new_bucket()
        for key in ("a/b/../c", "a/./b", "../up"):
            with self.subTest(key=key):
                with self.assertRaises(ClientError) as ctx:
                    self.s3.put_object(Bucket=bucket, Key=key, Body=b"x")
                self.assertEqual(error_of(ctx)[1], 400, ctx.exception.response)
        self.assertEqual(self.keys_of(bucket), [])

    def test_large_object_spanning_blocks(self):
        bucket = self.new_bucket()
        body = data_of(5 * MiB + 12345, seed=2)
        put = self.put(bucket, "large", body)
        self.assertEqual(put["ETag"], md5_etag(body))
        self.assertEqual(self.get(bucket, "large"), body)
        # A range across the 1 MiB erasure block boundaries.
        start, end = MiB - 100, 3 * MiB + 100
        got = self.get(bucket, "large", Range=f"bytes={start}-{end}")
        self.assertEqual(got, body[start : end + 1])

    def test_transfer_manager(self):
        # boto3's managed transfers: parallel multipart upload and parallel
        # ranged download.
        from boto3.s3.transfer import TransferConfig

        bucket = self.new_bucket()
        config = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB, max_concurrency=4)
        body = data_of(17 * MiB + 5, seed=9)
        directory = self.tmpdir()
        source = os.path.join(directory, "up.bin")
        target = os.path.join(directory, "down.bin")
        with open(source, "wb") as f:
            f.write(body)
        self.s3.upload_file(source, bucket, "managed.bin", Config=config)
        head = self.s3.head_object(Bucket=bucket, Key="managed.bin")
        self.assertEqual(head["ContentLength"], len(body))
        self.assertTrue(head["ETag"].endswith('-4"'), head["ETag"])
        self.s3.download_file(bucket, "managed.bin", target, Config=config)
        with open(target, "rb") as f:
            self.assertEqual(hashlib.sha256(f.read()).digest(), hashlib.sha256(body).digest())

    def test_no_such_key_error_fields(self):
        bucket = self.new_bucket()
        response = self.assert_error("NoSuchKey", 404, self.s3.get_object, Bucket=bucket, Key="nope")
        self.assertTrue(response["Error"]["Message"])
        self.assertTrue(response["ResponseMetadata"]["RequestId"])

    def test_content_md5(self):
        bucket = self.new_bucket()
        body = b"checked by md5"
        good = base64.b64encode(hashlib.md5(body).digest()).decode()
        self.put(bucket, "md5", body, ContentMD5=good)
        self.assertEqual(self.get(bucket, "md5"), body)
        bad = base64.b64encode(hashlib.md5(b"other").digest()).decode()
        self.assert_error("BadDigest", 400, self.put, bucket, "md5-bad", body, ContentMD5=bad)
        self.assert_error("NoSuchKey", 404, self.s3.get_object, Bucket=bucket, Key="md5-bad")


    def test_checksum_headers_are_verified(self):
        bucket = self.new_bucket()
        body = b"checked by sha256"
        good = base64.b64encode(hashlib.sha256(body).digest()).decode()
        self.put(bucket, "sum", body, ChecksumSHA256=good)
        self.assertEqual(self.get(bucket, "sum"), body)
        bad = base64.b64encode(hashlib.sha256(b"other").digest()).decode()
        with self.assertRaises(ClientError) as ctx:
            self.s3.put_object(Bucket=bucket, Key="sum-bad", Body=body, ChecksumSHA256=bad)
        code, status = error_of(ctx)
        self.assertEqual(status, 400, ctx.exception.response)
        self.assertIn(code, ("BadDigest", "XAmzContentChecksumMismatch", "InvalidDigest"))
        self.assert_error("NoSuchKey", 404, self.s3.get_object, Bucket=bucket, Key="sum-bad")

    def test_signed_payload_hash_is_verified(self):
        bucket = self.new_bucket()
        signed_body = b"the body that was signed"
        # Signed for one body, sent with another of the same length.
        sent = b"the body that was SENT!!"
        self.assertEqual(len(sent), len(signed_body))
        headers = signed_headers(self.endpoint, "PUT", f"/{bucket}/tampered", body=signed_body)
        response = raw_request(self.endpoint, "PUT", f"/{bucket}/tampered", body=sent, headers=headers, sign=False)
        self.assertEqual(response.status, 400, response)
        self.assertEqual(ET.fromstring(response.body).findtext("Code"), "XAmzContentSHA256Mismatch")
        self.assert_error("NoSuchKey", 404, self.s3.get_object, Bucket=bucket, Key="tampered")


class RangeAndConditionalTests(Boto3Case):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.bucket = unique_bucket()
        cls.s3.create_bucket(Bucket=cls.bucket)
        cls.body = bytes(range(100))
        cls.etag = cls.s3.put_object(Bucket=cls.bucket, Key="obj", Body=cls.body)["ETag"]
        cls.last_modified = cls.s3.head_object(Bucket=cls.bucket, Key="obj")["LastModified"]

    def ranged(self, spec):
        return self.s3.get_object(Bucket=self.bucket, Key="obj", Range=spec)

    def test_ranges(self):
        cases = [
            ("bytes=0-9", 0, 9),
            ("bytes=-5", 95, 99),
            ("bytes=10-", 10, 99),
            ("bytes=95-200", 95, 99),
            ("bytes=99-99", 99, 99),
            ("bytes=-200", 0, 99),
        ]
        for spec, first, last in cases:
            with self.subTest(range=spec):
                got = self.ranged(spec)
                self.assertEqual(got["ResponseMetadata"]["HTTPStatusCode"], 206)
                self.assertEqual(got["ContentRange"], f"bytes {first}-{last}/100")
                self.assertEqual(got["ContentLength"], last - first + 1)
                self.assertEqual(got["Body"].read(), self.body[first : last + 1])

    def test_range_of_empty_object(self):
        self.s3.put_object(Bucket=self.bucket, Key="empty", Body=b"")
        self.assert_error("InvalidRange", 416, self.s3.get_object, Bucket=self.bucket, Key="empty", Range="bytes=0-0")
        got = self.s3.get_object(Bucket=self.bucket, Key="empty")
        self.assertEqual(got["Body"].read(), b"")

    def test_unsatisfiable_ranges(self):
        for spec in ("bytes=100-", "bytes=200-300"):
            with self.subTest(range=spec):
                response = self.assert_error("InvalidRange", 416, self.ranged, spec)
                self.assertEqual(
                    response["ResponseMetadata"]["HTTPHeaders"].get("content-range"), "bytes */100"
                )

    def test_head_range(self):
        head = self.s3.head_object(Bucket=self.bucket, Key="obj", Range="bytes=0-9")
        self.assertEqual(head["ResponseMetadata"]["HTTPStatusCode"], 206)
        self.assertEqual(head["ContentLength"], 10)

    def test_if_match(self):
        got = self.s3.get_object(Bucket=self.bucket, Key="obj", IfMatch=self.etag)
        self.assertEqual(got["Body"].read(), self.body)
        self.assert_error(
            "PreconditionFailed", 412, self.s3.get_object, Bucket=self.bucket, Key="obj", IfMatch='"0123"'
        )
        self.assert_error("412", 412, self.s3.head_object, Bucket=self.bucket, Key="obj", IfMatch='"0123"')

    def test_if_none_match(self):
        self.assert_error("304", 304, self.s3.get_object, Bucket=self.bucket, Key="obj", IfNoneMatch=self.etag)
        self.assert_error("304", 304, self.s3.head_object, Bucket=self.bucket, Key="obj", IfNoneMatch=self.etag)
        self.assert_error("304", 304, self.s3.get_object, Bucket=self.bucket, Key="obj", IfNoneMatch="*")
        got = self.s3.get_object(Bucket=self.bucket, Key="obj", IfNoneMatch='"0123"')
        self.assertEqual(got["Body"].read(), self.body)

    def test_if_modified_since(self):
        before = self.last_modified - datetime.timedelta(days=1)
        got = self.s3.get_object(Bucket=self.bucket, Key="obj", IfModifiedSince=before)
        self.assertEqual(got["Body"].read(), self.body)
        self.assert_error(
            "304", 304, self.s3.get_object, Bucket=self.bucket, Key="obj", IfModifiedSince=self.last_modified
        )

    def test_if_unmodified_since(self):
        got = self.s3.get_object(Bucket=self.bucket, Key="obj", IfUnmodifiedSince=self.last_modified)
        self.assertEqual(got["Body"].read(), self.body)
        before = self.last_modified - datetime.timedelta(days=1)
        self.assert_error(
            "PreconditionFailed", 412, self.s3.get_object, Bucket=self.bucket, Key="obj", IfUnmodifiedSince=before
        )

    def test_if_match_wins_over_if_unmodified_since(self):
        # RFC 7232 / S3: If-Match true and If-Unmodified-Since false -> 200.
        before = self.last_modified - datetime.timedelta(days=1)
        got = self.s3.get_object(Bucket=self.bucket, Key="obj", IfMatch=self.etag, IfUnmodifiedSince=before)
        self.assertEqual(got["Body"].read(), self.body)

    def test_if_none_match_wins_over_if_modified_since(self):
        # If-None-Match false and If-Modified-Since true -> 304.
        before = self.last_modified - datetime.timedelta(days=1)
        self.assert_error(
            "304", 304, self.s3.get_object, Bucket=self.bucket, Key="obj", IfNoneMatch=self.etag, IfModifiedSince=before
        )


class ListingTests(Boto3Case):
    def fill(self, bucket, keys):
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda k: self.put(bucket, k, k.encode()), keys))

    def test_prefix_and_delimiter(self):
        bucket = self.new_bucket()
        self.fill(bucket, ["a/1", "a/2", "a/b/3", "a/b/4", "b/1", "c", "d/x/y", "a.txt"])
        top = self.s3.list_objects_v2(Bucket=bucket, Delimiter="/")
        self.assertEqual([o["Key"] for o in top["Contents"]], ["a.txt", "c"])
        self.assertEqual([p["Prefix"] for p in top["CommonPrefixes"]], ["a/", "b/", "d/"])
        self.assertEqual(top["KeyCount"], 5)
        self.assertFalse(top["IsTruncated"])

        under_a = self.s3.list_objects_v2(Bucket=bucket, Prefix="a/", Delimiter="/")
        self.assertEqual([o["Key"] for o in under_a["Contents"]], ["a/1", "a/2"])
        self.assertEqual([p["Prefix"] for p in under_a["CommonPrefixes"]], ["a/b/"])
        self.assertEqual(under_a["Prefix"], "a/")

        flat = self.s3.list_objects_v2(Bucket=bucket, Prefix="a")
        self.assertEqual([o["Key"] for o in flat["Contents"]], ["a.txt", "a/1", "a/2", "a/b/3", "a/b/4"])
        for entry in flat["Contents"]:
            self.assertEqual(entry["Size"], len(entry["Key"]))
            self.assertEqual(entry["ETag"], md5_etag(entry["Key"].encode()))
            self.assertEqual(entry["StorageClass"], "STANDARD")

        nothing = self.s3.list_objects_v2(Bucket=bucket, Prefix="zzz")
        self.assertEqual(nothing["KeyCount"], 0)
        self.assertNotIn("Contents", nothing)

    def test_v2_pagination(self):
        bucket = self.new_bucket()
        keys = sorted(f"key-{i:03d}" for i in range(25))
        self.fill(bucket, keys)
        seen, token, pages = [], None, 0
        while True:
            kwargs = {"ContinuationToken": token} if token else {}
            page = self.s3.list_objects_v2(Bucket=bucket, MaxKeys=7, **kwargs)
            pages += 1
            batch = [o["Key"] for o in page.get("Contents", [])]
            self.assertEqual(page["KeyCount"], len(batch))
            self.assertLessEqual(len(batch), 7)
            seen.extend(batch)
            if not page["IsTruncated"]:
                break
            token = page["NextContinuationToken"]
            self.assertTrue(token)
        self.assertEqual(seen, keys)
        self.assertEqual(pages, 4)

        after = self.s3.list_objects_v2(Bucket=bucket, StartAfter="key-019")
        self.assertEqual([o["Key"] for o in after["Contents"]], keys[20:])
        self.assertEqual(after["StartAfter"], "key-019")

        # StartAfter between existing keys, with paging on top.
        after = self.keys_of(bucket, StartAfter="key-0105", PaginationConfig={"PageSize": 3})
        self.assertEqual(after, keys[11:])

    def test_v2_pagination_with_common_prefixes(self):
        bucket = self.new_bucket()
        keys = [f"p{i}/x" for i in range(5)] + [f"q{i}" for i in range(5)]
        self.fill(bucket, keys)
        entries, token = [], None
        while True:
            kwargs = {"ContinuationToken": token} if token else {}
            page = self.s3.list_objects_v2(Bucket=bucket, Delimiter="/", MaxKeys=3, **kwargs)
            batch = [p["Prefix"] for p in page.get("CommonPrefixes", [])] + [
                o["Key"] for o in page.get("Contents", [])
            ]
            self.assertLessEqual(len(batch), 3)
            self.assertEqual(page["KeyCount"], len(batch))
            entries.extend(batch)
            if not page["IsTruncated"]:
                break
            token = page["NextContinuationToken"]
        self.assertEqual(sorted(entries), sorted([f"p{i}/" for i in range(5)] + [f"q{i}" for i in range(5)]))
        self.assertEqual(len(entries), len(set(entries)))

    def test_v1_marker(self):
        bucket = self.new_bucket()
        keys = sorted(f"k{i:02d}" for i in range(12))
        self.fill(bucket, keys)
        page = self.s3.list_objects(Bucket=bucket, MaxKeys=5)
        self.assertTrue(page["IsTruncated"])
        self.assertEqual([o["Key"] for o in page["Contents"]], keys[:5])
        page = self.s3.list_objects(Bucket=bucket, MaxKeys=5, Marker=keys[4])
        self.assertEqual(page["Marker"], keys[4])
        self.assertEqual([o["Key"] for o in page["Contents"]], keys[5:10])
        page = self.s3.list_objects(Bucket=bucket, MaxKeys=5, Marker=keys[9])
        self.assertFalse(page["IsTruncated"])
        self.assertEqual([o["Key"] for o in page["Contents"]], keys[10:])
        # With a delimiter, a truncated V1 page names its NextMarker.
        self.fill(bucket, ["dir1/a", "dir2/a", "dir3/a"])
        page = self.s3.list_objects(Bucket=bucket, Delimiter="/", MaxKeys=2)
        self.assertTrue(page["IsTruncated"])
        self.assertEqual([p["Prefix"] for p in page["CommonPrefixes"]], ["dir1/", "dir2/"])
        self.assertEqual(page["NextMarker"], "dir2/")
        page = self.s3.list_objects(Bucket=bucket, Delimiter="/", MaxKeys=2, Marker=page["NextMarker"])
        self.assertEqual([p["Prefix"] for p in page["CommonPrefixes"]], ["dir3/"])
        self.assertEqual([o["Key"] for o in page["Contents"]], [keys[0]])
        # The paginator (NextMarker or last key) walks everything.
        all_keys = []
        for page in self.s3.get_paginator("list_objects").paginate(Bucket=bucket, PaginationConfig={"PageSize": 4}):
            all_keys.extend(o["Key"] for o in page.get("Contents", []))
        self.assertEqual(all_keys, sorted(keys + ["dir1/a", "dir2/a", "dir3/a"]))

    SPECIAL_KEYS = [
        "dir with space/file one.txt",
        "plus+plus/a+b",
        "unicode/\u00e9t\u00e9 \u65e5\u672c.txt",
        "amp&lt<gt>quote\"apos'",
        "percent%2Fnot-a-slash",
        "tab\tkey",
    ]

    def test_encoding_type_url(self):
        bucket = self.new_bucket()
        self.fill(bucket, self.SPECIAL_KEYS)
        raw = self.s3.list_objects_v2(Bucket=bucket, EncodingType="url")
        self.assertEqual(raw["EncodingType"], "url")
        encoded = [o["Key"] for o in raw["Contents"]]
        for key in encoded:
            self.assertTrue(key.isascii(), key)
            self.assertNotIn(" ", key)
            self.assertNotIn("\t", key)
        decoded = [urllib.parse.unquote_plus(k) for k in encoded]
        self.assertEqual(decoded, sorted(self.SPECIAL_KEYS, key=lambda k: k.encode()))
        # boto3's default (encoding-type=url requested and decoded for us).
        self.assertEqual(self.keys_of(bucket), sorted(self.SPECIAL_KEYS, key=lambda k: k.encode()))
        # Delimiter and prefixes come back encoded as well.
        raw = self.s3.list_objects_v2(Bucket=bucket, EncodingType="url", Delimiter="/", Prefix="dir with space/")
        self.assertEqual(urllib.parse.unquote_plus(raw["Prefix"]), "dir with space/")
        self.assertEqual([urllib.parse.unquote_plus(o["Key"]) for o in raw["Contents"]], ["dir with space/file one.txt"])
        raw = self.s3.list_objects(Bucket=bucket, EncodingType="url", Delimiter="/")
        self.assertEqual(
            sorted(urllib.parse.unquote_plus(p["Prefix"]) for p in raw["CommonPrefixes"]),
            sorted(["dir with space/", "plus+plus/", "unicode/"]),
        )

    def test_xml_escaping_without_encoding_type(self):
        bucket = self.new_bucket()
        self.fill(bucket, self.SPECIAL_KEYS)
        plain = no_url_encoding_client(self.endpoint)
        got = plain.list_objects_v2(Bucket=bucket)
        self.assertNotIn("EncodingType", got)
        self.assertEqual([o["Key"] for o in got["Contents"]], sorted(self.SPECIAL_KEYS, key=lambda k: k.encode()))
        got = plain.list_objects(Bucket=bucket, Prefix="plus+plus/")
        self.assertEqual([o["Key"] for o in got["Contents"]], ["plus+plus/a+b"])

    def test_max_keys_zero_and_invalid(self):
        bucket = self.new_bucket()
        self.fill(bucket, ["a", "b"])
        page = self.s3.list_objects_v2(Bucket=bucket, MaxKeys=0)
        self.assertEqual(page["KeyCount"], 0)
        self.assertNotIn("Contents", page)
        response = raw_request(self.endpoint, "GET", f"/{bucket}", "list-type=2&max-keys=-1")
        self.assertEqual(response.status, 400, response)
        self.assertEqual(ET.fromstring(response.body).findtext("Code"), "InvalidArgument")


class DeleteObjectsTests(Boto3Case):
    def fill(self, bucket, keys):
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda k: self.put(bucket, k, b"x"), keys))

    def test_verbose_1000_keys(self):
        bucket = self.new_bucket()
        keys = [f"many/{i:04d}" for i in range(1000)]
        self.fill(bucket, keys)
        self.assertEqual(len(self.keys_of(bucket)), 1000)
        response = self.s3.delete_objects(
            Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys], "Quiet": False}
        )
        self.assertEqual(sorted(d["Key"] for d in response["Deleted"]), keys)
        self.assertEqual(response.get("Errors", []), [])
        self.assertEqual(self.keys_of(bucket), [])

    def test_quiet(self):
        bucket = self.new_bucket()
        keys = [f"quiet/{i}" for i in range(20)]
        self.fill(bucket, keys)
        response = self.s3.delete_objects(
            Bucket=bucket,
            Delete={"Objects": [{"Key": k} for k in keys + ["never-existed"]], "Quiet": True},
        )
        self.assertEqual(response.get("Deleted", []), [])
        self.assertEqual(response.get("Errors", []), [])
        self.assertEqual(self.keys_of(bucket), [])

    def test_missing_keys_are_reported_deleted(self):
        bucket = self.new_bucket()
        self.put(bucket, "present", b"x")
        response = self.s3.delete_objects(
            Bucket=bucket, Delete={"Objects": [{"Key": "present"}, {"Key": "absent"}]}
        )
        self.assertEqual(sorted(d["Key"] for d in response["Deleted"]), ["absent", "present"])

    def test_more_than_1000_keys_refused(self):
        bucket = self.new_bucket()
        self.assert_error(
            "MalformedXML",
            400,
            self.s3.delete_objects,
            Bucket=bucket,
            Delete={"Objects": [{"Key": f"k{i}"} for i in range(1001)]},
        )


class CopyTests(Boto3Case):
    def test_copy_metadata_directives(self):
        bucket = self.new_bucket()
        other = self.new_bucket()
        body = data_of(3000, seed=3)
        self.put(bucket, "src", body, ContentType="text/x-one", Metadata={"origin": "source"})

        copied = self.s3.copy_object(Bucket=other, Key="copy", CopySource={"Bucket": bucket, "Key": "src"})
        self.assertEqual(copied["CopyObjectResult"]["ETag"], md5_etag(body))
        got = self.s3.get_object(Bucket=other, Key="copy")
        self.assertEqual(got["Body"].read(), body)
        self.assertEqual(got["ContentType"], "text/x-one")
        self.assertEqual(got["Metadata"], {"origin": "source"})

        self.s3.copy_object(
            Bucket=bucket,
            Key="replaced",
            CopySource={"Bucket": bucket, "Key": "src"},
            MetadataDirective="REPLACE",
            ContentType="text/x-two",
            Metadata={"fresh": "yes"},
        )
        got = self.s3.get_object(Bucket=bucket, Key="replaced")
        self.assertEqual(got["Body"].read(), body)
        self.assertEqual(got["ContentType"], "text/x-two")
        self.assertEqual(got["Metadata"], {"fresh": "yes"})

        # COPY ignores metadata given with the request.
        self.s3.copy_object(
            Bucket=bucket,
            Key="copied-again",
            CopySource={"Bucket": bucket, "Key": "src"},
            MetadataDirective="COPY",
            Metadata={"ignored": "yes"},
        )
        self.assertEqual(self.s3.head_object(Bucket=bucket, Key="copied-again")["Metadata"], {"origin": "source"})

    def test_copy_onto_itself(self):
        bucket = self.new_bucket()
        body = data_of(2000, seed=4)
        self.put(bucket, "self", body, Metadata={"gen": "1"})
        self.assert_error(
            "InvalidRequest",
            400,
            self.s3.copy_object,
            Bucket=bucket,
            Key="self",
            CopySource={"Bucket": bucket, "Key": "self"},
        )
        self.s3.copy_object(
            Bucket=bucket,
            Key="self",
            CopySource={"Bucket": bucket, "Key": "self"},
            MetadataDirective="REPLACE",
            Metadata={"gen": "2"},
            ContentType="text/x-self",
        )
        got = self.s3.get_object(Bucket=bucket, Key="self")
        self.assertEqual(got["Body"].read(), body)
        self.assertEqual(got["Metadata"], {"gen": "2"})
        self.assertEqual(got["ContentType"], "text/x-self")

    def test_copy_special_key_and_conditions(self):
        bucket = self.new_bucket()
        key = "src dir/\u00fcber+file?.bin"
        body = b"special source"
        etag = self.put(bucket, key, body)["ETag"]
        self.s3.copy_object(Bucket=bucket, Key="dst/\u00fcber copy", CopySource={"Bucket": bucket, "Key": key})
        self.assertEqual(self.get(bucket, "dst/\u00fcber copy"), body)
        self.s3.copy_object(Bucket=bucket, Key="dst2", CopySource={"Bucket": bucket, "Key": key}, CopySourceIfMatch=etag)
        self.assertEqual(self.get(bucket, "dst2"), body)
        self.assert_error(
            "PreconditionFailed",
            412,
            self.s3.copy_object,
            Bucket=bucket,
            Key="dst3",
            CopySource={"Bucket": bucket, "Key": key},
            CopySourceIfMatch='"0000"',
        )

    def test_copy_missing_source(self):
        bucket = self.new_bucket()
        self.assert_error(
            "NoSuchKey", 404, self.s3.copy_object, Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "missing"}
        )
        self.assert_error(
            "NoSuchBucket",
            404,
            self.s3.copy_object,
            Bucket=bucket,
            Key="dst",
            CopySource={"Bucket": unique_bucket("missing"), "Key": "k"},
        )


class MultipartTests(Boto3Case):
    def upload_parts(self, bucket, key, upload_id, parts):
        done = []
        for number, body in enumerate(parts, start=1):
            etag = self.s3.upload_part(
                Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=body
            )["ETag"]
            self.assertEqual(etag, md5_etag(body))
            done.append({"PartNumber": number, "ETag": etag})
        return done

    def test_full_upload_with_part_reupload(self):
        bucket = self.new_bucket()
        key = "multi/part object"
        created = self.s3.create_multipart_upload(
            Bucket=bucket, Key=key, ContentType="application/x-multi", Metadata={"kind": "multipart"}
        )
        upload_id = created["UploadId"]
        self.assertEqual(created["Key"], key)
        p1, p2_old, p2, p3 = data_of(5 * MiB, 10), data_of(5 * MiB, 11), data_of(5 * MiB + 7, 12), data_of(1024, 13)
        parts = self.upload_parts(bucket, key, upload_id, [p1, p2_old, p3])
        # Part 2 uploaded again replaces the first upload of it.
        parts[1]["ETag"] = self.s3.upload_part(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=2, Body=p2)[
            "ETag"
        ]
        self.assertEqual(parts[1]["ETag"], md5_etag(p2))

        listed = self.s3.list_parts(Bucket=bucket, Key=key, UploadId=upload_id)
        self.assertEqual([p["PartNumber"] for p in listed["Parts"]], [1, 2, 3])
        self.assertEqual([p["ETag"] for p in listed["Parts"]], [p["ETag"] for p in parts])
        self.assertEqual([p["Size"] for p in listed["Parts"]], [len(p1), len(p2), len(p3)])
        # Paged part listing.
        page = self.s3.list_parts(Bucket=bucket, Key=key, UploadId=upload_id, MaxParts=2)
        self.assertTrue(page["IsTruncated"])
        self.assertEqual([p["PartNumber"] for p in page["Parts"]], [1, 2])
        page = self.s3.list_parts(
            Bucket=bucket, Key=key, UploadId=upload_id, PartNumberMarker=page["NextPartNumberMarker"]
        )
        self.assertEqual([p["PartNumber"] for p in page["Parts"]], [3])

        uploads = self.s3.list_multipart_uploads(Bucket=bucket)["Uploads"]
        self.assertEqual([(u["Key"], u["UploadId"]) for u in uploads], [(key, upload_id)])
        # Not visible as an object yet.
        self.assert_error("NoSuchKey", 404, self.s3.get_object, Bucket=bucket, Key=key)

        done = self.s3.complete_multipart_upload(
            Bucket=bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts}
        )
        self.assertEqual(done["ETag"], multipart_etag([p1, p2, p3]))
        self.assertEqual(done["Key"], key)
        got = self.s3.get_object(Bucket=bucket, Key=key)
        self.assertEqual(got["ETag"], multipart_etag([p1, p2, p3]))
        self.assertEqual(got["ContentType"], "application/x-multi")
        self.assertEqual(got["Metadata"], {"kind": "multipart"})
        self.assertEqual(got["Body"].read(), p1 + p2 + p3)
        self.assertEqual(
            self.get(bucket, key, Range=f"bytes={5 * MiB - 10}-{5 * MiB + 9}"), (p1 + p2)[5 * MiB - 10 : 5 * MiB + 10]
        )
        self.assertEqual(self.s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []), [])
        self.assert_error("NoSuchUpload", 404, self.s3.list_parts, Bucket=bucket, Key=key, UploadId=upload_id)

    def test_part_number_get_and_head(self):
        bucket = self.new_bucket()
        key = "parts"
        upload_id = self.s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
        p1, p2 = data_of(5 * MiB, 20), data_of(100, 21)
        parts = self.upload_parts(bucket, key, upload_id, [p1, p2])
        self.s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts})
        head = self.s3.head_object(Bucket=bucket, Key=key, PartNumber=1)
        self.assertEqual(head["ContentLength"], len(p1))
        self.assertEqual(head["PartsCount"], 2)
        got = self.s3.get_object(Bucket=bucket, Key=key, PartNumber=2)
        self.assertEqual(got["Body"].read(), p2)

    def test_abort(self):
        bucket = self.new_bucket()
        upload_id = self.s3.create_multipart_upload(Bucket=bucket, Key="aborted")["UploadId"]
        self.s3.upload_part(Bucket=bucket, Key="aborted", UploadId=upload_id, PartNumber=1, Body=b"x" * 1000)
        other = self.s3.create_multipart_upload(Bucket=bucket, Key="kept")["UploadId"]
        aborted = self.s3.abort_multipart_upload(Bucket=bucket, Key="aborted", UploadId=upload_id)
        self.assertEqual(aborted["ResponseMetadata"]["HTTPStatusCode"], 204)
        self.assert_error("NoSuchUpload", 404, self.s3.list_parts, Bucket=bucket, Key="aborted", UploadId=upload_id)
        self.assert_error(
            "NoSuchUpload",
            404,
            self.s3.upload_part,
            Bucket=bucket,
            Key="aborted",
            UploadId=upload_id,
            PartNumber=2,
            Body=b"y",
        )
        uploads = self.s3.list_multipart_uploads(Bucket=bucket)["Uploads"]
        self.assertEqual([(u["Key"], u["UploadId"]) for u in uploads], [("kept", other)])
        self.assert_error("NoSuchKey", 404, self.s3.get_object, Bucket=bucket, Key="aborted")
        self.s3.abort_multipart_upload(Bucket=bucket, Key="kept", UploadId=other)

    def test_list_multipart_uploads_prefix_and_several_per_key(self):
        bucket = self.new_bucket()
        ids = {}
        for key in ("a/one", "a/one", "a/two", "b/three"):
            ids.setdefault(key, []).append(self.s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"])
        listed = self.s3.list_multipart_uploads(Bucket=bucket, Prefix="a/")["Uploads"]
        self.assertEqual(sorted(u["Key"] for u in listed), ["a/one", "a/one", "a/two"])
        self.assertEqual(sorted(u["UploadId"] for u in listed if u["Key"] == "a/one"), sorted(ids["a/one"]))
        top = self.s3.list_multipart_uploads(Bucket=bucket, Delimiter="/")
        self.assertEqual(sorted(p["Prefix"] for p in top.get("CommonPrefixes", [])), ["a/", "b/"])
        for key, upload_ids in ids.items():
            for upload_id in upload_ids:
                self.s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)

    def test_entity_too_small(self):
        bucket = self.new_bucket()
        upload_id = self.s3.create_multipart_upload(Bucket=bucket, Key="small")["UploadId"]
        parts = self.upload_parts(bucket, "small", upload_id, [b"a" * 100 * 1024, b"b" * 100 * 1024])
        self.assert_error(
            "EntityTooSmall",
            400,
            self.s3.complete_multipart_upload,
            Bucket=bucket,
            Key="small",
            UploadId=upload_id,
            MultipartUpload={"Parts": parts},
        )
        # A single small part is fine (it is the last one).
        done = self.s3.complete_multipart_upload(
            Bucket=bucket, Key="small", UploadId=upload_id, MultipartUpload={"Parts": parts[:1]}
        )
        self.assertEqual(done["ETag"], multipart_etag([b"a" * 100 * 1024]))
        self.assertEqual(self.get(bucket, "small"), b"a" * 100 * 1024)

    def test_invalid_part_and_order(self):
        bucket = self.new_bucket()
        upload_id = self.s3.create_multipart_upload(Bucket=bucket, Key="bad")["UploadId"]
        parts = self.upload_parts(bucket, "bad", upload_id, [data_of(5 * MiB, 30), b"tail"])
        complete = self.s3.complete_multipart_upload
        wrong_etag = [parts[0], {"PartNumber": 2, "ETag": '"00000000000000000000000000000000"'}]
        self.assert_error(
            "InvalidPart", 400, complete, Bucket=bucket, Key="bad", UploadId=upload_id, MultipartUpload={"Parts": wrong_etag}
        )
        missing = parts + [{"PartNumber": 3, "ETag": parts[1]["ETag"]}]
        self.assert_error(
            "InvalidPart", 400, complete, Bucket=bucket, Key="bad", UploadId=upload_id, MultipartUpload={"Parts": missing}
        )
        self.assert_error(
            "InvalidPartOrder",
            400,
            complete,
            Bucket=bucket,
            Key="bad",
            UploadId=upload_id,
            MultipartUpload={"Parts": [parts[1], parts[0]]},
        )
        self.assert_error(
            "NoSuchUpload",
            404,
            complete,
            Bucket=bucket,
            Key="bad",
            UploadId="no-such-upload-id",
            MultipartUpload={"Parts": parts},
        )
        # The upload survives the failed attempts.
        done = complete(Bucket=bucket, Key="bad", UploadId=upload_id, MultipartUpload={"Parts": parts})
        self.assertEqual(done["ETag"], multipart_etag([data_of(5 * MiB, 30), b"tail"]))

    def test_upload_part_copy_with_range(self):
        bucket = self.new_bucket()
        source = data_of(11 * MiB + 3, seed=40)
        self.put(bucket, "copy source", source)
        key = "assembled"
        upload_id = self.s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
        first = self.s3.upload_part_copy(
            Bucket=bucket,
            Key=key,
            UploadId=upload_id,
            PartNumber=1,
            CopySource={"Bucket": bucket, "Key": "copy source"},
            CopySourceRange=f"bytes=0-{5 * MiB - 1}",
        )["CopyPartResult"]
        self.assertEqual(first["ETag"], md5_etag(source[: 5 * MiB]))
        second = self.s3.upload_part_copy(
            Bucket=bucket,
            Key=key,
            UploadId=upload_id,
            PartNumber=2,
            CopySource={"Bucket": bucket, "Key": "copy source"},
            CopySourceRange=f"bytes={5 * MiB}-{len(source) - 1}",
        )["CopyPartResult"]
        self.assertEqual(second["ETag"], md5_etag(source[5 * MiB :]))
        tail = b"appended tail"
        third = self.s3.upload_part(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=3, Body=tail)["ETag"]
        parts = [
            {"PartNumber": 1, "ETag": first["ETag"]},
            {"PartNumber": 2, "ETag": second["ETag"]},
            {"PartNumber": 3, "ETag": third},
        ]
        self.s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts})
        self.assertEqual(self.get(bucket, key), source + tail)

    def test_upload_part_copy_bad_range(self):
        bucket = self.new_bucket()
        self.put(bucket, "src", b"0123456789")
        upload_id = self.s3.create_multipart_upload(Bucket=bucket, Key="dst")["UploadId"]
        self.assert_error(
            "InvalidRange",
            416,
            self.s3.upload_part_copy,
            Bucket=bucket,
            Key="dst",
            UploadId=upload_id,
            PartNumber=1,
            CopySource={"Bucket": bucket, "Key": "src"},
            CopySourceRange="bytes=5-20",
        )
        self.s3.abort_multipart_upload(Bucket=bucket, Key="dst", UploadId=upload_id)


class VersioningTests(Boto3Case):
    def enable(self, bucket):
        self.s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})

    def test_versions_and_delete_markers(self):
        bucket = self.new_bucket()
        self.assertNotIn("Status", self.s3.get_bucket_versioning(Bucket=bucket))
        self.enable(bucket)
        self.assertEqual(self.s3.get_bucket_versioning(Bucket=bucket)["Status"], "Enabled")

        v1 = self.put(bucket, "doc", b"version one")["VersionId"]
        v2 = self.put(bucket, "doc", b"version two!")["VersionId"]
        self.assertTrue(v1 and v2 and v1 != v2 and "null" not in (v1, v2))
        self.assertEqual(self.get(bucket, "doc"), b"version two!")
        self.assertEqual(self.get(bucket, "doc", VersionId=v1), b"version one")
        got = self.s3.get_object(Bucket=bucket, Key="doc", VersionId=v2)
        self.assertEqual(got["VersionId"], v2)
        self.assertEqual(self.s3.head_object(Bucket=bucket, Key="doc", VersionId=v1)["ContentLength"], 11)

        deleted = self.s3.delete_object(Bucket=bucket, Key="doc")
        self.assertTrue(deleted["DeleteMarker"])
        marker = deleted["VersionId"]
        self.assertNotIn(marker, (v1, v2))
        response = self.assert_error("NoSuchKey", 404, self.s3.get_object, Bucket=bucket, Key="doc")
        self.assertEqual(response["ResponseMetadata"]["HTTPHeaders"].get("x-amz-delete-marker"), "true")
        self.assertEqual(self.get(bucket, "doc", VersionId=v2), b"version two!")
        self.assertEqual(self.keys_of(bucket), [])
        # The delete marker itself cannot be read.
        response = self.assert_error("MethodNotAllowed", 405, self.s3.get_object, Bucket=bucket, Key="doc", VersionId=marker)
        self.assertEqual(response["ResponseMetadata"]["HTTPHeaders"].get("x-amz-delete-marker"), "true")
        # An older version can be copied out by its id.
        copied = self.s3.copy_object(
            Bucket=bucket, Key="doc-v1", CopySource={"Bucket": bucket, "Key": "doc", "VersionId": v1}
        )
        self.assertEqual(copied.get("CopySourceVersionId"), v1)
        self.assertEqual(self.get(bucket, "doc-v1"), b"version one")
        self.s3.delete_object(Bucket=bucket, Key="doc-v1", VersionId=copied["VersionId"])

        listed = self.s3.list_object_versions(Bucket=bucket)
        versions = [(v["Key"], v["VersionId"], v["IsLatest"], v["Size"]) for v in listed["Versions"]]
        self.assertEqual(versions, [("doc", v2, False, 12), ("doc", v1, False, 11)])
        markers = [(m["Key"], m["VersionId"], m["IsLatest"]) for m in listed["DeleteMarkers"]]
        self.assertEqual(markers, [("doc", marker, True)])

        # Deleting one version removes just that version.
        gone = self.s3.delete_object(Bucket=bucket, Key="doc", VersionId=v1)
        self.assertEqual(gone["VersionId"], v1)
        self.assert_error("NoSuchVersion", 404, self.s3.get_object, Bucket=bucket, Key="doc", VersionId=v1)
        listed = self.s3.list_object_versions(Bucket=bucket)
        self.assertEqual([v["VersionId"] for v in listed["Versions"]], [v2])
        self.assertEqual([m["VersionId"] for m in listed["DeleteMarkers"]], [marker])

        # Deleting the delete marker brings the previous version back.
        undone = self.s3.delete_object(Bucket=bucket, Key="doc", VersionId=marker)
        self.assertTrue(undone["DeleteMarker"])
        self.assertEqual(self.get(bucket, "doc"), b"version two!")
        listed = self.s3.list_object_versions(Bucket=bucket)
        self.assertEqual([(v["VersionId"], v["IsLatest"]) for v in listed["Versions"]], [(v2, True)])
        self.assertNotIn("DeleteMarkers", listed)

    def test_versions_listing_pagination(self):
        bucket = self.new_bucket()
        self.enable(bucket)
        expected = []
        for key in ("k1", "k2", "k3"):
            ids = [self.put(bucket, key, f"{key}-{n}".encode())["VersionId"] for n in range(3)]
            expected.extend((key, vid) for vid in reversed(ids))
        seen, kwargs = [], {}
        while True:
            page = self.s3.list_object_versions(Bucket=bucket, MaxKeys=4, **kwargs)
            seen.extend((v["Key"], v["VersionId"]) for v in page.get("Versions", []))
            if not page["IsTruncated"]:
                break
            kwargs = {"KeyMarker": page["NextKeyMarker"], "VersionIdMarker": page["NextVersionIdMarker"]}
        self.assertEqual(seen, expected)

    def test_delete_objects_with_versions(self):
        bucket = self.new_bucket()
        self.enable(bucket)
        v1 = self.put(bucket, "x", b"1")["VersionId"]
        v2 = self.put(bucket, "x", b"2")["VersionId"]
        response = self.s3.delete_objects(
            Bucket=bucket, Delete={"Objects": [{"Key": "x", "VersionId": v1}, {"Key": "y"}]}
        )
        by_key = {d["Key"]: d for d in response["Deleted"]}
        self.assertEqual(by_key["x"]["VersionId"], v1)
        self.assertTrue(by_key["y"].get("DeleteMarker"))
        self.assertTrue(by_key["y"].get("DeleteMarkerVersionId"))
        listed = self.s3.list_object_versions(Bucket=bucket)
        self.assertEqual([(v["Key"], v["VersionId"]) for v in listed["Versions"]], [("x", v2)])
        self.assertEqual([m["Key"] for m in listed["DeleteMarkers"]], ["y"])

    def test_suspended(self):
        bucket = self.new_bucket()
        self.enable(bucket)
        v1 = self.put(bucket, "s", b"enabled")["VersionId"]
        self.s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Suspended"})
        self.assertEqual(self.s3.get_bucket_versioning(Bucket=bucket)["Status"], "Suspended")
        put = self.put(bucket, "s", b"suspended")
        self.assertIn(put.get("VersionId"), (None, "null"))
        self.put(bucket, "s", b"suspended again")  # replaces the null version
        versions = self.s3.list_object_versions(Bucket=bucket)["Versions"]
        self.assertEqual([(v["VersionId"], v["IsLatest"]) for v in versions], [("null", True), (v1, False)])
        self.assertEqual(self.get(bucket, "s"), b"suspended again")
        self.assertEqual(self.get(bucket, "s", VersionId="null"), b"suspended again")
        self.assertEqual(self.get(bucket, "s", VersionId=v1), b"enabled")


class PresignedTests(Boto3Case):
    def fetch(self, url, method="GET", data=None, headers=None):
        request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, lower(response.headers), response.read()
        except urllib.error.HTTPError as error:
            return error.code, lower(error.headers), error.read()

    def test_presigned_get_and_put(self):
        bucket = self.new_bucket()
        body = data_of(70000, seed=50)
        self.put(bucket, "shared file.bin", body)
        url = self.s3.generate_presigned_url(
            "get_object", Params={"Bucket": bucket, "Key": "shared file.bin"}, ExpiresIn=300
        )
        status, headers, got = self.fetch(url)
        self.assertEqual(status, 200, got[:300])
        self.assertEqual(got, body)

        upload = data_of(50000, seed=51)
        put_url = self.s3.generate_presigned_url(
            "put_object", Params={"Bucket": bucket, "Key": "uploaded/\u00e9.bin"}, ExpiresIn=300
        )
        status, headers, got = self.fetch(put_url, method="PUT", data=upload)
        self.assertEqual(status, 200, got[:300])
        self.assertEqual(headers.get("etag"), md5_etag(upload))
        self.assertEqual(self.get(bucket, "uploaded/\u00e9.bin"), upload)

    def test_presigned_response_overrides(self):
        bucket = self.new_bucket()
        self.put(bucket, "f", b"hello")
        url = self.s3.generate_presigned_url(
            "get_object",
            Params={
                "Bucket": bucket,
                "Key": "f",
                "ResponseContentType": "text/x-override",
                "ResponseContentDisposition": "attachment; filename=x.txt",
            },
            ExpiresIn=300,
        )
        status, headers, got = self.fetch(url)
        self.assertEqual(status, 200, got[:300])
        self.assertEqual(headers.get("content-type"), "text/x-override")
        self.assertEqual(headers.get("content-disposition"), "attachment; filename=x.txt")

    def test_expired(self):
        bucket = self.new_bucket()
        self.put(bucket, "f", b"hello")
        url = self.s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "f"}, ExpiresIn=1)
        # The URL answers until its second has passed: ask until it is refused.
        deadline = time.monotonic() + 30
        while True:
            status, headers, body = self.fetch(url)
            if status != 200 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertEqual(status, 403, body)
        self.assertEqual(ET.fromstring(body).findtext("Code"), "AccessDenied")

    def test_tampered_and_wrong_key(self):
        bucket = self.new_bucket()
        self.put(bucket, "f", b"hello")
        self.put(bucket, "g", b"other")
        url = self.s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "f"}, ExpiresIn=300)
        status, _, body = self.fetch(url.replace(f"/{bucket}/f?", f"/{bucket}/g?"))
        self.assertEqual(status, 403, body)
        self.assertEqual(ET.fromstring(body).findtext("Code"), "SignatureDoesNotMatch")
        wrong = client(self.endpoint, secret_key="not-the-secret")
        url = wrong.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "f"}, ExpiresIn=300)
        status, _, body = self.fetch(url)
        self.assertEqual(status, 403, body)
        self.assertEqual(ET.fromstring(body).findtext("Code"), "SignatureDoesNotMatch")


class RestartTests(Boto3Case):
    def test_data_survives_restart_and_a_wiped_drive(self):
        bucket = self.new_bucket()
        versioned = self.new_bucket()
        self.s3.put_bucket_versioning(Bucket=versioned, VersioningConfiguration={"Status": "Enabled"})
        objects = {f"small/{i}": data_of(100 * i + 1, seed=60 + i) for i in range(5)}
        objects["large"] = data_of(3 * MiB + 17, seed=70)
        for key, body in objects.items():
            self.put(bucket, key, body, Metadata={"k": key.replace("/", "-")})
        upload_id = self.s3.create_multipart_upload(Bucket=bucket, Key="multi")["UploadId"]
        parts = [data_of(5 * MiB, 71), data_of(1000, 72)]
        etags = [
            self.s3.upload_part(Bucket=bucket, Key="multi", UploadId=upload_id, PartNumber=n, Body=b)["ETag"]
            for n, b in enumerate(parts, start=1)
        ]
        self.s3.complete_multipart_upload(
            Bucket=bucket,
            Key="multi",
            UploadId=upload_id,
            MultipartUpload={"Parts": [{"PartNumber": n, "ETag": e} for n, e in enumerate(etags, start=1)]},
        )
        objects["multi"] = b"".join(parts)
        v1 = self.put(versioned, "v", b"one")["VersionId"]
        self.put(versioned, "v", b"two")
        pending = self.s3.create_multipart_upload(Bucket=bucket, Key="in-flight")["UploadId"]

        def check(s3):
            for key, body in objects.items():
                got = s3.get_object(Bucket=bucket, Key=key)
                self.assertEqual(got["Body"].read(), body, key)
                if key != "multi":
                    self.assertEqual(got["Metadata"], {"k": key.replace("/", "-")})
            self.assertEqual(s3.get_object(Bucket=versioned, Key="v", VersionId=v1)["Body"].read(), b"one")
            self.assertEqual(s3.get_object(Bucket=versioned, Key="v")["Body"].read(), b"two")
            self.assertEqual(s3.get_bucket_versioning(Bucket=versioned)["Status"], "Enabled")
            uploads = s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
            self.assertEqual([u["UploadId"] for u in uploads], [pending])

        # A plain restart on the same drives.
        self.server.stop()
        self.server.start()
        s3 = client(self.server.endpoint)
        check(s3)

        # One drive replaced by an empty one: everything still reads, and
        # writes work.
        self.server.stop()
        wiped = self.server.drives[1]
        shutil.rmtree(wiped)
        os.makedirs(wiped)
        self.server.start()
        s3 = client(self.server.endpoint)
        check(s3)
        s3.put_object(Bucket=bucket, Key="after", Body=b"written after the wipe")
        self.assertEqual(s3.get_object(Bucket=bucket, Key="after")["Body"].read(), b"written after the wipe")
        self.assertIn("after", [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]])


class AuthAndErrorTests(Boto3Case):
    def test_wrong_secret_key(self):
        bad = client(self.endpoint, secret_key=SECRET_KEY + "x")
        self.assert_error("SignatureDoesNotMatch", 403, bad.list_buckets)
        bucket = self.new_bucket()
        self.assert_error("SignatureDoesNotMatch", 403, bad.put_object, Bucket=bucket, Key="k", Body=b"data")
        self.assert_error("NoSuchKey", 404, self.s3.get_object, Bucket=bucket, Key="k")

    def test_unknown_access_key(self):
        bad = client(self.endpoint, access_key="AKIDONTKNOWYOU", secret_key=SECRET_KEY)
        self.assert_error("InvalidAccessKeyId", 403, bad.list_buckets)

    def test_anonymous_is_denied(self):
        bucket = self.new_bucket()
        self.put(bucket, "private", b"secret")
        for path in ("/", f"/{bucket}", f"/{bucket}/private"):
            with self.subTest(path=path):
                response = raw_request(self.endpoint, "GET", path, sign=False)
                self.assertEqual(response.status, 403, response)
                self.assertEqual(ET.fromstring(response.body).findtext("Code"), "AccessDenied")

    def test_error_document(self):
        bucket = self.new_bucket()
        response = raw_request(self.endpoint, "GET", f"/{bucket}/no/such/key")
        self.assertEqual(response.status, 404, response)
        self.assertTrue(response.headers.get("content-type", "").startswith("application/xml"), response.headers)
        root = ET.fromstring(response.body)
        self.assertEqual(root.tag, "Error")
        self.assertEqual(root.findtext("Code"), "NoSuchKey")
        self.assertTrue(root.findtext("Message"))
        self.assertTrue(root.findtext("RequestId"))
        self.assertEqual(root.findtext("Key"), "no/such/key")
        self.assertEqual(response.headers.get("x-amz-request-id"), root.findtext("RequestId"))

        head = raw_request(self.endpoint, "HEAD", f"/{bucket}/no/such/key")
        self.assertEqual(head.status, 404)
        self.assertEqual(head.body, b"")
        self.assertTrue(head.headers.get("x-amz-request-id"))

    def test_boto3_error_fields(self):
        bad = client(self.endpoint, secret_key="wrong")
        with self.assertRaises(ClientError) as ctx:
            bad.list_buckets()
        response = ctx.exception.response
        self.assertEqual(response["Error"]["Code"], "SignatureDoesNotMatch")
        self.assertTrue(response["Error"]["Message"])
        self.assertTrue(response["ResponseMetadata"]["RequestId"])
        self.assertTrue(response["ResponseMetadata"]["HTTPHeaders"].get("x-amz-request-id"))

    def test_request_ids_differ(self):
        first = self.s3.list_buckets()["ResponseMetadata"]["RequestId"]
        second = self.s3.list_buckets()["ResponseMetadata"]["RequestId"]
        self.assertTrue(first and second and first != second)

    def test_bad_requests_then_server_still_answers(self):
        bucket = self.new_bucket()
        garbage = [
            ("GET", "/%ff%fe", "", b""),
            ("PUT", f"/{bucket}/k", "partNumber=abc&uploadId=x", b"x"),
            ("POST", f"/{bucket}", "delete", b"<not xml"),
            ("GET", f"/{bucket}", "list-type=2&continuation-token=%00%01garbage", b""),
            ("GET", f"/{bucket}/k", "", b""),
        ]
        for method, path, query, body in garbage:
            with self.subTest(method=method, path=path, query=query):
                response = raw_request(self.endpoint, method, path, query, body)
                self.assertGreaterEqual(response.status, 400, response)
                self.assertLess(response.status, 500, response)
                self.assertTrue(response.headers.get("x-amz-request-id"), response)
        self.assertIn(bucket, [b["Name"] for b in self.s3.list_buckets()["Buckets"]])
        self.put(bucket, "after", b"still here")
        self.assertEqual(self.get(bucket, "after"), b"still here")

    def test_credentials_match_server_configuration(self):
        # The credentials the suite uses are the server's (env), not the
        # minioadmin default.
        default = client(self.endpoint, access_key="minioadmin", secret_key="minioadmin")
        self.assert_error("InvalidAccessKeyId", 403, default.list_buckets)
        self.assertTrue(client(self.endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY).list_buckets())


class ConnectionAndConsistencyTests(Boto3Case):
    """Keep-alive after refused requests, and GETs racing overwrites (MinIO
    holds the object's read lock from the metadata read to the end of the
    body: every GET is one whole version with its own headers)."""

    def raw_put_head(self, path, body):
        """The head of a signed HTTP/1.1 PUT of `body` (sent separately)."""
        request = AWSRequest(method="PUT", url=self.endpoint + path, data=body, headers={})
        request.headers["x-amz-content-sha256"] = hashlib.sha256(body).hexdigest()
        S3SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3", REGION).add_auth(request)
        headers = dict(request.headers.items())
        headers["Host"] = f"127.0.0.1:{self.server.port}"
        headers["Content-Length"] = str(len(body))
        lines = [f"PUT {path} HTTP/1.1"] + [f"{k}: {v}" for k, v in headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    def test_early_error_keeps_connection_or_says_close(self):
        """A PUT refused before its body is read (here: NoSuchBucket) must
        either leave the connection usable for the next request or say
        `Connection: close`; otherwise keep-alive clients (boto3, aws-cli,
        mc) that reuse it fail at random (RFC 9112 section 9.6)."""
        bucket = unique_bucket()
        self.s3.create_bucket(Bucket=bucket)
        missing = unique_bucket("missing")
        for size in (10, 100_000):
            with self.subTest(body_size=size):
                body = b"y" * size
                sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=30)
                try:
                    sock.sendall(self.raw_put_head(f"/{missing}/key", body))
                    # Each response is read whole (head, then its body), however
                    # long it takes to arrive.
                    first = http.client.HTTPResponse(sock, method="PUT")
                    first.begin()
                    self.assertEqual(first.status, 404, first.headers)
                    if "close" in (first.getheader("connection") or "").lower():
                        continue  # the client knows not to reuse the connection
                    first.read()
                    # No close announced: the connection must still work.
                    sock.sendall(body)
                    sock.sendall(self.raw_put_head(f"/{bucket}/after", b"abc") + b"abc")
                    second = http.client.HTTPResponse(sock, method="PUT")
                    second.begin()
                    self.assertEqual((second.version, second.status), (11, 200), second.headers)
                    second.read()
                finally:
                    sock.close()

    def test_get_is_consistent_under_concurrent_overwrite(self):
        """Every GET must return one whole version with that version's own
        headers, whatever PUTs of the same key run at the same time."""
        bucket = unique_bucket()
        self.s3.create_bucket(Bucket=bucket)
        # Same size, different bytes: a mixed-up response is a silent one.
        bodies = [bytes([i]) * 200_000 for i in range(6)]
        self.s3.put_object(Bucket=bucket, Key="hot", Body=bodies[0])

        def writer(i):
            c = client(self.endpoint)
            for _ in range(5):
                c.put_object(Bucket=bucket, Key="hot", Body=bodies[i])

        def reader(_):
            c = client(self.endpoint)
            problems = []
            for _ in range(20):
                try:
                    response = c.get_object(Bucket=bucket, Key="hot")
                    got = response["Body"].read()
                except Exception as error:  # noqa: BLE001 - reported below
                    problems.append(f"GET failed: {error!r:.160}")
                    continue
                etag = '"' + hashlib.md5(got).hexdigest() + '"'
                if got not in bodies:
                    problems.append(f"torn body of {len(got)} bytes")
                elif etag != response["ETag"]:
                    problems.append(f"ETag {response['ETag']} with the body of {etag}")
            return problems

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            writes = [pool.submit(writer, i) for i in range(len(bodies))]
            reads = [pool.submit(reader, i) for i in range(2)]
            for w in writes:
                w.result()
            problems = [p for r in reads for p in r.result()]
        self.assertEqual(problems, [])

    # The same race with different sizes: a torn body, not a mixed-up one.
    def test_get_of_overwritten_object_is_complete(self):
        bucket = unique_bucket()
        self.s3.create_bucket(Bucket=bucket)
        bodies = [bytes([i]) * (200_000 + i) for i in range(6)]
        self.s3.put_object(Bucket=bucket, Key="hot", Body=bodies[0])

        def writer(i):
            c = client(self.endpoint)
            for _ in range(5):
                c.put_object(Bucket=bucket, Key="hot", Body=bodies[i])

        def reader(_):
            c = client(self.endpoint)
            failures = []
            for _ in range(20):
                try:
                    c.get_object(Bucket=bucket, Key="hot")["Body"].read()
                except Exception as error:  # noqa: BLE001 - reported below
                    failures.append(f"{error!r:.160}")
            return failures

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            writes = [pool.submit(writer, i) for i in range(len(bodies))]
            reads = [pool.submit(reader, i) for i in range(2)]
            for w in writes:
                w.result()
            failures = [f for r in reads for f in r.result()]
        self.assertEqual(failures, [])


class AdmissionTests(ServerTestCase):
    """A server serving one S3 request at a time that refuses the others
    after a millisecond: boto3 sees 503 SlowDown, and its standard retries
    get through once the slot is free."""

    @classmethod
    def setUpClass(cls):
        unittest.TestCase.setUpClass()
        cls.server = TesseraServer(
            env={"TESSERA_API_REQUESTS_MAX": "1", "TESSERA_API_REQUESTS_DEADLINE": "1ms"}
        ).start()
        cls.endpoint = cls.server.endpoint
        cls.s3 = client(cls.endpoint)

    def test_slow_down_then_retried(self):
        bucket = unique_bucket("admit")
        self.s3.create_bucket(Bucket=bucket)
        # An upload whose client sends its head and part of its body, then
        # stalls: it holds the only slot.
        url = self.s3.generate_presigned_url(
            "put_object", Params={"Bucket": bucket, "Key": "held"}, ExpiresIn=600
        )
        parts = urllib.parse.urlsplit(url)
        held = socket.create_connection((parts.hostname, parts.port), timeout=30)
        held.sendall(
            f"PUT {parts.path}?{parts.query} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            f"Content-Length: 100000\r\n\r\n".encode()
            + b"x" * 1000
        )
        try:
            deadline = time.monotonic() + 20
            while True:
                # Until the held upload has taken its slot, the list passes.
                try:
                    self.s3.list_objects_v2(Bucket=bucket)
                except ClientError as error:
                    code = error.response["Error"].get("Code")
                    status = error.response["ResponseMetadata"]["HTTPStatusCode"]
                    self.assertEqual((code, status), ("SlowDown", 503), error.response)
                    break
                self.assertLess(time.monotonic(), deadline, "the held upload never took the slot")
                time.sleep(0.05)
            patient = client(
                self.endpoint, retries={"total_max_attempts": 10, "mode": "standard"}
            )
            # Told when the server refuses an attempt of the put (boto3 then
            # retries it).
            refused = threading.Event()

            def saw_refusal(response=None, **_):
                if response is not None and response[0].status_code == 503:
                    refused.set()

            patient.meta.events.register("needs-retry.s3.PutObject", saw_refusal)
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                put = pool.submit(patient.put_object, Bucket=bucket, Key="k", Body=b"retried")
                self.assertTrue(refused.wait(30), "the put was never refused")
                self.assertFalse(put.done(), "the put went through while the slot was held")
                held.close()
                held = None
                response = put.result(timeout=60)
            self.assertGreater(response["ResponseMetadata"]["RetryAttempts"], 0)
            got = self.s3.get_object(Bucket=bucket, Key="k")["Body"].read()
            self.assertEqual(got, b"retried")
        finally:
            if held is not None:
                held.close()


if __name__ == "__main__":
    unittest.main()
