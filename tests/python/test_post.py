"""Browser POST uploads (PostObject) against a real `tessera server`, with
forms made by botocore's generate_presigned_post (SigV4, and SigV2 as
older forms sign it) and sent as a browser sends them.

As AWS S3: success_action_status 200 (empty), 201 (a PostResponse
document), 204 (also the answer to any other value);
success_action_redirect answers 303 with bucket, key and ETag in the
Location's query; `${filename}` is replaced by the file's name before the
policy's key condition is checked; condition names match
case-insensitively; every field must be covered by a condition (403
AccessDenied "Extra input fields"); an expired policy, an unmet condition,
a wrong bucket: 403 AccessDenied; a bad signature 403
SignatureDoesNotMatch; an unknown key 403 InvalidAccessKeyId. A field sent
twice is refused (400), and content-length-range is enforced before
anything is stored: an existing object stays as it was.
"""

import base64
import hashlib
import hmac
import http.client
import json
import socket
import time
import unittest
import urllib.parse
import uuid

from s3util import client, raw_request
from tessera_server import ACCESS_KEY, SECRET_KEY, ServerTestCase, TesseraServer, unique_bucket


def multipart(fields, file_bytes, filename="upload.txt", file_type="text/plain"):
    boundary = "----tessera" + uuid.uuid4().hex
    out = b""
    for k, v in fields:
        out += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n").encode()
    out += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n"
            f"Content-Type: {file_type}\r\n\r\n").encode()
    out += file_bytes + f"\r\n--{boundary}--\r\n".encode()
    return boundary, out


def post(endpoint, bucket, fields, file_bytes, **kw):
    boundary, body = multipart(fields, file_bytes, **kw)
    u = urllib.parse.urlsplit(endpoint)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        conn.request("POST", f"/{bucket}", body=body,
                     headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def code_of(body):
    return body.split(b"<Code>")[1].split(b"</Code>")[0].decode() if b"<Code>" in body else None


class PostObject(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.s3 = client(cls.endpoint)
        cls.bucket = unique_bucket("post")
        cls.s3.create_bucket(Bucket=cls.bucket)

    def presigned(self, key, fields=None, conditions=None, expires=300, s3=None, bucket=None):
        p = (s3 or self.s3).generate_presigned_post(bucket or self.bucket, key, Fields=fields,
                                                    Conditions=conditions, ExpiresIn=expires)
        return list(p["fields"].items())

    def body_of(self, key):
        return self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()

    def test_success_action_status(self):
        for status, want in [("200", 200), ("201", 201), ("204", 204), ("299", 204), (None, 204)]:
            with self.subTest(status=status):
                key = f"status-{status}"
                extra = {"success_action_status": status} if status else None
                conds = [{"success_action_status": status}] if status else None
                got, headers, body = post(self.endpoint, self.bucket, self.presigned(key, extra, conds),
                                          b"data " + key.encode())
                self.assertEqual(got, want, body)
                self.assertEqual(headers["etag"], '"%s"' % hashlib.md5(b"data " + key.encode()).hexdigest())
                if want == 201:
                    self.assertIn(b"<PostResponse>", body)
                    self.assertIn(f"<Key>{key}</Key>".encode(), body)
                    self.assertIn(f"<Bucket>{self.bucket}</Bucket>".encode(), body)
                    self.assertIn(b"<ETag>", body)
                else:
                    self.assertEqual(body, b"")
                self.assertEqual(self.body_of(key), b"data " + key.encode())

    def test_redirect(self):
        url = "https://app.example/done?x=1"
        got, headers, _ = post(self.endpoint, self.bucket,
                               self.presigned("redir", {"success_action_redirect": url},
                                              [{"success_action_redirect": url}]), b"r")
        self.assertEqual(got, 303)
        loc = urllib.parse.urlsplit(headers["location"])
        q = dict(urllib.parse.parse_qsl(loc.query))
        self.assertEqual((loc.netloc, q["x"], q["bucket"], q["key"]), ("app.example", "1", self.bucket, "redir"))
        self.assertEqual(q["etag"], '"%s"' % hashlib.md5(b"r").hexdigest())

    def test_redirect_not_in_policy_is_refused(self):
        fields = self.presigned("open-redirect") + [("success_action_redirect", "https://evil.example/")]
        got, _, body = post(self.endpoint, self.bucket, fields, b"x")
        self.assertEqual((got, code_of(body)), (403, "AccessDenied"), body)
        self.assertIn(b"Extra input fields: success_action_redirect", body)

    def test_filename_substitution_is_checked_by_the_policy(self):
        fields = self.presigned("uploads/${filename}")
        got, _, body = post(self.endpoint, self.bucket, fields, b"named", filename="photo.jpg")
        self.assertEqual(got, 204, body)
        self.assertEqual(self.body_of("uploads/photo.jpg"), b"named")
        # A key condition on the substituted key.
        fields = self.presigned("up/${filename}", conditions=[["starts-with", "$key", "up/safe-"]])
        got, _, body = post(self.endpoint, self.bucket, fields, b"x", filename="other.jpg")
        self.assertEqual((got, code_of(body)), (403, "AccessDenied"), body)
        got, _, body = post(self.endpoint, self.bucket, fields, b"x", filename="safe-1.jpg")
        self.assertEqual(got, 204, body)

    def test_metadata_fields_and_case_insensitive_conditions(self):
        fields = self.presigned(
            "meta", {"Content-Type": "text/csv", "x-amz-meta-origin": "browser"},
            [["eq", "$CONTENT-TYPE", "text/csv"], ["starts-with", "$X-Amz-Meta-Origin", "brow"]])
        got, _, body = post(self.endpoint, self.bucket, fields, b"a,b")
        self.assertEqual(got, 204, body)
        head = self.s3.head_object(Bucket=self.bucket, Key="meta")
        self.assertEqual((head["ContentType"], head["Metadata"]), ("text/csv", {"origin": "browser"}))

    def test_escaped_values_in_the_policy(self):
        """S3's policy escapes: JSON's (a quote, a backslash, \\uXXXX) and
        S3's own `\\$` for a dollar sign, matched against the raw field."""
        value = '$5 "cAfe" \\ end'
        policy_text = ('{"expiration": "2100-01-01T00:00:00Z", "conditions": ['
                       '{"bucket": "%s"}, {"key": "escaped"}, '
                       '["eq", "$x-amz-meta-price", "\\$5 \\"c\\u0041fe\\" \\\\ end"]]}' % self.bucket)
        self.assertEqual(json.loads(policy_text.replace("\\$", "$"))["conditions"][2][2], value)
        policy = base64.b64encode(policy_text.encode()).decode()
        sig = base64.b64encode(hmac.new(SECRET_KEY.encode(), policy.encode(), hashlib.sha1).digest()).decode()
        base = [("key", "escaped"), ("AWSAccessKeyId", ACCESS_KEY), ("policy", policy), ("signature", sig)]
        got, _, body = post(self.endpoint, self.bucket, base + [("x-amz-meta-price", value)], b"e")
        self.assertEqual(got, 204, body)
        head = self.s3.head_object(Bucket=self.bucket, Key="escaped")
        self.assertEqual(self.body_of("escaped"), b"e")
        self.assertEqual(head["Metadata"]["price"], value)
        got, _, body = post(self.endpoint, self.bucket, base + [("x-amz-meta-price", "\\$5")], b"e")
        self.assertEqual((got, code_of(body)), (403, "AccessDenied"), body)

    def test_utf8_metadata_field(self):
        fields = self.presigned("utf8", {"x-amz-meta-note": "café"}, [{"x-amz-meta-note": "café"}])
        got, _, body = post(self.endpoint, self.bucket, fields, b"u")
        self.assertEqual(got, 204, body)
        meta = self.s3.head_object(Bucket=self.bucket, Key="utf8")["Metadata"]
        self.assertEqual(meta["note"], "=?UTF-8?B?" + base64.b64encode("café".encode()).decode() + "?=")

    def test_fields_s3_ignores_and_x_ignore(self):
        fields = self.presigned("ignored", {"acl": "private"}, [{"acl": "private"}]) + [("x-ignore-note", "hi")]
        got, _, body = post(self.endpoint, self.bucket, fields, b"i")
        self.assertEqual(got, 204, body)

    def test_refusals(self):
        good = self.presigned("refused")
        cases = []
        # An expired policy.
        cases.append(("expired", self.presigned("refused", expires=-60), 403, "AccessDenied"))
        # A field the policy does not cover.
        cases.append(("extra", good + [("Content-Type", "text/html")], 403, "AccessDenied"))
        # A condition not met.
        cond = self.presigned("refused", conditions=[["starts-with", "$Content-Type", "image/"]])
        cases.append(("unmet", cond + [("Content-Type", "text/html")], 403, "AccessDenied"))
        # A bad signature.
        bad = [(k, ("0" * 64 if k == "x-amz-signature" else v)) for k, v in good]
        cases.append(("signature", bad, 403, "SignatureDoesNotMatch"))
        # An unknown access key.
        stranger = client(self.endpoint, access_key="NOSUCHKEY", secret_key="whatever-secret")
        cases.append(("key", self.presigned("refused", s3=stranger), 403, "InvalidAccessKeyId"))
        # A field sent twice.
        cases.append(("dup", good + [("key", "other")], 400, "InvalidArgument"))
        for name, fields, status, code in cases:
            with self.subTest(name):
                got, _, body = post(self.endpoint, self.bucket, fields, b"x")
                self.assertEqual((got, code_of(body)), (status, code), body)
        with self.assertRaises(Exception):
            self.s3.head_object(Bucket=self.bucket, Key="refused")

    def test_wrong_bucket(self):
        other = unique_bucket("post-other")
        self.s3.create_bucket(Bucket=other)
        got, _, body = post(self.endpoint, other, self.presigned("wb"), b"x")
        self.assertEqual((got, code_of(body)), (403, "AccessDenied"), body)
        got, _, body = post(self.endpoint, unique_bucket("post-none"), self.presigned("wb"), b"x")
        self.assertEqual((got, code_of(body)), (404, "NoSuchBucket"), body)

    def test_size_range_is_enforced_before_anything_is_stored(self):
        self.s3.put_object(Bucket=self.bucket, Key="sized", Body=b"the original")
        rng = [["content-length-range", 10, 20]]
        for data, code in [(b"short", "EntityTooSmall"), (b"x" * 21, "EntityTooLarge")]:
            got, _, body = post(self.endpoint, self.bucket, self.presigned("sized", conditions=rng), data)
            self.assertEqual((got, code_of(body)), (400, code), body)
            self.assertEqual(self.body_of("sized"), b"the original")
        got, _, body = post(self.endpoint, self.bucket, self.presigned("sized", conditions=rng), b"just right")
        self.assertEqual(got, 204, body)
        self.assertEqual(self.body_of("sized"), b"just right")

    def test_sigv2_form(self):
        v2 = client(self.endpoint, signature_version="s3")
        fields = self.presigned("v2-form", s3=v2)
        names = {k for k, _ in fields}
        self.assertTrue({"AWSAccessKeyId", "policy", "signature"} <= names, names)
        got, _, body = post(self.endpoint, self.bucket, fields, b"v2 body")
        self.assertEqual(got, 204, body)
        self.assertEqual(self.body_of("v2-form"), b"v2 body")
        bad = [(k, ("AAAA" if k == "signature" else v)) for k, v in fields]
        got, _, body = post(self.endpoint, self.bucket, bad, b"x")
        self.assertEqual((got, code_of(body)), (403, "SignatureDoesNotMatch"), body)


class StalledForms(unittest.TestCase):
    """Unauthenticated forms have their own small share of the server's
    bound and a deadline: stalled ones cannot keep signed requests out, and
    are closed when their deadline passes."""

    def test_stalled_forms_do_not_hold_the_server(self):
        server = TesseraServer(env={
            "TESSERA_API_REQUESTS_MAX": "4",
            "TESSERA_API_POST_FORMS_MAX": "2",
            "TESSERA_API_POST_FORM_TIMEOUT": "30s",
            "TESSERA_API_POST_FORM_IDLE": "3s",
        }).start()
        socks = []
        try:
            s3 = client(server.endpoint)
            s3.create_bucket(Bucket="stall")
            s3.put_object(Bucket="stall", Key="k", Body=b"still served")
            u = urllib.parse.urlsplit(server.endpoint)
            head = (f"POST /stall HTTP/1.1\r\nHost: {u.netloc}\r\n"
                    "Content-Type: multipart/form-data; boundary=B\r\nContent-Length: 100000\r\n\r\n"
                    "--B\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk").encode()
            # Twice the requests bound, each stalled inside its form.
            for _ in range(8):
                s = socket.create_connection((u.hostname, u.port), timeout=30)
                s.sendall(head)
                socks.append(s)
            started = time.monotonic()
            self.assertEqual(s3.get_object(Bucket="stall", Key="k")["Body"].read(), b"still served")
            self.assertLess(time.monotonic() - started, 1.0)
            # Beyond the share of 2: refused at once (503 SlowDown); the two
            # in the share time out (400 RequestTimeout) within the idle
            # deadline.
            answers = []
            for s in socks:
                s.settimeout(10)
                data = b""
                try:
                    while b"</Error>" not in data:
                        chunk = s.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                except socket.timeout:
                    pass
                answers.append(data.split(b"\r\n")[0])
            waited = time.monotonic() - started
            self.assertEqual(sum(b" 503 " in a for a in answers), 6, answers)
            self.assertEqual(sum(b" 400 " in a for a in answers), 2, answers)
            self.assertLess(waited, 3 + 5)
            self.assertEqual(s3.get_object(Bucket="stall", Key="k")["Body"].read(), b"still served")
        finally:
            for s in socks:
                s.close()
            server.cleanup()

    def test_a_trickled_form_meets_its_total_deadline(self):
        server = TesseraServer(env={
            "TESSERA_API_POST_FORM_TIMEOUT": "3s",
            "TESSERA_API_POST_FORM_IDLE": "2s",
        }).start()
        try:
            s3 = client(server.endpoint)
            s3.create_bucket(Bucket="trickle")
            u = urllib.parse.urlsplit(server.endpoint)
            s = socket.create_connection((u.hostname, u.port), timeout=30)
            try:
                s.sendall((f"POST /trickle HTTP/1.1\r\nHost: {u.netloc}\r\n"
                           "Content-Type: multipart/form-data; boundary=B\r\nContent-Length: 100000\r\n\r\n"
                           "--B\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\n").encode())
                started = time.monotonic()
                s.settimeout(0.5)
                data = b""
                # One byte every half second: never idle for 2 s, so only
                # the total deadline of 3 s ends the form.
                while b"</Error>" not in data and time.monotonic() - started < 15:
                    try:
                        s.sendall(b"k")
                    except OSError:
                        pass
                    try:
                        chunk = s.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                    except socket.timeout:
                        pass
                waited = time.monotonic() - started
            finally:
                s.close()
            self.assertIn(b" 400 ", data.split(b"\r\n")[0], data)
            self.assertEqual(code_of(data), "RequestTimeout", data)
            self.assertGreater(waited, 2.5)
            self.assertLess(waited, 3 + 5)
        finally:
            server.cleanup()


if __name__ == "__main__":
    unittest.main()
