"""Presigned SigV4 URLs made by boto3, used with plain HTTP against a real
`tessera server`: a URL is served until it expires and refused after, for
every method.

As AWS S3: `X-Amz-Expires=0` makes a URL that is expired at once (403
AccessDenied "Request has expired"); a lifetime over a week (604800 s) or a
negative one is 400 AuthorizationQueryParametersError.
"""

import http.client
import time
import unittest
import urllib.parse

from s3util import client
from tessera_server import ServerTestCase, unique_bucket


def fetch(url, method, body=None):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        conn.request(method, u.path + ("?" + u.query if u.query else ""), body=body)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def with_param(url, name, value):
    u = urllib.parse.urlsplit(url)
    q = [(k, v) for k, v in urllib.parse.parse_qsl(u.query, keep_blank_values=True) if k != name]
    q.append((name, value))
    return urllib.parse.urlunsplit(u._replace(query=urllib.parse.urlencode(q)))


class PresignedExpiry(ServerTestCase):
    def setUp(self):
        super().setUp()
        self.s3 = client(self.endpoint)
        self.bucket = unique_bucket("presign")
        self.s3.create_bucket(Bucket=self.bucket)
        self.s3.put_object(Bucket=self.bucket, Key="k", Body=b"payload")

    def url(self, method, expires, key="k"):
        return self.s3.generate_presigned_url(
            method, Params={"Bucket": self.bucket, "Key": key}, ExpiresIn=expires
        )

    def test_valid_url_serves_every_method(self):
        self.assertEqual(fetch(self.url("get_object", 300), "GET"), (200, b"payload"))
        self.assertEqual(fetch(self.url("head_object", 300), "HEAD")[0], 200)
        self.assertEqual(fetch(self.url("put_object", 300, "new"), "PUT", b"fresh")[0], 200)
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="new")["Body"].read(), b"fresh")
        self.assertEqual(fetch(self.url("delete_object", 300, "new"), "DELETE")[0], 204)

    def test_zero_lifetime_is_expired_for_every_method(self):
        for op, method, key in [
            ("get_object", "GET", "k"),
            ("head_object", "HEAD", "k"),
            ("put_object", "PUT", "zero"),
            ("delete_object", "DELETE", "k"),
        ]:
            with self.subTest(method=method):
                status, body = fetch(self.url(op, 0, key), method, b"x" if method == "PUT" else None)
                self.assertEqual(status, 403, body)
                if method != "HEAD":
                    self.assertIn(b"<Code>AccessDenied</Code>", body)
                    self.assertIn(b"Request has expired", body)
        # Nothing was written or deleted.
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="k")["Body"].read(), b"payload")
        with self.assertRaises(Exception):
            self.s3.head_object(Bucket=self.bucket, Key="zero")

    def test_expired_url_is_refused(self):
        urls = {m: self.url(op, 1, "k") for op, m in [("get_object", "GET"), ("put_object", "PUT"),
                                                     ("delete_object", "DELETE")]}
        # Wait out the one-second lifetime (HTTP dates and X-Amz-Date have
        # second precision).
        time.sleep(2.5)
        for method, url in urls.items():
            with self.subTest(method=method):
                status, body = fetch(url, method, b"late" if method == "PUT" else None)
                self.assertEqual(status, 403, body)
                self.assertIn(b"Request has expired", body)
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="k")["Body"].read(), b"payload")

    def test_lifetime_bounds(self):
        status, body = fetch(self.url("get_object", 604800), "GET")
        self.assertEqual(status, 200, body)
        for bad, message in [
            ("604801", b"X-Amz-Expires must be less than a week (in seconds) that is 604800"),
            ("-1", b"X-Amz-Expires must be non-negative"),
            ("soon", b"X-Amz-Expires should be a number"),
        ]:
            with self.subTest(expires=bad):
                status, body = fetch(with_param(self.url("get_object", 300), "X-Amz-Expires", bad), "GET")
                self.assertEqual(status, 400, body)
                self.assertIn(b"<Code>AuthorizationQueryParametersError</Code>", body)
                self.assertIn(message, body)


if __name__ == "__main__":
    unittest.main()
