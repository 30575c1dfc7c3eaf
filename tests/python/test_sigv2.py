"""AWS Signature Version 2 against a real `tessera server`, as MinIO keeps
it for older clients: botocore's `s3` signer (HmacV1Auth) in the header,
its `s3-query` presigned URLs, raw requests for the error cases, and the
TESSERA_API_SIGV2=off switch.

As AWS S3: a missing or unparsable date is 403 AccessDenied; a date more
than 15 minutes away is 403 RequestTimeTooSkewed; a wrong signature 403
SignatureDoesNotMatch; an unknown key 403 InvalidAccessKeyId; a garbage
Content-MD5 400 InvalidDigest; an expired presigned URL 403 AccessDenied.
"""

import base64
import email.utils
import hashlib
import hmac
import http.client
import time
import unittest
import urllib.parse

from botocore.exceptions import ClientError

from s3util import client, error_of
from tessera_server import ACCESS_KEY, SECRET_KEY, ServerTestCase, TesseraServer, unique_bucket

MiB = 1024 * 1024


def v2_client(endpoint, **kw):
    return client(endpoint, signature_version="s3", **kw)


def sign_v2(string_to_sign, secret=SECRET_KEY):
    return base64.b64encode(hmac.new(secret.encode(), string_to_sign.encode(), hashlib.sha1).digest()).decode()


def send(endpoint, method, target, headers=None, body=None):
    u = urllib.parse.urlsplit(endpoint)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        conn.request(method, target, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def code_of(body):
    if b"<Code>" not in body:
        return None
    return body.split(b"<Code>")[1].split(b"</Code>")[0].decode()


class SigV2Header(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.s3 = v2_client(cls.endpoint)
        cls.bucket = unique_bucket("v2")
        cls.s3.create_bucket(Bucket=cls.bucket)

    def test_everyday_operations(self):
        s3, b = self.s3, self.bucket
        s3.put_object(Bucket=b, Key="dir/a b+c.txt", Body=b"hello v2", ContentType="text/plain",
                      Metadata={"who": "old-client"})
        got = s3.get_object(Bucket=b, Key="dir/a b+c.txt")
        self.assertEqual(got["Body"].read(), b"hello v2")
        self.assertEqual(got["Metadata"], {"who": "old-client"})
        self.assertEqual(s3.get_object(Bucket=b, Key="dir/a b+c.txt", Range="bytes=0-4")["Body"].read(), b"hello")
        self.assertEqual(s3.get_object(Bucket=b, Key="dir/a b+c.txt",
                                       ResponseContentType="application/x-test")["ContentType"],
                         "application/x-test")
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=b, Prefix="dir/")["Contents"]]
        self.assertEqual(keys, ["dir/a b+c.txt"])
        s3.put_object_tagging(Bucket=b, Key="dir/a b+c.txt",
                              Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
        self.assertEqual(s3.get_object_tagging(Bucket=b, Key="dir/a b+c.txt")["TagSet"],
                         [{"Key": "k", "Value": "v"}])
        s3.copy_object(Bucket=b, Key="copy", CopySource=f"{b}/dir/a b+c.txt")
        self.assertEqual(s3.get_object(Bucket=b, Key="copy")["Body"].read(), b"hello v2")
        s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "copy"}]})
        s3.delete_object(Bucket=b, Key="dir/a b+c.txt")
        left = [o["Key"] for o in s3.list_objects_v2(Bucket=b).get("Contents", [])]
        self.assertNotIn("copy", left)
        self.assertNotIn("dir/a b+c.txt", left)

    def test_multipart_and_versions(self):
        s3 = self.s3
        b = unique_bucket("v2ver")
        s3.create_bucket(Bucket=b)
        s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
        v1 = s3.put_object(Bucket=b, Key="k", Body=b"one")["VersionId"]
        s3.put_object(Bucket=b, Key="k", Body=b"two")
        self.assertEqual(s3.get_object(Bucket=b, Key="k", VersionId=v1)["Body"].read(), b"one")
        up = s3.create_multipart_upload(Bucket=b, Key="mp")
        parts = []
        for n, body in [(1, b"a" * (5 * MiB)), (2, b"b" * 7)]:
            r = s3.upload_part(Bucket=b, Key="mp", UploadId=up["UploadId"], PartNumber=n, Body=body)
            parts.append({"PartNumber": n, "ETag": r["ETag"]})
        self.assertEqual(len(s3.list_parts(Bucket=b, Key="mp", UploadId=up["UploadId"])["Parts"]), 2)
        s3.complete_multipart_upload(Bucket=b, Key="mp", UploadId=up["UploadId"],
                                     MultipartUpload={"Parts": parts})
        self.assertEqual(s3.head_object(Bucket=b, Key="mp")["ContentLength"], 5 * MiB + 7)

    def test_presigned_urls(self):
        s3, b = self.s3, self.bucket
        s3.put_object(Bucket=b, Key="shared", Body=b"presigned v2")
        url = s3.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "shared"}, ExpiresIn=300)
        self.assertIn("AWSAccessKeyId=", url)
        self.assertIn("Expires=", url)
        u = urllib.parse.urlsplit(url)
        self.assertEqual(send(self.endpoint, "GET", u.path + "?" + u.query), (200, b"presigned v2"))
        put = s3.generate_presigned_url("put_object", Params={"Bucket": b, "Key": "up"}, ExpiresIn=300)
        u = urllib.parse.urlsplit(put)
        status, body = send(self.endpoint, "PUT", u.path + "?" + u.query, body=b"uploaded")
        self.assertEqual(status, 200, body)
        self.assertEqual(s3.get_object(Bucket=b, Key="up")["Body"].read(), b"uploaded")
        # Another key under the same signature: refused.
        status, body = send(self.endpoint, "GET", u.path.replace("/up", "/shared") + "?" + u.query)
        self.assertEqual((status, code_of(body)), (403, "SignatureDoesNotMatch"))

    def test_expired_presigned_url(self):
        path = f"/{self.bucket}/shared"
        expires = str(int(time.time()) - 10)
        sig = sign_v2(f"GET\n\n\n{expires}\n{path}")
        q = urllib.parse.urlencode({"AWSAccessKeyId": ACCESS_KEY, "Expires": expires, "Signature": sig})
        status, body = send(self.endpoint, "GET", f"{path}?{q}")
        self.assertEqual((status, code_of(body)), (403, "AccessDenied"), body)
        self.assertIn(b"Request has expired", body)
        # Missing parameters.
        q = urllib.parse.urlencode({"AWSAccessKeyId": ACCESS_KEY, "Signature": sig})
        status, body = send(self.endpoint, "GET", f"{path}?{q}")
        self.assertEqual((status, code_of(body)), (403, "AccessDenied"), body)

    def header_request(self, method="GET", path=None, date=None, key=ACCESS_KEY, secret=SECRET_KEY,
                       extra=None, body=None, sign_date=None):
        path = path or f"/{self.bucket}/"
        headers = dict(extra or {})
        if date is not None:
            headers["Date"] = date
        md5 = headers.get("Content-MD5", "")
        ctype = headers.get("Content-Type", "")
        sts = f"{method}\n{md5}\n{ctype}\n{sign_date if sign_date is not None else (date or '')}\n{path}"
        headers["Authorization"] = f"AWS {key}:{sign_v2(sts, secret)}"
        return send(self.endpoint, method, path, headers, body)

    def test_errors(self):
        now = email.utils.formatdate(usegmt=True)
        self.assertEqual(self.header_request(date=now)[0], 200)
        # No date at all.
        status, body = self.header_request(date=None)
        self.assertEqual((status, code_of(body)), (403, "AccessDenied"), body)
        # A date that does not parse.
        status, body = self.header_request(date="yesterday", sign_date="yesterday")
        self.assertEqual((status, code_of(body)), (403, "AccessDenied"), body)
        # Too far from now, either way.
        for offset in (-3600, 3600):
            old = email.utils.formatdate(time.time() + offset, usegmt=True)
            status, body = self.header_request(date=old)
            self.assertEqual((status, code_of(body)), (403, "RequestTimeTooSkewed"), body)
        # Wrong secret, unknown key.
        status, body = self.header_request(date=now, secret="not-the-secret")
        self.assertEqual((status, code_of(body)), (403, "SignatureDoesNotMatch"), body)
        self.assertIn(b"<StringToSign>", body)
        status, body = self.header_request(date=now, key="NOSUCHKEY")
        self.assertEqual((status, code_of(body)), (403, "InvalidAccessKeyId"), body)
        # Malformed header.
        status, body = send(self.endpoint, "GET", f"/{self.bucket}/", {"Date": now, "Authorization": "AWS nocolon"})
        self.assertEqual(status, 400, body)
        # A garbage Content-MD5, signed.
        status, body = self.header_request("PUT", f"/{self.bucket}/md5", date=now,
                                           extra={"Content-MD5": "not base64 at all"}, body=b"data")
        self.assertEqual((status, code_of(body)), (400, "InvalidDigest"), body)
        # A Content-MD5 that does not match the body.
        wrong = base64.b64encode(hashlib.md5(b"other").digest()).decode()
        status, body = self.header_request("PUT", f"/{self.bucket}/md5", date=now,
                                           extra={"Content-MD5": wrong}, body=b"data")
        self.assertEqual((status, code_of(body)), (400, "BadDigest"), body)
        good = base64.b64encode(hashlib.md5(b"data").digest()).decode()
        status, body = self.header_request("PUT", f"/{self.bucket}/md5", date=now,
                                           extra={"Content-MD5": good}, body=b"data")
        self.assertEqual(status, 200, body)


class SigV2Off(unittest.TestCase):
    def test_switch_refuses_sigv2_and_keeps_sigv4(self):
        server = TesseraServer(env={"TESSERA_API_SIGV2": "off"}).start()
        try:
            v4 = client(server.endpoint)
            v4.create_bucket(Bucket="only-v4")
            v4.put_object(Bucket="only-v4", Key="k", Body=b"x")
            with self.assertRaises(ClientError) as c:
                v2_client(server.endpoint).get_object(Bucket="only-v4", Key="k")
            self.assertEqual(error_of(c), ("InvalidRequest", 400))
            url = v2_client(server.endpoint).generate_presigned_url(
                "get_object", Params={"Bucket": "only-v4", "Key": "k"}, ExpiresIn=60)
            u = urllib.parse.urlsplit(url)
            status, body = send(server.endpoint, "GET", u.path + "?" + u.query)
            self.assertEqual((status, code_of(body)), (400, "InvalidRequest"), body)
        finally:
            server.cleanup()


if __name__ == "__main__":
    unittest.main()
