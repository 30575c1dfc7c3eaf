"""No 5xx for a valid request, through boto3 and raw signed requests against
a real `tessera server`.

- Listings (ListObjects V1 and V2, ListObjectVersions) whose prefix cannot
  name a stored key (leading `/`, `./`, `../`, `.` or `..` or empty path
  segments, over 1024 bytes, NUL) answer 200 with an empty listing, with or
  without a delimiter; a marker or start-after that names no key still
  positions the page (keys after it, truncated as usual). AWS answers these
  the same way (an empty listing for a prefix over 1024 bytes too); MinIO
  answers some of them with an error, and Tessera follows AWS.
- UploadPartCopy from a specific version of a versioned object, several
  parts with ranges, then CompleteMultipartUpload.
- MinIO's admin API (`/minio/admin/v3/...`, what `mc admin` sends) answers
  501 NotImplemented naming the API, by any method, signed or not, except
  `GET /minio/admin/v3/info` (`mc admin info`, tested in
  test_admin_info.py); health and metrics stay served.
- A sweep of every operation the gateway routes with edge-case but valid
  inputs: no answer is a 5xx, except 501 NotImplemented for the operations
  Tessera deliberately does not implement (as AWS answers an operation it
  does not implement); where the S3 code is known it is asserted.
"""

import base64
import hashlib
import os
import time
import unittest
import urllib.parse
import xml.etree.ElementTree as ET

from botocore.exceptions import ClientError

from s3util import client, error_of, raw_request
from tessera_server import ServerTestCase, unique_bucket

MiB = 1 << 20
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"

# Prefixes no stored key can start with.
DEAD_PREFIXES = [
    "/",
    "//",
    "/a",
    "./",
    "../",
    "../a/b",
    "a/./",
    "a/../",
    "a/b/../b",
    "a//",
    "a//b",
    "a/\0",
    "x/xl.meta/",
    "k" * 1025,
    "a/" + "s" * 300,
]


def q(value):
    """A query value as S3 clients encode it (everything but unreserved)."""
    return urllib.parse.quote(value, safe="-_.~")


def path_of(bucket, key=""):
    return "/" + bucket + ("/" + urllib.parse.quote(key, safe="/-_.~") if key else "")


def code_of(body):
    try:
        return ET.fromstring(body).findtext("Code")
    except ET.ParseError:
        return None


def entries(body):
    """(keys, common prefixes, versions + delete markers) of a listing."""
    root = ET.fromstring(body)
    keys = [e.findtext(NS + "Key") for e in root.iter(NS + "Contents")]
    prefixes = [e.findtext(NS + "Prefix") for e in root.iter(NS + "CommonPrefixes")]
    versions = [e.findtext(NS + "Key") for e in root.iter(NS + "Version")]
    versions += [e.findtext(NS + "Key") for e in root.iter(NS + "DeleteMarker")]
    return keys, prefixes, versions


def truncated(body):
    return ET.fromstring(body).findtext(NS + "IsTruncated") == "true"


LISTINGS = {
    "v1": "",
    "v2": "list-type=2",
    "versions": "versions=",
}


class ListingsOfPrefixesThatNameNoKey(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.s3 = client(cls.endpoint)
        cls.bucket = unique_bucket()
        cls.s3.create_bucket(Bucket=cls.bucket)
        cls.keys = ["a/b", "a/c/d", "z"]
        for k in cls.keys:
            cls.s3.put_object(Bucket=cls.bucket, Key=k, Body=b"x")

    def list_raw(self, kind, extra):
        query = "&".join(p for p in (LISTINGS[kind], extra) if p)
        return raw_request(self.endpoint, "GET", "/" + self.bucket, query)

    def test_prefix_naming_no_key_lists_nothing(self):
        for prefix in DEAD_PREFIXES:
            for kind in LISTINGS:
                for delim in ("", "&delimiter=d", "&delimiter=%2F", "&delimiter=ab"):
                    with self.subTest(prefix=prefix[:20], kind=kind, delim=delim):
                        r = self.list_raw(kind, "prefix=" + q(prefix) + delim)
                        self.assertEqual(r.status, 200, r)
                        self.assertEqual(entries(r.body), ([], [], []), r)
                        self.assertFalse(truncated(r.body), r)

    def test_boto3_prefix_slash(self):
        """The issue's report: Prefix='/' (with Delimiter='d') was 503 SlowDown."""
        for delimiter in ({}, {"Delimiter": "d"}, {"Delimiter": "/"}):
            out = self.s3.list_objects_v2(Bucket=self.bucket, Prefix="/", **delimiter)
            self.assertEqual(out["KeyCount"], 0)
            self.assertNotIn("Contents", out)
            out = self.s3.list_objects(Bucket=self.bucket, Prefix="/", **delimiter)
            self.assertNotIn("Contents", out)
            out = self.s3.list_object_versions(Bucket=self.bucket, Prefix="../", **delimiter)
            self.assertNotIn("Versions", out)

    def test_live_prefixes_next_to_dead_ones_still_list(self):
        """A prefix with `.` or `..` as a partial last segment can still name
        keys (`a/.b`); the rule only drops whole segments."""
        self.s3.put_object(Bucket=self.bucket, Key="a/..b", Body=b"y")
        self.addCleanup(self.s3.delete_object, Bucket=self.bucket, Key="a/..b")
        for kind in LISTINGS:
            r = self.list_raw(kind, "prefix=" + q("a/.."))
            self.assertEqual(r.status, 200, r)
            keys, _, versions = entries(r.body)
            self.assertEqual(keys or versions, ["a/..b"])

    def test_markers_naming_no_key_position_the_page(self):
        cases = [
            ("/", self.keys),
            ("../", self.keys),
            ("a/../", self.keys),
            ("a/\0", self.keys),
            ("a/b/../", ["a/c/d", "z"]),
            ("x" * 1100, ["z"]),
            ("z/../", []),
        ]
        for marker, want in cases:
            for kind, name in (("v1", "marker"), ("v2", "start-after"), ("versions", "key-marker")):
                with self.subTest(marker=marker[:20], kind=kind):
                    r = self.list_raw(kind, f"{name}={q(marker)}")
                    self.assertEqual(r.status, 200, r)
                    keys, _, versions = entries(r.body)
                    self.assertEqual(keys if kind != "versions" else versions, want)
                    # Truncated at one entry: the first key after the marker.
                    r = self.list_raw(kind, f"{name}={q(marker)}&max-keys=1")
                    self.assertEqual(r.status, 200, r)
                    keys, _, versions = entries(r.body)
                    self.assertEqual(keys if kind != "versions" else versions, want[:1])
                    self.assertEqual(truncated(r.body), len(want) > 1, r)

    def test_dead_prefix_on_missing_bucket_is_still_no_such_bucket(self):
        r = raw_request(self.endpoint, "GET", "/" + unique_bucket(), "list-type=2&prefix=%2F")
        self.assertEqual((r.status, code_of(r.body)), (404, "NoSuchBucket"), r)

    def test_boto3_paginates_with_dead_start_after(self):
        pages = self.s3.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, StartAfter="../", PaginationConfig={"PageSize": 1}
        )
        got = [o["Key"] for p in pages for o in p.get("Contents", [])]
        self.assertEqual(got, self.keys)


class UploadPartCopyFromVersion(ServerTestCase):
    """A multipart upload of a versioned object copied part by part from a
    specific source version (ranges and a whole-object part), completed."""

    def test_parts_copied_from_an_older_version(self):
        s3 = client(self.endpoint)
        bucket = unique_bucket()
        s3.create_bucket(Bucket=bucket)
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        data = os.urandom(11 * MiB)
        old = s3.put_object(Bucket=bucket, Key="src", Body=data)["VersionId"]
        s3.put_object(Bucket=bucket, Key="src", Body=b"newer")
        small = os.urandom(1000)
        old_small = s3.put_object(Bucket=bucket, Key="small", Body=small)["VersionId"]
        s3.delete_object(Bucket=bucket, Key="small")
        for dst in ("dst", "src"):
            up = s3.create_multipart_upload(Bucket=bucket, Key=dst)["UploadId"]
            plan = [
                ("src", old, (0, 5 * MiB - 1)),
                ("src", old, (5 * MiB, 10 * MiB)),
                ("src", old, None),
                ("small", old_small, (10, 99)),
            ]
            parts, want = [], b""
            for n, (key, vid, rng) in enumerate(plan, 1):
                extra = {"CopySourceRange": f"bytes={rng[0]}-{rng[1]}"} if rng else {}
                src = data if key == "src" else small
                want += src[rng[0]:rng[1] + 1] if rng else src
                out = s3.upload_part_copy(
                    Bucket=bucket, Key=dst, UploadId=up, PartNumber=n,
                    CopySource={"Bucket": bucket, "Key": key, "VersionId": vid}, **extra,
                )
                self.assertEqual(out["CopySourceVersionId"], vid)
                parts.append({"PartNumber": n, "ETag": out["CopyPartResult"]["ETag"]})
            done = s3.complete_multipart_upload(
                Bucket=bucket, Key=dst, UploadId=up, MultipartUpload={"Parts": parts}
            )
            self.assertTrue(done["ETag"].endswith('-4"'), done["ETag"])
            got = s3.get_object(Bucket=bucket, Key=dst)
            self.assertEqual(got["VersionId"], done["VersionId"])
            self.assertEqual(hashlib.md5(got["Body"].read()).hexdigest(), hashlib.md5(want).hexdigest())
        # The source version copied from is untouched.
        got = s3.get_object(Bucket=bucket, Key="src", VersionId=old)["Body"].read()
        self.assertEqual(got, data)


class AdminApi(ServerTestCase):
    PATHS = [
        ("GET", "/minio/admin/v3/list-access-keys-bulk", ""),
        ("POST", "/minio/admin/v3/service", "action=restart"),
        ("HEAD", "/minio/admin/v3/info", ""),
        ("GET", "/minio/admin", ""),
    ]

    def test_admin_api_is_not_implemented_signed_or_not(self):
        for method, path, query in self.PATHS:
            for sign in (True, False):
                with self.subTest(method=method, path=path, sign=sign):
                    r = raw_request(self.endpoint, method, path, query, sign=sign)
                    self.assertEqual(r.status, 501, r)
                    if method != "HEAD":
                        self.assertEqual(code_of(r.body), "NotImplemented", r)
                        message = ET.fromstring(r.body).findtext("Message")
                        self.assertIn("MinIO admin API", message)
                        self.assertIn(path, message)

    # The IAM calls, with what each lacks when sent bare.
    IAM_PATHS = [
        ("GET", "/minio/admin/v3/list-users", ""),
        ("PUT", "/minio/admin/v3/add-user", "accessKey=x"),
        ("PUT", "/minio/admin/v3/add-user", ""),
        ("DELETE", "/minio/admin/v3/remove-user", "accessKey=nobody-such"),
        ("GET", "/minio/admin/v3/user-info", ""),
        ("PUT", "/minio/admin/v3/set-user-status", "accessKey=x&status=maybe"),
        ("PUT", "/minio/admin/v3/add-canned-policy", "name=p"),
        ("GET", "/minio/admin/v3/info-canned-policy", "name=nothing-such"),
        ("POST", "/minio/admin/v3/idp/builtin/policy/attach", ""),
        ("PUT", "/minio/admin/v3/update-group-members", ""),
        ("GET", "/minio/admin/v3/group", "group=none-such"),
        ("PUT", "/minio/admin/v3/set-group-status", "group=g&status=enabled"),
        ("GET", "/minio/admin/v3/idp/builtin/policy-entities", ""),
        ("GET", "/minio/admin/v3/list-service-accounts", ""),
        ("PUT", "/minio/admin/v3/add-service-account", ""),
        ("POST", "/minio/admin/v3/update-service-account", "accessKey=x"),
        ("GET", "/minio/admin/v3/info-service-account", "accessKey=x"),
        ("DELETE", "/minio/admin/v3/delete-service-account", "accessKey=x"),
        ("PUT", "/minio/admin/v3/set-bucket-quota", ""),
        ("PUT", "/minio/admin/v3/set-bucket-quota", "bucket=no-such-bucket-q"),
        ("GET", "/minio/admin/v3/get-bucket-quota", "bucket=no-such-bucket-q"),
        ("GET", "/minio/admin/v3/get-bucket-quota", "bucket=..bad"),
    ]

    def test_iam_calls_refuse_bad_input_with_4xx(self):
        """Unsigned: 403. Signed by the root user, with no or an
        undecryptable body or unknown names: a 4xx naming the problem,
        never a 5xx."""
        for method, path, query in self.IAM_PATHS:
            with self.subTest(method=method, path=path, query=query):
                r = raw_request(self.endpoint, method, path, query, sign=False)
                self.assertEqual((r.status, code_of(r.body)), (403, "AccessDenied"), r)
                r = raw_request(self.endpoint, method, path, query, body=b"\x00garbage")
                if path.endswith(("/list-users", "/list-service-accounts", "/policy-entities")):
                    # Takes no body: the (sealed) list of none.
                    self.assertEqual(r.status, 200, r)
                else:
                    self.assertTrue(400 <= r.status < 500, r)

    def test_admin_api_with_a_credential_of_another_form(self):
        """What `mc admin` sends: SigV4 with a scope that names no region;
        the credential is taken and the signature checked, never the
        'Credential is mal-formed' it got before."""
        now = time.gmtime()
        date = time.strftime("%Y%m%dT%H%M%SZ", now)
        headers = {
            "Authorization": f"AWS4-HMAC-SHA256 Credential=tessera-test-user/{date[:8]}//s3/aws4_request, "
                             "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" + "0" * 64,
            "x-amz-date": date,
            "x-amz-content-sha256": hashlib.sha256(b"").hexdigest(),
        }
        r = raw_request(self.endpoint, "GET", "/minio/admin/v3/info", "", headers=headers, sign=False)
        self.assertEqual((r.status, code_of(r.body)), (403, "SignatureDoesNotMatch"), r)

    def test_unsigned_sts_forms_are_4xx(self):
        """Unsigned form POSTs to `/` are web identity STS calls: without a
        provider configured, or with garbage, a 4xx STS error."""
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        for body in (b"", b"Action=AssumeRoleWithWebIdentity&Version=2011-06-15&WebIdentityToken=x.y.z",
                     b"Action=AssumeRole&Version=2011-06-15", b"%zz=&&=", b"\xff\xfe" * 100,
                     b"Action=AssumeRoleWithWebIdentity&Version=2011-06-15&WebIdentityToken=" + b"a" * 70000):
            with self.subTest(body=body[:40]):
                r = raw_request(self.endpoint, "POST", "/", "", body=body, headers=form, sign=False)
                self.assertTrue(400 <= r.status < 500, r)

    def test_health_and_metrics_stay_served(self):
        r = raw_request(self.endpoint, "GET", "/minio/health/live", sign=False)
        self.assertEqual(r.status, 200, r)
        r = raw_request(self.endpoint, "GET", "/minio/health/cluster", sign=False)
        self.assertEqual(r.status, 200, r)
        # Metrics want a bearer token: refused without one, never 501.
        r = raw_request(self.endpoint, "GET", "/minio/v2/metrics/cluster", sign=False)
        self.assertLess(r.status, 500, r)
        self.assertNotEqual(code_of(r.body), "NotImplemented", r)

    def test_bucket_named_like_admin_is_untouched(self):
        """Only `/minio/admin` itself and paths under it are the admin API."""
        r = raw_request(self.endpoint, "GET", "/minio-admin", "")
        self.assertEqual((r.status, code_of(r.body)), (404, "NoSuchBucket"), r)


# Operations Tessera deliberately does not implement: 501 NotImplemented is
# their answer (as AWS answers an operation it does not implement).
NOT_IMPLEMENTED_OK = {
    ("PUT", "lifecycle"), ("PUT", "cors"), ("PUT", "object-lock"),
    ("GET", "retention"), ("GET", "legal-hold"),
    ("PUT", "retention"), ("PUT", "legal-hold"), ("POST", "form"),
    ("PUT", "website"), ("GET", "website"), ("GET", "logging"), ("GET", "replication"),
    ("GET", "notification"), ("GET", "accelerate"), ("GET", "requestPayment"),
    ("GET", "analytics"), ("GET", "metrics"), ("GET", "inventory"), ("GET", "intelligent-tiering"),
    ("GET", "publicAccessBlock"),
    ("DELETE", "website"), ("DELETE", "replication"), ("GET", "torrent"),
    ("POST", "restore"), ("POST", "select"), ("PUT", "renameObject"),
}


class SweepOfEveryRoutedOperation(ServerTestCase):
    """Every operation `handlers::dispatch` routes, with edge-case but valid
    inputs; no answer is a 5xx but the deliberate 501s above."""

    KEYS = [
        "plain",
        "uni/\u00e9\u00e8\u4e2d\U0001f600",
        "dir/",
        "trailing/slash/",
        "sp ace+plus%percent",
        # 1024 bytes, the longest key, in segments of at most 255.
        ("x" * 254 + "/") * 4 + "xxxx",
        "?question#hash&amp=",
        "deep/" * 50 + "leaf",
    ]

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.s3 = client(cls.endpoint)
        cls.bucket = unique_bucket()
        cls.vbucket = unique_bucket("v")
        cls.s3.create_bucket(Bucket=cls.bucket)
        cls.s3.create_bucket(Bucket=cls.vbucket)
        cls.s3.put_bucket_versioning(
            Bucket=cls.vbucket, VersioningConfiguration={"Status": "Enabled"}
        )

    def check(self, r, what, expect=None):
        """No 5xx (but a deliberate 501); `expect` (status, code) if known."""
        code = code_of(r.body) if r.body else None
        if r.status >= 500:
            self.assertTrue(
                r.status == 501 and (code in (None, "NotImplemented")) and what in NOT_IMPLEMENTED_OK,
                f"{what}: {r}",
            )
        if expect is not None:
            status, want = expect
            self.assertEqual(r.status, status, f"{what}: {r}")
            if want is not None and r.body:
                self.assertEqual(code, want, f"{what}: {r}")

    def req(self, method, bucket, key="", query="", body=b"", headers=None, what=None, expect=None):
        r = raw_request(self.endpoint, method, path_of(bucket, key), query, body=body, headers=headers)
        self.check(r, what or (method, query.split("=")[0]), expect)
        return r

    def test_objects_with_edge_case_keys(self):
        b = self.bucket
        for key in self.KEYS:
            with self.subTest(key=key[:40]):
                self.s3.put_object(Bucket=b, Key=key, Body=b"0123456789")
                self.req("HEAD", b, key, expect=(200, None))
                self.req("GET", b, key, expect=(200, None))
                # Ranges: past the end (416), suffix longer than the object
                # (whole object), open-ended, and several (S3 answers the
                # whole object for a multi-range request).
                self.req("GET", b, key, headers={"Range": "bytes=10-"}, expect=(416, "InvalidRange"))
                self.req("GET", b, key, headers={"Range": "bytes=100-200"}, expect=(416, "InvalidRange"))
                self.req("GET", b, key, headers={"Range": "bytes=-100"}, expect=(206, None))
                self.req("GET", b, key, headers={"Range": "bytes=9-100"}, expect=(206, None))
                self.req("GET", b, key, headers={"Range": "bytes=0-1,3-4"})
                self.req("GET", b, key, headers={"Range": "bytes=5-2"}, expect=(200, None))
                self.req("GET", b, key, "partNumber=1")
                # AWS: a part number past the object's parts is 416.
                self.req("GET", b, key, "partNumber=2", expect=(416, "InvalidPartNumber"))
                # The largest byte position there is: the whole object.
                r = self.req("GET", b, key, headers={"Range": "bytes=0-18446744073709551615"},
                             expect=(206, None))
                self.assertEqual(r.body, b"0123456789")
                self.assertEqual(r.headers.get("content-range"), "bytes 0-9/10")
                self.req("GET", b, key, headers={"Range": "bytes=-18446744073709551615"},
                         expect=(206, None))
                self.req("GET", b, key, "versionId=null", expect=(200, None))
                etag = self.s3.head_object(Bucket=b, Key=key)["ETag"]
                self.req("GET", b, key, headers={"If-Match": etag}, expect=(200, None))
                self.req("GET", b, key, headers={"If-Match": '"nope"'}, expect=(412, "PreconditionFailed"))
                self.req("GET", b, key, headers={"If-None-Match": etag}, expect=(304, None))
                self.req("GET", b, key, headers={"If-None-Match": "*"}, expect=(304, None))
                self.req("GET", b, key, headers={"If-Modified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"}, expect=(200, None))
                self.req("GET", b, key, headers={"If-Unmodified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"}, expect=(412, "PreconditionFailed"))
                self.req("GET", b, key, headers={"If-Modified-Since": "not a date"}, expect=(200, None))
                self.req("GET", b, key, "response-content-type=text%2Fplain&response-content-disposition=attachment")
                self.req("GET", b, key, "acl", what=("GET", "acl"), expect=(200, None))
                self.req("GET", b, key, "tagging", what=("GET", "tagging"), expect=(200, None))
                self.req("GET", b, key, "attributes", what=("GET", "attributes"),
                         headers={"x-amz-object-attributes": "ETag,ObjectSize,ObjectParts,StorageClass,Checksum"},
                         expect=(200, None))
                self.req("GET", b, key, "retention", what=("GET", "retention"))
                self.req("GET", b, key, "legal-hold", what=("GET", "legal-hold"))
                tags = b'<Tagging><TagSet><Tag><Key>k</Key><Value></Value></Tag></TagSet></Tagging>'
                self.req("PUT", b, key, "tagging", body=tags, what=("PUT", "obj-tagging"), expect=(200, None))
                self.req("DELETE", b, key, "tagging", what=("DELETE", "obj-tagging"), expect=(204, None))
                # CopyObject onto itself with new metadata, and to a new key.
                src = urllib.parse.quote(f"{b}/{key}", safe="/")
                self.req("PUT", b, key, headers={"x-amz-copy-source": src, "x-amz-metadata-directive": "REPLACE"},
                         what=("PUT", "copy"), expect=(200, None))
                if len(key) <= 1019:
                    self.req("PUT", b, key + ".copy",
                             headers={"x-amz-copy-source": src, "x-amz-copy-source-if-none-match": '"nope"'},
                             what=("PUT", "copy"), expect=(200, None))
                self.req("DELETE", b, key, expect=(204, None))
                self.req("DELETE", b, key, expect=(204, None))
                self.req("HEAD", b, key, expect=(404, None))
                self.req("GET", b, key, expect=(404, "NoSuchKey"))

    def test_empty_and_missing_objects(self):
        b = self.bucket
        self.s3.put_object(Bucket=b, Key="empty", Body=b"")
        self.req("GET", b, "empty", expect=(200, None))
        self.req("GET", b, "empty", headers={"Range": "bytes=0-"}, expect=(416, "InvalidRange"))
        self.req("GET", b, "empty", headers={"Range": "bytes=-1"})
        self.req("GET", b, "empty", "partNumber=1")
        self.req("GET", b, "absent", "tagging", what=("GET", "tagging"), expect=(404, "NoSuchKey"))
        self.req("GET", b, "absent", "versionId=null")
        self.req("DELETE", b, "absent", expect=(204, None))
        self.req("DELETE", b, "absent", "versionId=null", expect=(204, None))
        self.req("GET", unique_bucket(), "k", expect=(404, "NoSuchBucket"))
        # A key over 1024 bytes is refused, not an error of the server.
        self.req("PUT", b, "k" * 1025, body=b"x", expect=(400, "KeyTooLongError"))
        # Keys the layout cannot hold (`..` or empty segments, `xl.meta`):
        # a 4xx (AWS stores them; MinIO and Tessera refuse them).
        for key in ("a/../b", "./a", "x/xl.meta", "a//b", "s" * 256):
            r = raw_request(self.endpoint, "PUT", "/" + b + "/" + key, body=b"x")
            self.check(r, ("PUT", "bad-key"))
            self.assertGreaterEqual(r.status, 400, r)

    def test_listings_with_edge_case_arguments(self):
        b = self.bucket
        for k in ("a/b", "a/é/ü", "d/", "m-x-y"):
            self.s3.put_object(Bucket=b, Key=k, Body=b"1")
        args = [
            "", "max-keys=0", "max-keys=1", "max-keys=2147483647", "max-keys=99999999999",
            "delimiter=%2F", "delimiter=-x-", "delimiter=%2F%2F", "delimiter=%C3%A9",
            "prefix=a%2F&delimiter=%2F", "prefix=a%2F%2F", "prefix=d%2F", "prefix=%2F",
            "encoding-type=url", "encoding-type=url&delimiter=%2F&prefix=a%2F",
            "prefix=" + "p" * 1024, "prefix=" + "p" * 2000, "delimiter=" + "d" * 1024,
            "fetch-owner=true", "marker=zzzz", "start-after=zzzz",
        ]
        for kind, base in LISTINGS.items():
            for a in args:
                query = "&".join(p for p in (base, a) if p)
                with self.subTest(query=query[:60]):
                    r = self.req("GET", b, query=query, what=("GET", "list"), expect=(200, None))
                    if "max-keys=0" in a:
                        self.assertEqual(entries(r.body), ([], [], []))
        self.req("GET", b, query="max-keys=-1", expect=(400, "InvalidArgument"))
        self.req("GET", b, query="list-type=3", expect=(400, "InvalidArgument"))
        self.req("GET", b, query="encoding-type=xml", expect=(400, "InvalidArgument"))
        self.req("GET", b, query="list-type=2&continuation-token=%21%21", expect=(400, "InvalidArgument"))
        token = base64.b64encode(b"../").decode()
        self.req("GET", b, query="list-type=2&continuation-token=" + q(token), expect=(200, None))
        self.req("GET", b, query="versions=&key-marker=a%2Fb&version-id-marker=null", expect=(200, None))
        self.req("GET", b, query="versions=&key-marker=a%2Fb&version-id-marker=bad", expect=(400, "InvalidArgument"))
        # Listings of a missing bucket.
        for base in LISTINGS.values():
            self.req("GET", unique_bucket(), query=base, what=("GET", "list"), expect=(404, "NoSuchBucket"))

    def test_bucket_operations_and_sub_resources(self):
        b = self.bucket
        self.req("HEAD", b, expect=(200, None))
        self.req("GET", "", what=("GET", "list-buckets"), expect=(200, None))
        for sub in ("location", "versioning", "uploads", "versions", "acl", "encryption",
                    "policy", "object-lock", "tagging", "lifecycle", "cors"):
            with self.subTest(sub=sub):
                r = self.req("GET", b, query=sub + "=", what=("GET", sub))
                self.assertLess(r.status, 500, r)
        for sub in ("website", "logging", "replication", "notification", "accelerate",
                    "requestPayment", "analytics", "metrics", "inventory", "intelligent-tiering",
                    "ownershipControls", "publicAccessBlock", "policyStatus"):
            with self.subTest(sub=sub):
                self.req("GET", b, query=sub + "=", what=("GET", sub))
        bodies = {
            "policy": b'{"Version":"2012-10-17","Statement":[]}',
            "tagging": b"<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tagging>",
            "lifecycle": b"<LifecycleConfiguration></LifecycleConfiguration>",
            "cors": b"<CORSConfiguration></CORSConfiguration>",
            "object-lock": b"<ObjectLockConfiguration></ObjectLockConfiguration>",
            "acl": b"",
            "website": b"<WebsiteConfiguration></WebsiteConfiguration>",
        }
        md5 = lambda d: base64.b64encode(hashlib.md5(d).digest()).decode()
        for sub, body in bodies.items():
            with self.subTest(put=sub):
                expect = (204, None) if sub == "tagging" else None
                self.req("PUT", b, query=sub + "=", body=body, headers={"Content-MD5": md5(body)},
                         what=("PUT", sub), expect=expect)
        for sub in ("policy", "tagging", "lifecycle", "cors", "encryption", "website", "replication"):
            with self.subTest(delete=sub):
                self.req("DELETE", b, query=sub + "=", what=("DELETE", sub))
        ver = b'<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>'
        self.req("PUT", b, query="versioning=", body=ver, what=("PUT", "versioning"), expect=(200, None))
        self.req("PUT", b, query="versioning=", body=b"<VersioningConfiguration/>", what=("PUT", "versioning"))
        self.req("PUT", b, query="versioning=", body=b"not xml", what=("PUT", "versioning"))
        self.req("PUT", b, what=("PUT", "create"), expect=(409, "BucketAlreadyOwnedByYou"))
        self.req("PUT", "ab", what=("PUT", "create"), expect=(400, "InvalidBucketName"))
        self.req("DELETE", unique_bucket(), what=("DELETE", "bucket"), expect=(404, "NoSuchBucket"))
        self.req("HEAD", unique_bucket(), expect=(404, None))
        self.req("PATCH", b, what=("PATCH", ""))
        # DeleteObjects: quiet, absent keys, empty-ish and unicode keys.
        body = ("<Delete><Quiet>false</Quiet>" + "".join(
            f"<Object><Key>{k}</Key></Object>" for k in ("absent", "é/ü", "dir/")
        ) + "</Delete>").encode()
        self.req("POST", b, query="delete=", body=body, headers={"Content-MD5": md5(body)},
                 what=("POST", "delete"), expect=(200, None))
        self.req("POST", b, query="delete=", body=b"<Delete></Delete>",
                 headers={"Content-MD5": md5(b"<Delete></Delete>")}, what=("POST", "delete"))
        self.req("POST", b, what=("POST", "form"))

    def test_multipart_edge_cases(self):
        b = self.vbucket
        key = "mp/\u00e9/x/"
        self.s3.put_object(Bucket=b, Key="src", Body=os.urandom(6 * MiB))
        up = self.s3.create_multipart_upload(Bucket=b, Key=key)["UploadId"]
        uid = "uploadId=" + q(up)
        self.req("GET", b, key, uid, what=("GET", "list-parts"), expect=(200, None))
        self.req("GET", b, key, uid + "&max-parts=0", what=("GET", "list-parts"))
        self.req("GET", b, key, uid + "&max-parts=99999999999", what=("GET", "list-parts"))
        self.req("GET", b, key, uid + "&part-number-marker=10000", what=("GET", "list-parts"), expect=(200, None))
        self.req("PUT", b, key, uid + "&partNumber=0", body=b"x", what=("PUT", "part"), expect=(400, "InvalidArgument"))
        self.req("PUT", b, key, uid + "&partNumber=10001", body=b"x", what=("PUT", "part"), expect=(400, "InvalidArgument"))
        self.req("PUT", b, key, uid + "&partNumber=1", body=b"", what=("PUT", "part"), expect=(200, None))
        self.req("PUT", b, key, uid + "&partNumber=2",
                 headers={"x-amz-copy-source": f"{b}/src", "x-amz-copy-source-range": "bytes=0-0"},
                 what=("PUT", "part-copy"), expect=(200, None))
        self.req("PUT", b, key, uid + "&partNumber=3",
                 headers={"x-amz-copy-source": f"{b}/src", "x-amz-copy-source-range": "bytes=0-99999999"},
                 what=("PUT", "part-copy"), expect=(416, "InvalidRange"))
        self.req("PUT", b, key, uid + "&partNumber=3",
                 headers={"x-amz-copy-source": f"{b}/src?versionId=null"},
                 what=("PUT", "part-copy"))
        # The source's conditions, as CopyObject has them.
        etag = self.s3.head_object(Bucket=b, Key="src")["ETag"]
        for cond, ok in (({"x-amz-copy-source-if-match": '"nope"'}, False),
                         ({"x-amz-copy-source-if-match": etag}, True),
                         ({"x-amz-copy-source-if-none-match": etag}, False),
                         ({"x-amz-copy-source-if-unmodified-since": "Sat, 01 Jan 2000 00:00:00 GMT"}, False),
                         ({"x-amz-copy-source-if-modified-since": "Sat, 01 Jan 2000 00:00:00 GMT"}, True)):
            with self.subTest(cond=cond):
                self.req("PUT", b, key, uid + "&partNumber=4",
                         headers={"x-amz-copy-source": f"{b}/src", "x-amz-copy-source-range": "bytes=0-9", **cond},
                         what=("PUT", "part-copy"), expect=(200, None) if ok else (412, "PreconditionFailed"))
        self.req("PUT", b, key, uid + "&partNumber=3",
                 headers={"x-amz-copy-source": f"{b}/absent"},
                 what=("PUT", "part-copy"), expect=(404, "NoSuchKey"))
        self.req("GET", b, query="uploads=", what=("GET", "uploads"), expect=(200, None))
        self.req("GET", b, query="uploads=&prefix=%2F&delimiter=%2F&max-uploads=0", what=("GET", "uploads"))
        self.req("GET", b, query="uploads=&key-marker=" + q("../") + "&upload-id-marker=x", what=("GET", "uploads"))
        # Completing with no parts, wrong ETags, out of order: 4xx.
        for body in (b"<CompleteMultipartUpload></CompleteMultipartUpload>",
                     b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\"00\"</ETag></Part></CompleteMultipartUpload>",
                     b"<CompleteMultipartUpload><Part><PartNumber>2</PartNumber><ETag>x</ETag></Part>"
                     b"<Part><PartNumber>1</PartNumber><ETag>x</ETag></Part></CompleteMultipartUpload>",
                     b"not xml"):
            r = self.req("POST", b, key, uid, body=body, what=("POST", "complete"))
            self.assertEqual(r.status // 100, 4, r)
        self.req("POST", b, key, "uploadId=nonexistent", body=b"<CompleteMultipartUpload/>", what=("POST", "complete"))
        self.req("DELETE", b, key, uid, what=("DELETE", "abort"), expect=(204, None))
        self.req("DELETE", b, key, uid, what=("DELETE", "abort"), expect=(404, "NoSuchUpload"))
        self.req("GET", b, key, uid, what=("GET", "list-parts"), expect=(404, "NoSuchUpload"))
        self.req("POST", b, key, what=("POST", "object"))

    def test_versioned_bucket_edge_cases(self):
        b = self.vbucket
        v1 = self.s3.put_object(Bucket=b, Key="v", Body=b"one")["VersionId"]
        dm = self.s3.delete_object(Bucket=b, Key="v")["VersionId"]
        self.req("GET", b, "v", expect=(404, "NoSuchKey"))
        self.req("HEAD", b, "v", expect=(404, None))
        self.req("GET", b, "v", "versionId=" + q(v1), expect=(200, None))
        self.req("GET", b, "v", "versionId=" + q(dm), expect=(405, "MethodNotAllowed"))
        self.req("GET", b, "v", "versionId=00000000-0000-0000-0000-000000000000", expect=(404, "NoSuchVersion"))
        self.req("GET", b, "v", "versionId=garbage", expect=(400, "InvalidArgument"))
        self.req("GET", b, "v", "versionId=" + q(v1) + "&tagging=", what=("GET", "tagging"), expect=(200, None))
        self.req("PUT", b, "v2", headers={"x-amz-copy-source": f"{b}/v?versionId={v1}"},
                 what=("PUT", "copy"), expect=(200, None))
        self.req("PUT", b, "v3", headers={"x-amz-copy-source": f"{b}/v"},
                 what=("PUT", "copy"), expect=(404, "NoSuchKey"))
        self.req("GET", b, query="versions=&prefix=v&max-keys=1", what=("GET", "list"), expect=(200, None))
        self.req("DELETE", b, "v", "versionId=" + q(dm), expect=(204, None))
        self.req("DELETE", b, "v", "versionId=" + q(dm), expect=(204, None))
        self.req("GET", b, "v", expect=(200, None))

    def test_boto3_edge_cases(self):
        """The same through boto3, which signs, encodes and parses as
        applications do."""
        s3, b = self.s3, self.bucket
        s3.put_object(Bucket=b, Key="é/ü/x/", Body=b"z" * 5)
        out = s3.list_objects_v2(Bucket=b, Prefix="é/", Delimiter="ü/", MaxKeys=1000)
        self.assertEqual([p["Prefix"] for p in out.get("CommonPrefixes", [])], ["é/ü/"])
        out = s3.list_objects_v2(Bucket=b, MaxKeys=0)
        self.assertEqual(out["KeyCount"], 0)
        out = s3.get_object(Bucket=b, Key="é/ü/x/", Range="bytes=-9")
        self.assertEqual(out["Body"].read(), b"z" * 5)
        with self.assertRaises(ClientError) as e:
            s3.get_object(Bucket=b, Key="é/ü/x/", Range="bytes=5-")
        self.assertEqual(error_of(e), ("InvalidRange", 416))
        s3.put_object_tagging(Bucket=b, Key="é/ü/x/", Tagging={"TagSet": [{"Key": "ü", "Value": "é"}]})
        self.assertEqual(s3.get_object_tagging(Bucket=b, Key="é/ü/x/")["TagSet"], [{"Key": "ü", "Value": "é"}])
        s3.copy_object(Bucket=b, Key="é/copy", CopySource={"Bucket": b, "Key": "é/ü/x/"})
        out = s3.list_object_versions(Bucket=b, Prefix="é/", KeyMarker="é/", MaxKeys=1)
        self.assertTrue(out["IsTruncated"])
        s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "é/copy"}, {"Key": "absent"}]})


if __name__ == "__main__":
    unittest.main()
