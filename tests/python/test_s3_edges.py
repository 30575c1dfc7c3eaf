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


if __name__ == "__main__":
    unittest.main()
