"""Edges of everyday S3 requests against a real `tessera server`: user
metadata beyond ASCII, and bodies sent with `Transfer-Encoding: chunked`.

As AWS S3: a user metadata value with non-ASCII characters is stored
decoded and answered as one RFC 2047 encoded word (`=?UTF-8?B?...?=`); a
value sent as encoded words is decoded before it is stored (so a `Q` word
comes back as a `B` word); bytes that are not UTF-8 are refused with 400.
MinIO stores such values as sent; Tessera follows AWS.
"""

import base64
import http.client
import unittest
import urllib.parse

from s3util import client, raw_request, signed_headers
from tessera_server import ServerTestCase, unique_bucket


def b_word(text):
    return "=?UTF-8?B?" + base64.b64encode(text.encode()).decode() + "?="


class Utf8Metadata(ServerTestCase):
    def setUp(self):
        super().setUp()
        self.s3 = client(self.endpoint)
        self.bucket = unique_bucket("meta")
        self.s3.create_bucket(Bucket=self.bucket)

    def put_raw_utf8(self, key, name, value_bytes):
        """A PUT whose header value goes on the wire as these bytes, signed
        over the same bytes."""
        path = f"/{self.bucket}/{key}"
        try:
            text = value_bytes.decode("utf-8")
        except UnicodeDecodeError:
            # Bytes that are not UTF-8 cannot be signed by botocore: they
            # go with a signature over something else; the server must
            # refuse the request, never store the value.
            text = "x"
        headers = signed_headers(self.endpoint, "PUT", path, body=b"x", headers={name: text})
        # http.client sends str header values as Latin-1: hand it the bytes
        # in that form.
        headers[name] = value_bytes.decode("latin-1")
        u = urllib.parse.urlsplit(self.endpoint)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        try:
            conn.request("PUT", path, body=b"x", headers=headers)
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def test_raw_utf8_value_is_answered_rfc2047_encoded(self):
        for value in ["café", "日本語", "naïve résumé 😀"]:
            with self.subTest(value=value):
                status, body = self.put_raw_utf8("u", "x-amz-meta-note", value.encode())
                self.assertEqual(status, 200, body)
                head = self.s3.head_object(Bucket=self.bucket, Key="u")
                self.assertEqual(head["Metadata"]["note"], b_word(value))
                got = self.s3.get_object(Bucket=self.bucket, Key="u")
                self.assertEqual(got["Metadata"]["note"], b_word(value))

    def test_encoded_words_are_decoded_then_answered_as_b_words(self):
        self.s3.put_object(Bucket=self.bucket, Key="q", Body=b"x",
                           Metadata={"a": "=?utf-8?q?caf=C3=A9_au_lait?=", "b": b_word("ünï"),
                                     "plain": "ascii =? stays"})
        meta = self.s3.head_object(Bucket=self.bucket, Key="q")["Metadata"]
        self.assertEqual(meta["a"], b_word("café au lait"))
        self.assertEqual(meta["b"], b_word("ünï"))
        self.assertEqual(meta["plain"], "ascii =? stays")
        # An encoded word of ASCII text is stored (and answered) decoded.
        self.s3.put_object(Bucket=self.bucket, Key="ascii", Body=b"x", Metadata={"a": b_word("hello")})
        self.assertEqual(self.s3.head_object(Bucket=self.bucket, Key="ascii")["Metadata"]["a"], "hello")

    def test_copy_and_multipart_keep_utf8_values(self):
        self.s3.put_object(Bucket=self.bucket, Key="src", Body=b"x", Metadata={"n": b_word("größe")})
        self.s3.copy_object(Bucket=self.bucket, Key="dst", CopySource=f"{self.bucket}/src")
        self.assertEqual(self.s3.head_object(Bucket=self.bucket, Key="dst")["Metadata"]["n"], b_word("größe"))
        up = self.s3.create_multipart_upload(Bucket=self.bucket, Key="mp", Metadata={"n": b_word("ñ")})
        p = self.s3.upload_part(Bucket=self.bucket, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=b"x")
        self.s3.complete_multipart_upload(Bucket=self.bucket, Key="mp", UploadId=up["UploadId"],
                                          MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
        self.assertEqual(self.s3.head_object(Bucket=self.bucket, Key="mp")["Metadata"]["n"], b_word("ñ"))

    def test_bytes_that_are_not_utf8_are_refused(self):
        status, body = self.put_raw_utf8("bad", "x-amz-meta-note", b"caf\xe9")
        self.assertEqual(status // 100, 4, body)
        with self.assertRaises(Exception):
            self.s3.head_object(Bucket=self.bucket, Key="bad")


def send_chunked(endpoint, method, path, query, pieces, signed_body=None):
    """A request whose body goes with `Transfer-Encoding: chunked` and no
    Content-Length, in `pieces`; signed over `signed_body` (the payload's
    SHA-256 is checked as the body streams)."""
    body = b"".join(pieces)
    headers = signed_headers(endpoint, method, path, query, body=body if signed_body is None else signed_body)
    headers.pop("Content-Length", None)
    headers["Transfer-Encoding"] = "chunked"
    u = urllib.parse.urlsplit(endpoint)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        conn.request(method, path + ("?" + query if query else ""), body=iter(pieces), headers=headers,
                     encode_chunked=True)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


class ChunkedTransferEncoding(ServerTestCase):
    """PutObject and UploadPart with `Transfer-Encoding: chunked` and no
    Content-Length (plain HTTP chunking, not aws-chunked), as MinIO accepts
    them: the body is read to its end under the usual limits."""

    def setUp(self):
        super().setUp()
        self.s3 = client(self.endpoint)
        self.bucket = unique_bucket("chunked")
        self.s3.create_bucket(Bucket=self.bucket)

    def test_put_object_of_unknown_length(self):
        import hashlib
        import random
        data = random.Random(1).randbytes(7 * 1024 * 1024 + 13)
        pieces = [data[i:i + 65536] for i in range(0, len(data), 65536)]
        status, headers, body = send_chunked(self.endpoint, "PUT", f"/{self.bucket}/big", "", pieces)
        self.assertEqual(status, 200, body)
        self.assertEqual(headers["etag"], '"%s"' % hashlib.md5(data).hexdigest())
        got = self.s3.get_object(Bucket=self.bucket, Key="big")
        self.assertEqual(got["ContentLength"], len(data))
        self.assertEqual(got["Body"].read(), data)
        # An empty chunked body is an empty object.
        status, _, body = send_chunked(self.endpoint, "PUT", f"/{self.bucket}/empty", "", [])
        self.assertEqual(status, 200, body)
        self.assertEqual(self.s3.head_object(Bucket=self.bucket, Key="empty")["ContentLength"], 0)

    def test_payload_hash_is_still_checked(self):
        self.s3.put_object(Bucket=self.bucket, Key="kept", Body=b"original")
        status, _, body = send_chunked(self.endpoint, "PUT", f"/{self.bucket}/kept", "",
                                       [b"tampered ", b"body"], signed_body=b"something else")
        self.assertEqual(status, 400, body)
        self.assertIn(b"XAmzContentSHA256Mismatch", body)
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="kept")["Body"].read(), b"original")

    def test_upload_part_of_unknown_length(self):
        up = self.s3.create_multipart_upload(Bucket=self.bucket, Key="mp")
        q = f"partNumber=1&uploadId={up['UploadId']}"
        status, headers, body = send_chunked(self.endpoint, "PUT", f"/{self.bucket}/mp", q, [b"part ", b"one"])
        self.assertEqual(status, 200, body)
        self.s3.complete_multipart_upload(Bucket=self.bucket, Key="mp", UploadId=up["UploadId"],
                                          MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": headers["etag"]}]})
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="mp")["Body"].read(), b"part one")

    def test_no_length_and_no_chunking_is_missing_content_length(self):
        # http.client sends Content-Length: 0 for an empty body: this
        # request goes by hand, with neither header.
        import socket
        u = urllib.parse.urlsplit(self.endpoint)
        headers = signed_headers(self.endpoint, "PUT", f"/{self.bucket}/nolen", body=b"")
        headers.pop("Content-Length", None)
        lines = [f"PUT /{self.bucket}/nolen HTTP/1.1", f"Host: {u.hostname}:{u.port}", "Connection: close"]
        lines += [f"{k}: {v}" for k, v in headers.items() if k.lower() != "host"]
        with socket.create_connection((u.hostname, u.port), timeout=30) as sock:
            sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        self.assertIn(b" 411 ", answer.split(b"\r\n")[0])
        self.assertIn(b"MissingContentLength", answer)
        with self.assertRaises(Exception):
            self.s3.head_object(Bucket=self.bucket, Key="nolen")


class LongNames(ServerTestCase):
    """A key whose stored form would not fit the file system: a directory
    object (`.../`) is stored with `__XLDIR__` added to its last segment,
    so a last segment over 246 bytes is 400 KeyTooLongError, never a
    quorum 503 that SDKs would retry."""

    def test_directory_object_names_too_long_for_the_file_system(self):
        s3 = client(self.endpoint)
        b = unique_bucket("names")
        s3.create_bucket(Bucket=b)
        for key in ["a" * 255 + "/", "p/" + "b" * 247 + "/", "c" * 256, "d/" + "e" * 256 + "/f"]:
            for method in ["PUT", "GET", "HEAD", "DELETE"]:
                with self.subTest(key=key[-5:], n=len(key), method=method):
                    r = raw_request(self.endpoint, method, f"/{b}/{key}", "",
                                    body=b"x" if method == "PUT" else b"")
                    self.assertEqual(r.status, 400, r)
                    if method != "HEAD":
                        self.assertIn(b"<Code>KeyTooLongError</Code>", r.body)
        # The longest that fits works.
        key = "p/" + "b" * 246 + "/"
        s3.put_object(Bucket=b, Key=key, Body=b"")
        self.assertEqual(s3.head_object(Bucket=b, Key=key)["ContentLength"], 0)
        self.assertEqual([o["Key"] for o in s3.list_objects_v2(Bucket=b, Prefix="p/")["Contents"]], [key])


class TrailerChecksums(ServerTestCase):
    """An aws-chunked body announcing two checksum trailers: S3 takes one
    checksum per request, so it is refused (400 InvalidRequest) rather than
    stored with one of them unchecked; one trailer is verified."""

    def send(self, key, trailer_names, trailers):
        import hashlib
        import zlib
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        from tessera_server import ACCESS_KEY, REGION, SECRET_KEY
        payload = b"hello"
        body = f"{len(payload):x}\r\n".encode() + payload + b"\r\n0\r\n"
        body += "".join(f"{k}:{v}\r\n" for k, v in trailers).encode() + b"\r\n"
        path = f"/{self.bucket}/{key}"
        headers = {
            "x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
            "content-encoding": "aws-chunked",
            "x-amz-decoded-content-length": str(len(payload)),
            "x-amz-trailer": ",".join(trailer_names),
        }
        req = AWSRequest(method="PUT", url=self.endpoint + path, data=body, headers=headers)
        # What botocore itself signs for a body with checksum trailers.
        req.context["checksum"] = {"request_algorithm": {"in": "trailer"}}
        S3SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3", REGION).add_auth(req)
        u = urllib.parse.urlsplit(self.endpoint)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        try:
            conn.request("PUT", path, body=body, headers=dict(req.headers.items()))
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def test_two_checksum_trailers_are_refused(self):
        import hashlib
        import struct
        import zlib
        self.bucket = unique_bucket("trail")
        client(self.endpoint).create_bucket(Bucket=self.bucket)
        crc = base64.b64encode(struct.pack(">I", zlib.crc32(b"hello"))).decode()
        sha = base64.b64encode(hashlib.sha256(b"hello").digest()).decode()
        status, body = self.send("two", ["x-amz-checksum-crc32", "x-amz-checksum-sha256"],
                                 [("x-amz-checksum-crc32", crc), ("x-amz-checksum-sha256", sha)])
        self.assertEqual(status, 400, body)
        self.assertIn(b"InvalidRequest", body)
        # One trailer: verified, and a wrong one refused.
        status, body = self.send("one", ["x-amz-checksum-crc32"], [("x-amz-checksum-crc32", crc)])
        self.assertEqual(status, 200, body)
        status, body = self.send("bad", ["x-amz-checksum-sha256"], [("x-amz-checksum-sha256", crc + "AAAA")])
        self.assertEqual(status // 100, 4, body)
        s3 = client(self.endpoint)
        self.assertEqual(s3.get_object(Bucket=self.bucket, Key="one")["Body"].read(), b"hello")
        for gone in ("two", "bad"):
            with self.assertRaises(Exception):
                s3.head_object(Bucket=self.bucket, Key=gone)


class UploadPartCopyFromVersions(ServerTestCase):
    """UploadPartCopy from a given version of a versioned object (a plain
    one and a multipart one, both overwritten since), in ranged parts,
    into another key and into the source's own key: every completion
    succeeds and reads back the old version's bytes (the issue reported a
    503 at completion; this covers the shapes around it)."""

    def test_ranged_copies_of_old_versions(self):
        import random
        s3 = client(self.endpoint)
        b = unique_bucket("upcv")
        s3.create_bucket(Bucket=b)
        s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
        mib = 1 << 20
        data = random.Random(1).randbytes(12 * mib)
        plain = s3.put_object(Bucket=b, Key="src", Body=data)["VersionId"]
        s3.put_object(Bucket=b, Key="src", Body=b"newer")
        up = s3.create_multipart_upload(Bucket=b, Key="msrc")
        parts = []
        for n in (1, 2):
            r = s3.upload_part(Bucket=b, Key="msrc", UploadId=up["UploadId"], PartNumber=n,
                               Body=data[(n - 1) * 6 * mib:n * 6 * mib])
            parts.append({"PartNumber": n, "ETag": r["ETag"]})
        multi = s3.complete_multipart_upload(Bucket=b, Key="msrc", UploadId=up["UploadId"],
                                             MultipartUpload={"Parts": parts})["VersionId"]
        s3.put_object(Bucket=b, Key="msrc", Body=b"newer")
        ranges = [(0, 5 * mib - 1), (5 * mib, 10 * mib - 1), (10 * mib, 12 * mib - 1)]
        for key, version in [("src", plain), ("msrc", multi)]:
            for dst in ("dst", key):
                with self.subTest(source=key, dst=dst):
                    up = s3.create_multipart_upload(Bucket=b, Key=dst)
                    parts = []
                    for n, (first, last) in enumerate(ranges, 1):
                        r = s3.upload_part_copy(Bucket=b, Key=dst, UploadId=up["UploadId"], PartNumber=n,
                                                CopySource={"Bucket": b, "Key": key, "VersionId": version},
                                                CopySourceRange=f"bytes={first}-{last}")
                        parts.append({"PartNumber": n, "ETag": r["CopyPartResult"]["ETag"]})
                    s3.complete_multipart_upload(Bucket=b, Key=dst, UploadId=up["UploadId"],
                                                 MultipartUpload={"Parts": parts})
                    self.assertEqual(s3.get_object(Bucket=b, Key=dst)["Body"].read(), data)


if __name__ == "__main__":
    unittest.main()
