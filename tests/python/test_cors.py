"""Bucket CORS against a real `tessera server`: Put/Get/DeleteBucketCors
through boto3 with S3's validation, and the exact request sequences a
browser sends — an `OPTIONS` preflight without credentials, then the
actual request (a presigned PUT, a signed GET, a failing GET) with
`Origin` — answered from the bucket's rules as S3 answers them.

No browser engine is installed here (none comes from the package
registries CI may use without a large download), so the sequences are
sent with http.client: a preflight `OPTIONS` carrying `Origin`,
`Access-Control-Request-Method` and `Access-Control-Request-Headers`, and
the request that follows carrying `Origin`.
"""

import http.client
import unittest
import urllib.parse

from botocore.exceptions import ClientError

from s3util import client, error_of
from tessera_server import ServerTestCase, unique_bucket

APP = "https://app.example.com"

RULES = {
    "CORSRules": [
        {
            "ID": "uploads",
            "AllowedOrigins": ["https://*.example.com"],
            "AllowedMethods": ["PUT", "GET"],
            "AllowedHeaders": ["content-type", "x-amz-*"],
            "ExposeHeaders": ["ETag", "x-amz-version-id"],
            "MaxAgeSeconds": 600,
        },
        {"AllowedOrigins": ["*"], "AllowedMethods": ["GET", "HEAD"]},
    ]
}


def send(endpoint, method, target, headers=None, body=None):
    u = urllib.parse.urlsplit(endpoint)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        conn.request(method, target, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def code_of(body):
    return body.split(b"<Code>")[1].split(b"</Code>")[0].decode() if b"<Code>" in body else None


class Cors(ServerTestCase):
    def setUp(self):
        super().setUp()
        self.s3 = client(self.endpoint)
        self.bucket = unique_bucket("cors")
        self.s3.create_bucket(Bucket=self.bucket)

    def preflight(self, path, origin=APP, method="PUT", headers=None):
        h = {}
        if origin is not None:
            h["Origin"] = origin
        if method is not None:
            h["Access-Control-Request-Method"] = method
        if headers is not None:
            h["Access-Control-Request-Headers"] = headers
        return send(self.endpoint, "OPTIONS", path, h)

    def test_put_get_delete(self):
        with self.assertRaises(ClientError) as c:
            self.s3.get_bucket_cors(Bucket=self.bucket)
        self.assertEqual(error_of(c), ("NoSuchCORSConfiguration", 404))
        self.s3.put_bucket_cors(Bucket=self.bucket, CORSConfiguration=RULES)
        got = self.s3.get_bucket_cors(Bucket=self.bucket)["CORSRules"]
        self.assertEqual(got[0], RULES["CORSRules"][0])
        self.assertEqual(got[1]["AllowedOrigins"], ["*"])
        self.assertEqual(got[1]["AllowedMethods"], ["GET", "HEAD"])
        r = self.s3.delete_bucket_cors(Bucket=self.bucket)
        self.assertEqual(r["ResponseMetadata"]["HTTPStatusCode"], 204)
        with self.assertRaises(ClientError) as c:
            self.s3.get_bucket_cors(Bucket=self.bucket)
        self.assertEqual(error_of(c), ("NoSuchCORSConfiguration", 404))

    def test_validation(self):
        bad = [
            ({"CORSRules": [{"AllowedOrigins": ["*"], "AllowedMethods": ["PATCH"]}]}, "InvalidRequest"),
            ({"CORSRules": [{"AllowedOrigins": ["http://*.*.com"], "AllowedMethods": ["GET"]}]}, "InvalidRequest"),
            ({"CORSRules": [{"AllowedOrigins": ["*"], "AllowedMethods": ["GET"], "AllowedHeaders": ["a*b*"]}]},
             "InvalidRequest"),
            ({"CORSRules": [{"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]}] * 101}, "InvalidRequest"),
        ]
        for doc, code in bad:
            with self.assertRaises(ClientError, msg=str(doc)[:80]) as c:
                self.s3.put_bucket_cors(Bucket=self.bucket, CORSConfiguration=doc)
            self.assertEqual(error_of(c), (code, 400), str(doc)[:80])
        with self.assertRaises(ClientError) as c:
            self.s3.get_bucket_cors(Bucket=self.bucket)
        self.assertEqual(error_of(c)[0], "NoSuchCORSConfiguration")

    def test_preflight_without_rules_or_origin(self):
        status, _, body = self.preflight(f"/{self.bucket}/k")
        self.assertEqual((status, code_of(body)), (403, "AccessForbidden"))
        self.assertIn(b"CORS is not enabled for this bucket", body)
        status, _, body = self.preflight(f"/{self.bucket}/k", origin=None)
        self.assertEqual((status, code_of(body)), (400, "BadRequest"))
        status, _, body = self.preflight("/no-such-bucket-cors/k")
        self.assertEqual(status, 403, body)

    def test_browser_upload_sequence(self):
        self.s3.put_bucket_cors(Bucket=self.bucket, CORSConfiguration=RULES)
        # 1. The preflight of a PUT with a content type.
        status, h, body = self.preflight(f"/{self.bucket}/photo.jpg", headers="Content-Type, X-Amz-Meta-Who")
        self.assertEqual(status, 200, body)
        self.assertEqual(h["access-control-allow-origin"], APP)
        self.assertEqual(h["access-control-allow-methods"], "PUT, GET")
        self.assertEqual(h["access-control-allow-headers"], "content-type, x-amz-meta-who")
        self.assertEqual(h["access-control-expose-headers"], "ETag, x-amz-version-id")
        self.assertEqual(h["access-control-max-age"], "600")
        self.assertEqual(h["access-control-allow-credentials"], "true")
        self.assertIn("Origin", h["vary"])
        # 2. The upload itself, with a presigned URL, carrying Origin.
        url = self.s3.generate_presigned_url(
            "put_object", Params={"Bucket": self.bucket, "Key": "photo.jpg", "ContentType": "image/jpeg"},
            ExpiresIn=300,
        )
        u = urllib.parse.urlsplit(url)
        status, h, body = send(self.endpoint, "PUT", f"{u.path}?{u.query}",
                               {"Origin": APP, "Content-Type": "image/jpeg"}, b"jpeg bytes")
        self.assertEqual(status, 200, body)
        self.assertEqual(h["access-control-allow-origin"], APP)
        self.assertIn("ETag", h["access-control-expose-headers"])
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="photo.jpg")["Body"].read(), b"jpeg bytes")
        # 3. A fetch() of it from any origin (the second rule), and of a
        # missing key: the error answer carries the headers too.
        url = self.s3.generate_presigned_url("get_object", Params={"Bucket": self.bucket, "Key": "photo.jpg"})
        u = urllib.parse.urlsplit(url)
        status, h, body = send(self.endpoint, "GET", f"{u.path}?{u.query}", {"Origin": "https://elsewhere.org"})
        self.assertEqual((status, body), (200, b"jpeg bytes"))
        self.assertEqual(h["access-control-allow-origin"], "*")
        self.assertNotIn("access-control-allow-credentials", h)
        url = self.s3.generate_presigned_url("get_object", Params={"Bucket": self.bucket, "Key": "missing"})
        u = urllib.parse.urlsplit(url)
        status, h, body = send(self.endpoint, "GET", f"{u.path}?{u.query}", {"Origin": "https://elsewhere.org"})
        self.assertEqual((status, code_of(body)), (404, "NoSuchKey"))
        self.assertEqual(h["access-control-allow-origin"], "*")

    def test_refused_preflights_and_unmatched_requests(self):
        self.s3.put_bucket_cors(Bucket=self.bucket, CORSConfiguration=RULES)
        refusals = [
            dict(origin="https://evil.org", method="PUT"),            # origin not allowed for PUT
            dict(origin=APP, method="DELETE"),                         # method not allowed
            dict(origin=APP, method="PUT", headers="Authorization"),   # header not allowed
            dict(origin="https://elsewhere.org", method="GET", headers="x-custom"),  # rule 2 allows no headers
        ]
        for r in refusals:
            status, h, body = self.preflight(f"/{self.bucket}/k", **r)
            self.assertEqual((status, code_of(body)), (403, "AccessForbidden"), r)
            self.assertNotIn("access-control-allow-origin", h)
        status, _, body = self.preflight(f"/{self.bucket}/k", method=None)
        self.assertEqual(status, 400, body)
        # An actual request no rule allows is served, without CORS headers.
        self.s3.put_object(Bucket=self.bucket, Key="k", Body=b"v")
        url = self.s3.generate_presigned_url("delete_object", Params={"Bucket": self.bucket, "Key": "k"})
        u = urllib.parse.urlsplit(url)
        status, h, _ = send(self.endpoint, "DELETE", f"{u.path}?{u.query}", {"Origin": APP})
        self.assertEqual(status, 204)
        self.assertNotIn("access-control-allow-origin", h)


if __name__ == "__main__":
    unittest.main()
