"""Server-side encryption through stock clients (boto3, aws-cli) against a
real `tessera server`: SSE-C, SSE-S3, SSE-KMS (static KMS key), bucket
default encryption, the auto-encryption switch, encrypted multipart uploads,
ranges at DARE package boundaries (64 KiB of plaintext per package), copies
between modes, UploadPartCopy from and into encrypted objects, the errors S3
answers, and the bytes on the drives.

Every class runs its own server with its own static KMS key
(TESSERA_KMS_SECRET_KEY=<name>:<base64 of 32 random bytes>). The suite runs
over plain HTTP, so SSE-C is allowed by TESSERA_INSECURE_SSE_C=on, except on
the server that checks SSE-C is refused without it.

Error codes and statuses are those AWS S3 answers (and MinIO, whose error
table is the reference for their names): a wrong SSE-C key is 403
AccessDenied, a missing one 400 InvalidRequest, a key MD5 that does not
match 400 InvalidArgument, SSE-C over plain HTTP 400 InvalidRequest. HEAD
answers carry no body, so botocore reports the status as the code there.
"""

import base64
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import shutil
import unittest

from botocore.exceptions import ClientError

from s3util import client, error_of, raw_request
from tessera_server import (
    ACCESS_KEY,
    REGION,
    SECRET_KEY,
    ServerTestCase,
    TesseraServer,
    unique_bucket,
)

KiB = 1024
MiB = 1024 * KiB
# Plaintext bytes per DARE package.
PKG = 64 * KiB
# The smallest part S3 accepts but the last.
PART = 5 * MiB


def data_of(size, seed):
    return random.Random(seed).randbytes(size)


def md5_hex(data):
    return hashlib.md5(data).hexdigest()


def b64(data):
    return base64.b64encode(data).decode()


def key_md5(key):
    return b64(hashlib.md5(key).digest())


def ssec(key):
    """boto3 parameters of an SSE-C request (boto3 base64-encodes the key
    and adds its MD5)."""
    return {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key}


def ssec_copy(key):
    return {"CopySourceSSECustomerAlgorithm": "AES256", "CopySourceSSECustomerKey": key}


def ssec_headers(key, prefix="x-amz-server-side-encryption-customer-"):
    return {
        prefix + "algorithm": "AES256",
        prefix + "key": b64(key),
        prefix + "key-md5": key_md5(key),
    }


def http_headers(response):
    return response["ResponseMetadata"]["HTTPHeaders"]


def sse_headers(response):
    """The encryption headers of a response, lower-cased."""
    return {
        k: v
        for k, v in http_headers(response).items()
        if k.startswith("x-amz-server-side-encryption")
    }


def kms_key():
    """A fresh static KMS key: (name, TESSERA_KMS_SECRET_KEY value)."""
    name = "tessera-test-" + os.urandom(4).hex()
    return name, f"{name}:{b64(os.urandom(32))}"


def drive_files(server):
    """(path, bytes) of every file under the server's drives."""
    for drive in server.drives:
        for dirpath, _, names in os.walk(drive):
            for name in names:
                path = os.path.join(dirpath, name)
                try:
                    with open(path, "rb") as f:
                        yield path, f.read()
                except OSError:
                    pass


def on_disk(server, needle):
    """The files of the server's drives that hold `needle`."""
    return [path for path, data in drive_files(server) if needle in data]


class SseCase(ServerTestCase):
    """A class with its own server, started with a fresh static KMS key and
    the switches of `server_env`."""

    kms = True
    insecure_sse_c = True
    server_env = {}

    @classmethod
    def setUpClass(cls):
        # ServerTestCase.setUpClass starts a server without our environment.
        unittest.TestCase.setUpClass()
        # The switches are spelled out, so none comes from the environment
        # the suite runs in (TESSERA_* names win over MinIO's).
        env = {"TESSERA_INSECURE_SSE_C": "off", "TESSERA_KMS_AUTO_ENCRYPTION": "off"}
        env.update(cls.server_env)
        cls.kms_name = None
        if cls.kms:
            cls.kms_name, env["TESSERA_KMS_SECRET_KEY"] = kms_key()
        if cls.insecure_sse_c:
            env["TESSERA_INSECURE_SSE_C"] = "on"
        cls.server = TesseraServer(env=env).start()
        cls.endpoint = cls.server.endpoint
        cls.s3 = client(cls.endpoint)

    def new_bucket(self):
        name = unique_bucket("sse")
        self.s3.create_bucket(Bucket=name)
        return name

    def assert_error(self, code, status, fn, *args, **kwargs):
        with self.assertRaises(ClientError) as ctx:
            fn(*args, **kwargs)
        self.assertEqual(error_of(ctx), (code, status), ctx.exception.response)
        return ctx.exception.response

    def assert_raw_error(self, code, status, response):
        self.assertEqual(response.status, status, response)
        self.assertIn(f"<Code>{code}</Code>".encode(), response.body, response)

    def assert_sse_s3(self, response):
        self.assertEqual(sse_headers(response), {"x-amz-server-side-encryption": "AES256"})
        self.assertEqual(response["ServerSideEncryption"], "AES256")

    def assert_sse_kms(self, response, key_id=None):
        key_id = key_id or self.kms_name
        headers = sse_headers(response)
        self.assertEqual(headers.get("x-amz-server-side-encryption"), "aws:kms", headers)
        self.assertEqual(
            headers.get("x-amz-server-side-encryption-aws-kms-key-id"), f"arn:aws:kms:{key_id}", headers
        )
        self.assertNotIn("x-amz-server-side-encryption-customer-algorithm", headers)
        self.assertEqual(response["ServerSideEncryption"], "aws:kms")
        self.assertEqual(response["SSEKMSKeyId"], f"arn:aws:kms:{key_id}")

    def assert_sse_c(self, response, key):
        self.assertEqual(
            sse_headers(response),
            {
                "x-amz-server-side-encryption-customer-algorithm": "AES256",
                "x-amz-server-side-encryption-customer-key-md5": key_md5(key),
            },
        )
        self.assertEqual(response["SSECustomerAlgorithm"], "AES256")
        self.assertEqual(response["SSECustomerKeyMD5"], key_md5(key))

    def assert_plain(self, response):
        self.assertEqual(sse_headers(response), {})

    def multipart(self, bucket, key, body, part=PART, create=None, each=None):
        """Uploads `body` in parts of `part` bytes (the last smaller) with
        the encryption parameters `create` (CreateMultipartUpload) and
        `each` (every UploadPart); returns (create, part responses,
        complete) responses."""
        created = self.s3.create_multipart_upload(Bucket=bucket, Key=key, **(create or {}))
        upload_id = created["UploadId"]
        parts, done = [], []
        for i in range(0, len(body), part):
            n = len(parts) + 1
            r = self.s3.upload_part(
                Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=n, Body=body[i : i + part], **(each or {})
            )
            done.append(r)
            parts.append({"PartNumber": n, "ETag": r["ETag"]})
        completed = self.s3.complete_multipart_upload(
            Bucket=bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts}
        )
        return created, done, completed

    def read(self, bucket, key, **kwargs):
        return self.s3.get_object(Bucket=bucket, Key=key, **kwargs)["Body"].read()


class RoundTripTests(SseCase):
    """Single-part round trips in every mode, with the response headers S3
    gives on PUT, GET and HEAD, and the ETags."""

    def test_sse_s3(self):
        bucket = self.new_bucket()
        body = data_of(3 * PKG + 1000, seed=1)
        put = self.s3.put_object(Bucket=bucket, Key="s3", Body=body, ServerSideEncryption="AES256")
        self.assert_sse_s3(put)
        # SSE-S3 ETags are the MD5 of the plaintext, as for plain objects.
        self.assertEqual(put["ETag"], f'"{md5_hex(body)}"')
        head = self.s3.head_object(Bucket=bucket, Key="s3")
        self.assert_sse_s3(head)
        self.assertEqual(head["ContentLength"], len(body))
        self.assertEqual(head["ETag"], put["ETag"])
        got = self.s3.get_object(Bucket=bucket, Key="s3")
        self.assert_sse_s3(got)
        self.assertEqual(got["ContentLength"], len(body))
        self.assertEqual(got["ETag"], put["ETag"])
        self.assertEqual(got["Body"].read(), body)

    def test_sse_kms_with_key_id_and_context(self):
        bucket = self.new_bucket()
        body = data_of(2 * PKG + 17, seed=2)
        context = b64(json.dumps({"team": "storage", "project": "tessera"}).encode())
        put = self.s3.put_object(
            Bucket=bucket,
            Key="kms",
            Body=body,
            ServerSideEncryption="aws:kms",
            SSEKMSKeyId=self.kms_name,
            SSEKMSEncryptionContext=context,
        )
        self.assert_sse_kms(put)
        # The context comes back as stored: canonical JSON (sorted keys, no
        # spaces), base64.
        self.assertEqual(put["SSEKMSEncryptionContext"], b64(b'{"project":"tessera","team":"storage"}'))
        head = self.s3.head_object(Bucket=bucket, Key="kms")
        self.assert_sse_kms(head)
        self.assertEqual(head["ContentLength"], len(body))
        got = self.s3.get_object(Bucket=bucket, Key="kms")
        self.assert_sse_kms(got)
        self.assertEqual(got["Body"].read(), body)
        # ETags agree between PUT, HEAD and GET, in S3's form.
        self.assertRegex(put["ETag"], r'^"[0-9a-f]{32}"$')
        self.assertEqual(head["ETag"], put["ETag"])
        self.assertEqual(got["ETag"], put["ETag"])
        # The key id in its ARN form is accepted too.
        put = self.s3.put_object(
            Bucket=bucket, Key="arn", Body=b"x", ServerSideEncryption="aws:kms", SSEKMSKeyId=f"arn:aws:kms:{self.kms_name}"
        )
        self.assert_sse_kms(put)
        self.assertEqual(self.read(bucket, "arn"), b"x")

    def test_sse_kms_default_key(self):
        bucket = self.new_bucket()
        put = self.s3.put_object(Bucket=bucket, Key="kms", Body=b"default key", ServerSideEncryption="aws:kms")
        # Without a key id, the KMS's default key (the static key) is used
        # and named; without a context, none is answered.
        self.assert_sse_kms(put)
        self.assertNotIn("x-amz-server-side-encryption-context", http_headers(put))
        self.assert_sse_kms(self.s3.head_object(Bucket=bucket, Key="kms"))
        self.assertEqual(self.read(bucket, "kms"), b"default key")

    def test_sse_kms_errors(self):
        bucket = self.new_bucket()
        self.assert_error(
            "KMS.NotFoundException",
            400,
            self.s3.put_object,
            Bucket=bucket,
            Key="k",
            Body=b"x",
            ServerSideEncryption="aws:kms",
            SSEKMSKeyId="no-such-key",
        )
        self.assert_error(
            "InvalidArgument",
            400,
            self.s3.put_object,
            Bucket=bucket,
            Key="k",
            Body=b"x",
            ServerSideEncryption="aws:kms",
            SSEKMSEncryptionContext="not base64 json!",
        )
        self.assert_error(
            "InvalidArgument", 400, self.s3.put_object, Bucket=bucket, Key="k", Body=b"x", ServerSideEncryption="AES512"
        )
        # Nothing was stored.
        self.assert_error("NoSuchKey", 404, self.s3.get_object, Bucket=bucket, Key="k")

    def test_sse_c(self):
        bucket = self.new_bucket()
        key = os.urandom(32)
        body = data_of(2 * PKG + 5, seed=3)
        put = self.s3.put_object(Bucket=bucket, Key="c", Body=body, **ssec(key))
        self.assert_sse_c(put, key)
        self.assertNotIn("ServerSideEncryption", put)
        head = self.s3.head_object(Bucket=bucket, Key="c", **ssec(key))
        self.assert_sse_c(head, key)
        self.assertEqual(head["ContentLength"], len(body))
        got = self.s3.get_object(Bucket=bucket, Key="c", **ssec(key))
        self.assert_sse_c(got, key)
        self.assertEqual(got["ContentLength"], len(body))
        self.assertEqual(got["Body"].read(), body)
        self.assertRegex(put["ETag"], r'^"[0-9a-f]{32}"$')
        self.assertEqual(head["ETag"], put["ETag"])
        self.assertEqual(got["ETag"], put["ETag"])

    def test_sizes_around_package_boundaries(self):
        bucket = self.new_bucket()
        key = os.urandom(32)
        for size in (0, 1, PKG - 1, PKG, PKG + 1, 2 * PKG, 2 * PKG + 1):
            body = data_of(size, seed=size)
            for mode, put_args, get_args in (
                ("s3", {"ServerSideEncryption": "AES256"}, {}),
                ("kms", {"ServerSideEncryption": "aws:kms"}, {}),
                ("c", ssec(key), ssec(key)),
            ):
                with self.subTest(size=size, mode=mode):
                    name = f"{mode}-{size}"
                    self.s3.put_object(Bucket=bucket, Key=name, Body=body, **put_args)
                    head = self.s3.head_object(Bucket=bucket, Key=name, **get_args)
                    self.assertEqual(head["ContentLength"], size)
                    self.assertEqual(self.read(bucket, name, **get_args), body)

    def test_conditions_use_the_etag_shown(self):
        bucket = self.new_bucket()
        key = os.urandom(32)
        for mode, args in (
            ("s3", {"ServerSideEncryption": "AES256"}),
            ("kms", {"ServerSideEncryption": "aws:kms"}),
            ("c", ssec(key)),
        ):
            with self.subTest(mode=mode):
                read_args = ssec(key) if mode == "c" else {}
                etag = self.s3.put_object(Bucket=bucket, Key=mode, Body=b"conditional", **args)["ETag"]
                self.assertEqual(self.read(bucket, mode, IfMatch=etag, **read_args), b"conditional")
                self.assert_error(
                    "PreconditionFailed", 412, self.s3.get_object, Bucket=bucket, Key=mode, IfMatch='"' + "0" * 32 + '"', **read_args
                )
                self.assert_error("304", 304, self.s3.get_object, Bucket=bucket, Key=mode, IfNoneMatch=etag, **read_args)
                copy_args = ssec_copy(key) if mode == "c" else {}
                self.s3.copy_object(
                    Bucket=bucket,
                    Key=f"{mode}-copy",
                    CopySource={"Bucket": bucket, "Key": mode},
                    CopySourceIfMatch=etag,
                    **copy_args,
                )
                self.assertEqual(self.read(bucket, f"{mode}-copy"), b"conditional")

    def test_tagging_keeps_encrypted_objects_readable(self):
        bucket = self.new_bucket()
        key = os.urandom(32)
        body = data_of(PKG + 1, seed=20)
        for mode, args in (("s3", {"ServerSideEncryption": "AES256"}), ("c", ssec(key))):
            with self.subTest(mode=mode):
                read_args = ssec(key) if mode == "c" else {}
                etag = self.s3.put_object(Bucket=bucket, Key=mode, Body=body, **args)["ETag"]
                self.s3.put_object_tagging(
                    Bucket=bucket, Key=mode, Tagging={"TagSet": [{"Key": "color", "Value": "blue"}]}
                )
                tags = self.s3.get_object_tagging(Bucket=bucket, Key=mode)["TagSet"]
                self.assertEqual(tags, [{"Key": "color", "Value": "blue"}])
                got = self.s3.get_object(Bucket=bucket, Key=mode, **read_args)
                self.assertEqual(got["ETag"], etag)
                self.assertEqual(got["Body"].read(), body)

    def test_overwrite_changes_mode(self):
        bucket = self.new_bucket()
        key = os.urandom(32)
        self.s3.put_object(Bucket=bucket, Key="k", Body=b"first", **ssec(key))
        put = self.s3.put_object(Bucket=bucket, Key="k", Body=b"second", ServerSideEncryption="AES256")
        self.assert_sse_s3(put)
        # The SSE-C key no longer applies; the object reads without it.
        self.assert_error("InvalidRequest", 400, self.s3.get_object, Bucket=bucket, Key="k", **ssec(key))
        self.assertEqual(self.read(bucket, "k"), b"second")
        put = self.s3.put_object(Bucket=bucket, Key="k", Body=b"third")
        self.assert_plain(put)
        self.assert_plain(self.s3.head_object(Bucket=bucket, Key="k"))
        self.assertEqual(self.read(bucket, "k"), b"third")


class EtagTests(SseCase):
    """ETags of encrypted objects as S3 gives them: an SSE-S3 object's and
    part's ETag is the MD5 of its plaintext; SSE-C and SSE-KMS objects have
    ETags that "are not an MD5 digest of their object data" (MinIO: the
    last 32 hex digits of the sealed ETag it stores). PUT, HEAD, GET,
    CopyObject, UploadPart, ListParts and the listings all give the same
    value for one object, and listings give the plaintext size."""

    MODES = (
        ("s3", {"ServerSideEncryption": "AES256"}),
        ("kms", {"ServerSideEncryption": "aws:kms"}),
        ("c", None),
    )

    def setUp(self):
        self.key = os.urandom(32)

    def args(self, mode, put_args):
        """(write arguments, read arguments) of a mode."""
        if mode == "c":
            return ssec(self.key), ssec(self.key)
        return put_args, {}

    def test_put_head_get_etags(self):
        bucket = self.new_bucket()
        body = data_of(100_000, seed=1)
        for mode, put_args in self.MODES:
            with self.subTest(mode=mode):
                write, read = self.args(mode, put_args)
                put = self.s3.put_object(Bucket=bucket, Key=mode, Body=body, **write)
                head = self.s3.head_object(Bucket=bucket, Key=mode, **read)
                got = self.s3.get_object(Bucket=bucket, Key=mode, **read)
                self.assertRegex(put["ETag"], r'^"[0-9a-f]{32}"$')
                self.assertEqual(head["ETag"], put["ETag"])
                self.assertEqual(got["ETag"], put["ETag"])
                if mode == "s3":
                    self.assertEqual(put["ETag"], f'"{md5_hex(body)}"')
                else:
                    self.assertNotEqual(put["ETag"], f'"{md5_hex(body)}"')

    def test_copy_etags(self):
        bucket = self.new_bucket()
        body = data_of(70_000, seed=5)
        self.s3.put_object(Bucket=bucket, Key="src", Body=body)
        for mode, put_args in self.MODES:
            with self.subTest(mode=mode):
                write, read = self.args(mode, put_args)
                r = self.s3.copy_object(
                    Bucket=bucket, Key=f"copy-{mode}", CopySource={"Bucket": bucket, "Key": "src"}, **write
                )
                etag = r["CopyObjectResult"]["ETag"]
                self.assertEqual(self.s3.head_object(Bucket=bucket, Key=f"copy-{mode}", **read)["ETag"], etag)
                if mode == "s3":
                    self.assertEqual(etag, f'"{md5_hex(body)}"')
                else:
                    self.assertRegex(etag, r'^"[0-9a-f]{32}"$')
                    self.assertNotEqual(etag, f'"{md5_hex(body)}"')

    def test_listings_give_the_head_etag_and_the_plaintext_size(self):
        bucket = self.new_bucket()
        bodies = {}
        for mode, put_args in self.MODES:
            write, _ = self.args(mode, put_args)
            bodies[mode] = data_of(50_000 + len(mode), seed=2)
            self.s3.put_object(Bucket=bucket, Key=mode, Body=bodies[mode], **write)
            # Multipart too: two parts, each its own DARE stream.
            body = data_of(PART + 777, seed=3)
            bodies[f"mp-{mode}"] = body
            self.multipart(bucket, f"mp-{mode}", body, create=write, each=write if mode == "c" else None)
        bodies["plain"] = b"plain"
        self.s3.put_object(Bucket=bucket, Key="plain", Body=b"plain")
        heads = {}
        for name in bodies:
            mode = name.removeprefix("mp-")
            read = ssec(self.key) if mode == "c" else {}
            heads[name] = self.s3.head_object(Bucket=bucket, Key=name, **read)["ETag"]
        for kind, listing in (
            ("v2", self.s3.list_objects_v2(Bucket=bucket)["Contents"]),
            ("v1", self.s3.list_objects(Bucket=bucket)["Contents"]),
            ("versions", self.s3.list_object_versions(Bucket=bucket)["Versions"]),
        ):
            with self.subTest(listing=kind):
                self.assertEqual({o["Key"]: o["ETag"] for o in listing}, heads)
                self.assertEqual({o["Key"]: o["Size"] for o in listing}, {k: len(b) for k, b in bodies.items()})
                for o in listing:
                    self.assertRegex(o["ETag"], r'^"[0-9a-f]{32}(-2)?"$', o["Key"])
        self.assertEqual(heads["s3"], f'"{md5_hex(bodies["s3"])}"')

    def test_part_etags(self):
        bucket = self.new_bucket()
        parts = [data_of(PART, seed=3), data_of(1000, seed=4)]
        for mode, put_args in self.MODES:
            with self.subTest(mode=mode):
                write, _ = self.args(mode, put_args)
                created, done, completed = self.multipart(
                    bucket, mode, b"".join(parts), create=write, each=write if mode == "c" else None
                )
                etags = [r["ETag"] for r in done]
                if mode == "s3":
                    self.assertEqual(etags, [f'"{md5_hex(p)}"' for p in parts])
                else:
                    for e, p in zip(etags, parts):
                        self.assertRegex(e, r'^"[0-9a-f]{32}"$')
                        self.assertNotEqual(e, f'"{md5_hex(p)}"')
                # The object's ETag is S3's MD5 of the parts' ETags, "-2".
                digest = hashlib.md5(b"".join(bytes.fromhex(e.strip('"')) for e in etags)).hexdigest()
                self.assertEqual(completed["ETag"], f'"{digest}-2"')

    def test_list_parts_gives_the_upload_part_etags(self):
        bucket = self.new_bucket()
        for mode, put_args in self.MODES:
            with self.subTest(mode=mode):
                write, _ = self.args(mode, put_args)
                upload = self.s3.create_multipart_upload(Bucket=bucket, Key=mode, **write)["UploadId"]
                each = write if mode == "c" else {}
                etags = [
                    self.s3.upload_part(
                        Bucket=bucket, Key=mode, UploadId=upload, PartNumber=n, Body=data_of(3000 + n, seed=n), **each
                    )["ETag"]
                    for n in (1, 2)
                ]
                listed = self.s3.list_parts(Bucket=bucket, Key=mode, UploadId=upload)["Parts"]
                self.assertEqual([p["ETag"] for p in listed], etags)
                self.assertEqual([p["Size"] for p in listed], [3001, 3002])
                self.s3.abort_multipart_upload(Bucket=bucket, Key=mode, UploadId=upload)

    def test_upload_part_copy_into_sse_s3_gives_the_plaintext_md5(self):
        bucket = self.new_bucket()
        src = data_of(PART + 5000, seed=9)
        self.s3.put_object(Bucket=bucket, Key="src", Body=src, **ssec(self.key))
        upload = self.s3.create_multipart_upload(Bucket=bucket, Key="dst", ServerSideEncryption="AES256")["UploadId"]
        r = self.s3.upload_part_copy(
            Bucket=bucket,
            Key="dst",
            UploadId=upload,
            PartNumber=1,
            CopySource={"Bucket": bucket, "Key": "src"},
            CopySourceRange=f"bytes=100-{PART + 99}",
            **ssec_copy(self.key),
        )
        self.assertEqual(r["CopyPartResult"]["ETag"], f'"{md5_hex(src[100 : PART + 100])}"')
        self.s3.abort_multipart_upload(Bucket=bucket, Key="dst", UploadId=upload)


class PostUploadTests(SseCase):
    """Browser-form POST uploads encrypt as PUT does: the form's
    x-amz-server-side-encryption* fields (in the signed policy), the
    bucket's default encryption, SSE-C with the key in the form."""

    def post(self, bucket, key, body, fields=None):
        fields = dict(fields or {})
        conditions = [{k: v} for k, v in fields.items()]
        form = self.s3.generate_presigned_post(bucket, key, Fields=fields, Conditions=conditions)
        boundary = "----tessera" + os.urandom(8).hex()
        parts = []
        for k, v in form["fields"].items():
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode())
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.bin"\r\n'
            f"Content-Type: application/octet-stream\r\n\r\n".encode()
        )
        data = b"".join(parts) + body + f"\r\n--{boundary}--\r\n".encode()
        return raw_request(
            self.endpoint,
            "POST",
            f"/{bucket}",
            body=data,
            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
            sign=False,
        )

    def test_form_fields_choose_the_encryption(self):
        bucket = self.new_bucket()
        body = data_of(200_000, seed=31)
        key = os.urandom(32)
        for name, fields, read, header in (
            ("s3", {"x-amz-server-side-encryption": "AES256"}, {}, "AES256"),
            ("kms", {"x-amz-server-side-encryption": "aws:kms"}, {}, "aws:kms"),
            ("c", {k.lower(): v for k, v in ssec_headers(key).items()}, ssec(key), None),
        ):
            with self.subTest(mode=name):
                r = self.post(bucket, name, body, fields)
                self.assertEqual(r.status, 204, r)
                head = self.s3.head_object(Bucket=bucket, Key=name, **read)
                self.assertEqual(r.headers["etag"], head["ETag"])
                self.assertEqual(head["ContentLength"], len(body))
                self.assertEqual(head.get("ServerSideEncryption"), header)
                if name == "c":
                    self.assert_sse_c(head, key)
                    self.assertNotEqual(head["ETag"], f'"{md5_hex(body)}"')
                    self.assertEqual(r.headers["x-amz-server-side-encryption-customer-algorithm"], "AES256")
                else:
                    self.assertEqual(r.headers["x-amz-server-side-encryption"], header)
                self.assertTrue(self.read(bucket, name, **read) == body)
        listed = {o["Key"]: o["Size"] for o in self.s3.list_objects_v2(Bucket=bucket)["Contents"]}
        self.assertEqual(listed, {"s3": len(body), "kms": len(body), "c": len(body)})
        self.assertEqual(on_disk(self.server, body[5000:5064]), [], "the plaintext reached a drive")

    def test_bucket_default_encryption(self):
        bucket = self.new_bucket()
        self.s3.put_bucket_encryption(
            Bucket=bucket,
            ServerSideEncryptionConfiguration={
                "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
            },
        )
        body = data_of(70_001, seed=32)
        r = self.post(bucket, "default", body)
        self.assertEqual(r.status, 204, r)
        self.assertEqual(r.headers["etag"], f'"{md5_hex(body)}"')
        head = self.s3.head_object(Bucket=bucket, Key="default")
        self.assert_sse_s3(head)
        self.assertEqual(head["ContentLength"], len(body))
        self.assertTrue(self.read(bucket, "default") == body)
        self.assertEqual(on_disk(self.server, body[1000:1064]), [], "the plaintext reached a drive")

    def test_redirect_answer_names_the_encryption(self):
        bucket = self.new_bucket()
        body = data_of(10_000, seed=33)
        fields = {"x-amz-server-side-encryption": "AES256", "success_action_redirect": "http://example.invalid/done"}
        r = self.post(bucket, "redirected", body, fields)
        self.assertEqual(r.status, 303, r)
        self.assertEqual(r.headers["x-amz-server-side-encryption"], "AES256")
        self.assertEqual(r.headers["etag"], f'"{md5_hex(body)}"')
        self.assertIn("etag=%22" + md5_hex(body) + "%22", r.headers["location"])
        self.assert_sse_s3(self.s3.head_object(Bucket=bucket, Key="redirected"))

    def test_bad_encryption_fields(self):
        bucket = self.new_bucket()
        r = self.post(bucket, "bad", b"x", {"x-amz-server-side-encryption": "rot13"})
        self.assert_raw_error("InvalidArgument", 400, r)
        key = os.urandom(32)
        fields = {k.lower(): v for k, v in ssec_headers(key).items()}
        fields["x-amz-server-side-encryption-customer-key-md5"] = b64(hashlib.md5(b"other").digest())
        r = self.post(bucket, "bad", b"x", fields)
        self.assertEqual(r.status, 400, r)
        self.assert_error("404", 404, self.s3.head_object, Bucket=bucket, Key="bad")


class SseCErrorTests(SseCase):
    """What S3 answers to wrong, missing and malformed SSE-C keys."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.bucket = unique_bucket("ssec-err")
        cls.s3.create_bucket(Bucket=cls.bucket)
        cls.key = os.urandom(32)
        cls.body = data_of(PKG + 10, seed=4)
        cls.s3.put_object(Bucket=cls.bucket, Key="c", Body=cls.body, **ssec(cls.key))
        cls.s3.put_object(Bucket=cls.bucket, Key="plain", Body=b"plain")
        cls.s3.put_object(Bucket=cls.bucket, Key="s3", Body=b"sse-s3", ServerSideEncryption="AES256")

    def test_wrong_key(self):
        wrong = os.urandom(32)
        response = self.assert_error("AccessDenied", 403, self.s3.get_object, Bucket=self.bucket, Key="c", **ssec(wrong))
        self.assertEqual(response["Error"]["Resource"], f"/{self.bucket}/c")
        # HEAD: the same status, no body.
        self.assert_error("403", 403, self.s3.head_object, Bucket=self.bucket, Key="c", **ssec(wrong))
        # A range GET with a wrong key returns no byte either.
        self.assert_error(
            "AccessDenied", 403, self.s3.get_object, Bucket=self.bucket, Key="c", Range="bytes=0-0", **ssec(wrong)
        )

    def test_missing_key(self):
        response = self.assert_error("InvalidRequest", 400, self.s3.get_object, Bucket=self.bucket, Key="c")
        self.assertEqual(
            response["Error"]["Message"],
            "The object was stored using a form of Server Side Encryption. "
            "The correct parameters must be provided to retrieve the object.",
        )
        self.assert_error("400", 400, self.s3.head_object, Bucket=self.bucket, Key="c")
        # The key alone without the algorithm is not a key.
        headers = ssec_headers(self.key)
        del headers["x-amz-server-side-encryption-customer-algorithm"]
        r = raw_request(self.endpoint, "GET", f"/{self.bucket}/c", headers=headers)
        self.assert_raw_error("InvalidArgument", 400, r)

    def test_key_md5_mismatch(self):
        other = os.urandom(32)
        for fn, extra in (
            (self.s3.put_object, {"Key": "new", "Body": b"x"}),
            (self.s3.get_object, {"Key": "c"}),
        ):
            with self.subTest(op=fn.__name__):
                response = self.assert_error(
                    "InvalidArgument",
                    400,
                    fn,
                    Bucket=self.bucket,
                    SSECustomerAlgorithm="AES256",
                    SSECustomerKey=b64(self.key),
                    SSECustomerKeyMD5=key_md5(other),
                    **extra,
                )
                self.assertEqual(
                    response["Error"]["Message"],
                    "The calculated MD5 hash of the key did not match the hash that was provided.",
                )
        self.assert_error(
            "400",
            400,
            self.s3.head_object,
            Bucket=self.bucket,
            Key="c",
            SSECustomerAlgorithm="AES256",
            SSECustomerKey=b64(self.key),
            SSECustomerKeyMD5=key_md5(other),
        )
        self.assert_error("NoSuchKey", 404, self.s3.get_object, Bucket=self.bucket, Key="new")

    def test_malformed_keys(self):
        cases = {
            "short key": ("AES256", os.urandom(16)),
            "bad algorithm": ("AES128", os.urandom(32)),
        }
        for name, (algorithm, key) in cases.items():
            with self.subTest(case=name):
                self.assert_error(
                    "InvalidArgument",
                    400,
                    self.s3.put_object,
                    Bucket=self.bucket,
                    Key="bad",
                    Body=b"x",
                    SSECustomerAlgorithm=algorithm,
                    SSECustomerKey=key,
                )
        # SSE-C and SSE-S3 together.
        self.assert_error(
            "InvalidArgument",
            400,
            self.s3.put_object,
            Bucket=self.bucket,
            Key="bad",
            Body=b"x",
            ServerSideEncryption="AES256",
            **ssec(os.urandom(32)),
        )
        self.assert_error("NoSuchKey", 404, self.s3.get_object, Bucket=self.bucket, Key="bad")

    def test_key_for_an_object_without_sse_c(self):
        for name in ("plain", "s3"):
            with self.subTest(object=name):
                response = self.assert_error(
                    "InvalidRequest", 400, self.s3.get_object, Bucket=self.bucket, Key=name, **ssec(self.key)
                )
                self.assertEqual(
                    response["Error"]["Message"], "The encryption parameters are not applicable to this object."
                )

    def test_right_key_still_reads(self):
        # After all the refused requests, the object is intact.
        self.assertEqual(self.read(self.bucket, "c", **ssec(self.key)), self.body)


class SseCOverHttpRefusedTests(SseCase):
    """Without TESSERA_INSECURE_SSE_C, SSE-C keys are refused over plain HTTP
    (they would cross the wire in clear); SSE-S3 and SSE-KMS still work."""

    insecure_sse_c = False
    MESSAGE = (
        "Requests specifying Server Side Encryption with Customer provided keys must be made over a secure connection."
    )

    def test_sse_c_refused(self):
        bucket = self.new_bucket()
        key = os.urandom(32)
        self.s3.put_object(Bucket=bucket, Key="plain", Body=b"plain")
        for op, fn, args in (
            ("PutObject", self.s3.put_object, {"Key": "c", "Body": b"x"}),
            ("GetObject", self.s3.get_object, {"Key": "plain"}),
            ("CreateMultipartUpload", self.s3.create_multipart_upload, {"Key": "c"}),
        ):
            with self.subTest(op=op):
                response = self.assert_error("InvalidRequest", 400, fn, Bucket=bucket, **args, **ssec(key))
                self.assertEqual(response["Error"]["Message"], self.MESSAGE)
        self.assert_error("400", 400, self.s3.head_object, Bucket=bucket, Key="plain", **ssec(key))
        self.assertEqual([o["Key"] for o in self.s3.list_objects_v2(Bucket=bucket)["Contents"]], ["plain"])
        self.assertEqual(self.s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []), [])
        # A copy whose destination key comes over HTTP is refused too.
        self.assert_error(
            "InvalidRequest",
            400,
            self.s3.copy_object,
            Bucket=bucket,
            Key="copy",
            CopySource={"Bucket": bucket, "Key": "plain"},
            **ssec(key),
        )

    def test_kms_modes_work_over_http(self):
        bucket = self.new_bucket()
        put = self.s3.put_object(Bucket=bucket, Key="s3", Body=b"sse-s3", ServerSideEncryption="AES256")
        self.assert_sse_s3(put)
        self.assertEqual(self.read(bucket, "s3"), b"sse-s3")
        put = self.s3.put_object(Bucket=bucket, Key="kms", Body=b"sse-kms", ServerSideEncryption="aws:kms")
        self.assert_sse_kms(put)
        self.assertEqual(self.read(bucket, "kms"), b"sse-kms")


class NoKmsTests(SseCase):
    """A server without a KMS key refuses the KMS modes."""

    kms = False

    def test_sse_s3_and_kms_refused(self):
        bucket = self.new_bucket()
        for mode in ("AES256", "aws:kms"):
            with self.subTest(mode=mode):
                self.assert_error(
                    "NotImplemented",
                    501,
                    self.s3.put_object,
                    Bucket=bucket,
                    Key="k",
                    Body=b"x",
                    ServerSideEncryption=mode,
                )
        self.assert_error("NoSuchKey", 404, self.s3.get_object, Bucket=bucket, Key="k")
        # SSE-C needs no KMS.
        key = os.urandom(32)
        self.assert_sse_c(self.s3.put_object(Bucket=bucket, Key="c", Body=b"ssec", **ssec(key)), key)
        self.assertEqual(self.read(bucket, "c", **ssec(key)), b"ssec")


class RangeTests(SseCase):
    """Range GETs of encrypted objects at DARE package boundaries, inside
    and across the parts of encrypted multipart objects."""

    SIZE = 4 * PKG + 1234
    MP_PARTS = (PART, PART, 300 * KiB + 7)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.bucket = unique_bucket("ranges")
        cls.s3.create_bucket(Bucket=cls.bucket)
        cls.key = os.urandom(32)
        cls.body = data_of(cls.SIZE, seed=5)
        cls.s3.put_object(Bucket=cls.bucket, Key="s3", Body=cls.body, ServerSideEncryption="AES256")
        cls.s3.put_object(Bucket=cls.bucket, Key="c", Body=cls.body, **ssec(cls.key))
        cls.mp_body = data_of(sum(cls.MP_PARTS), seed=6)
        upload = cls.s3.create_multipart_upload(Bucket=cls.bucket, Key="mp", **ssec(cls.key))["UploadId"]
        parts, offset = [], 0
        for n, size in enumerate(cls.MP_PARTS, 1):
            etag = cls.s3.upload_part(
                Bucket=cls.bucket,
                Key="mp",
                UploadId=upload,
                PartNumber=n,
                Body=cls.mp_body[offset : offset + size],
                **ssec(cls.key),
            )["ETag"]
            parts.append({"PartNumber": n, "ETag": etag})
            offset += size
        cls.s3.complete_multipart_upload(
            Bucket=cls.bucket, Key="mp", UploadId=upload, MultipartUpload={"Parts": parts}
        )

    def check_ranges(self, name, body, ranges, **kwargs):
        size = len(body)
        for spec in ranges:
            with self.subTest(object=name, range=spec):
                got = self.s3.get_object(Bucket=self.bucket, Key=name, Range=f"bytes={spec}", **kwargs)
                first, last = spec.split("-")
                if first == "":
                    first, last = max(0, size - int(last)), size - 1
                else:
                    first, last = int(first), (int(last) if last else size - 1)
                last = min(last, size - 1)
                self.assertEqual(got["ResponseMetadata"]["HTTPStatusCode"], 206)
                self.assertEqual(got["ContentRange"], f"bytes {first}-{last}/{size}")
                self.assertEqual(got["ContentLength"], last - first + 1)
                data = got["Body"].read()
                self.assertEqual(len(data), last - first + 1)
                self.assertTrue(data == body[first : last + 1], f"bytes {first}-{last} differ")

    def test_single_part_package_boundaries(self):
        ranges = [
            "0-0",
            f"0-{PKG - 1}",  # exactly the first package
            f"{PKG - 1}-{PKG - 1}",  # its last byte
            f"{PKG}-{2 * PKG - 1}",  # exactly the second package
            f"{PKG}-",  # from the second package to the end
            f"{PKG - 1}-{PKG}",  # the two bytes around the boundary
            f"{PKG - 100}-{3 * PKG + 100}",  # spanning four packages
            f"{4 * PKG}-{4 * PKG}",  # first byte of the short last package
            f"{4 * PKG - 1}-{self.SIZE + 1000}",  # past the end: clipped
            "-1",  # suffix: the last byte
            "-1234",  # suffix: exactly the last package
            f"-{PKG + 1234}",  # suffix across the last boundary
            f"-{self.SIZE + 5}",  # suffix longer than the object
        ]
        self.check_ranges("s3", self.body, ranges)
        self.check_ranges("c", self.body, ranges, **ssec(self.key))

    def test_multipart_parts_and_boundaries(self):
        p1, p2 = self.MP_PARTS[0], self.MP_PARTS[0] + self.MP_PARTS[1]
        ranges = [
            f"{PKG - 3}-{PKG + 3}",  # package boundary inside part 1
            f"{p1 - 1}-{p1}",  # the part boundary
            f"{p1 - PKG}-{p1 + PKG - 1}",  # the last package of part 1, the first of part 2
            f"{p1}-{p1 + PKG - 1}",  # exactly the first package of part 2
            f"{p1 + PKG - 1}-{p1 + PKG}",  # package boundary inside part 2
            f"{p1 - 10}-{p2 + 10}",  # across both part boundaries
            f"{p2}-",  # the whole last part
            f"-{self.MP_PARTS[2] + 1}",  # suffix from the last byte of part 2
        ]
        self.check_ranges("mp", self.mp_body, ranges, **ssec(self.key))

    def test_multipart_part_numbers(self):
        offset = 0
        for n, size in enumerate(self.MP_PARTS, 1):
            with self.subTest(part=n):
                got = self.s3.get_object(Bucket=self.bucket, Key="mp", PartNumber=n, **ssec(self.key))
                self.assertEqual(got["ContentLength"], size)
                self.assertEqual(got["PartsCount"], len(self.MP_PARTS))
                self.assertEqual(got["ContentRange"], f"bytes {offset}-{offset + size - 1}/{len(self.mp_body)}")
                self.assertTrue(got["Body"].read() == self.mp_body[offset : offset + size])
                head = self.s3.head_object(Bucket=self.bucket, Key="mp", PartNumber=n, **ssec(self.key))
                self.assertEqual(head["ContentLength"], size)
                offset += size

    def test_unsatisfiable_range(self):
        self.assert_error(
            "InvalidRange", 416, self.s3.get_object, Bucket=self.bucket, Key="s3", Range=f"bytes={self.SIZE}-"
        )
        # The plaintext size decides, not the larger stored size.
        self.assert_error(
            "InvalidRange",
            416,
            self.s3.get_object,
            Bucket=self.bucket,
            Key="c",
            Range=f"bytes={self.SIZE + 10}-{self.SIZE + 20}",
            **ssec(self.key),
        )


class MultipartTests(SseCase):
    """Encrypted multipart uploads in each mode: the headers of every step,
    the read-back, ListParts, and the key every SSE-C part must carry."""

    BODY = data_of(2 * PART + 123_457, seed=7)

    def check_read_back(self, bucket, key, check_headers, **kwargs):
        head = self.s3.head_object(Bucket=bucket, Key=key, **kwargs)
        check_headers(head)
        self.assertEqual(head["ContentLength"], len(self.BODY))
        got = self.s3.get_object(Bucket=bucket, Key=key, **kwargs)
        check_headers(got)
        self.assertEqual(got["ContentLength"], len(self.BODY))
        self.assertTrue(got["Body"].read() == self.BODY)
        return head

    def test_sse_s3(self):
        bucket = self.new_bucket()
        created, parts, done = self.multipart(bucket, "mp", self.BODY, create={"ServerSideEncryption": "AES256"})
        self.assert_sse_s3(created)
        for r in parts:
            self.assert_sse_s3(r)
        self.assert_sse_s3(done)
        head = self.check_read_back(bucket, "mp", self.assert_sse_s3)
        self.assertRegex(done["ETag"], r'^"[0-9a-f]{32}-3"$')
        self.assertEqual(head["ETag"], done["ETag"])

    def test_sse_kms(self):
        bucket = self.new_bucket()
        context = b64(json.dumps({"purpose": "multipart"}).encode())
        created, parts, done = self.multipart(
            bucket,
            "mp",
            self.BODY,
            create={"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": self.kms_name, "SSEKMSEncryptionContext": context},
        )
        self.assert_sse_kms(created)
        self.assertEqual(created["SSEKMSEncryptionContext"], b64(b'{"purpose":"multipart"}'))
        for r in parts:
            self.assert_sse_kms(r)
        # CompleteMultipartUpload names the mode and key, not the context.
        self.assert_sse_kms(done)
        head = self.check_read_back(bucket, "mp", self.assert_sse_kms)
        self.assertRegex(done["ETag"], r'^"[0-9a-f]{32}-3"$')
        self.assertEqual(head["ETag"], done["ETag"])

    def test_sse_c_every_part_carries_the_key(self):
        bucket = self.new_bucket()
        key = os.urandom(32)
        created, parts, done = self.multipart(bucket, "mp", self.BODY, create=ssec(key), each=ssec(key))
        self.assert_sse_c(created, key)
        for r in parts:
            self.assert_sse_c(r, key)
        # S3's CompleteMultipartUpload names no SSE-C key (none is sent).
        self.assert_plain(done)
        self.check_read_back(bucket, "mp", lambda r: self.assert_sse_c(r, key), **ssec(key))
        self.assert_error("InvalidRequest", 400, self.s3.get_object, Bucket=bucket, Key="mp")
        self.assert_error("AccessDenied", 403, self.s3.get_object, Bucket=bucket, Key="mp", **ssec(os.urandom(32)))

    def test_sse_c_part_without_or_with_another_key(self):
        bucket = self.new_bucket()
        key = os.urandom(32)
        upload = self.s3.create_multipart_upload(Bucket=bucket, Key="mp", **ssec(key))["UploadId"]
        args = dict(Bucket=bucket, Key="mp", UploadId=upload, PartNumber=1, Body=b"part")
        self.assert_error("InvalidRequest", 400, self.s3.upload_part, **args)
        self.assert_error("AccessDenied", 403, self.s3.upload_part, **args, **ssec(os.urandom(32)))
        self.assertEqual(self.s3.list_parts(Bucket=bucket, Key="mp", UploadId=upload).get("Parts", []), [])
        self.s3.abort_multipart_upload(Bucket=bucket, Key="mp", UploadId=upload)

    def test_part_under_5_mib_of_plaintext_is_too_small(self):
        # An encrypted part is stored larger than its plaintext; the minimum
        # is of the plaintext, as S3 and MinIO check it.
        bucket = self.new_bucket()
        key = os.urandom(32)
        body = self.BODY[: PART - 1000 + 10]
        for mode, create, each in (
            ("s3", {"ServerSideEncryption": "AES256"}, {}),
            ("c", ssec(key), ssec(key)),
        ):
            with self.subTest(mode=mode):
                with self.assertRaises(ClientError) as ctx:
                    self.multipart(bucket, mode, body, part=PART - 1000, create=create, each=each)
                self.assertEqual(error_of(ctx), ("EntityTooSmall", 400))
                self.assert_error("NoSuchKey", 404, self.s3.get_object, Bucket=bucket, Key=mode, **each)

    def test_list_parts_gives_plaintext_sizes(self):
        bucket = self.new_bucket()
        key = os.urandom(32)
        sizes = (PART, 70_000)
        for name, create, each in (
            ("s3", {"ServerSideEncryption": "AES256"}, {}),
            ("c", ssec(key), ssec(key)),
        ):
            with self.subTest(mode=name):
                upload = self.s3.create_multipart_upload(Bucket=bucket, Key=name, **create)["UploadId"]
                etags = []
                for n, size in enumerate(sizes, 1):
                    etags.append(
                        self.s3.upload_part(
                            Bucket=bucket, Key=name, UploadId=upload, PartNumber=n, Body=self.BODY[:size], **each
                        )["ETag"]
                    )
                listed = self.s3.list_parts(Bucket=bucket, Key=name, UploadId=upload)["Parts"]
                self.assertEqual([p["Size"] for p in listed], list(sizes))
                self.assertEqual([p["ETag"] for p in listed], etags)
                self.s3.abort_multipart_upload(Bucket=bucket, Key=name, UploadId=upload)


class CopyTests(SseCase):
    """CopyObject between modes, with the copy source's SSE-C key in the
    x-amz-copy-source-server-side-encryption-customer-* headers."""

    def setUp(self):
        self.bucket = self.new_bucket()
        self.body = data_of(3 * PKG + 99, seed=8)

    def copy(self, dst, src, **kwargs):
        return self.s3.copy_object(Bucket=self.bucket, Key=dst, CopySource={"Bucket": self.bucket, "Key": src}, **kwargs)

    def test_plain_to_sse_s3(self):
        self.s3.put_object(Bucket=self.bucket, Key="plain", Body=self.body)
        r = self.copy("s3", "plain", ServerSideEncryption="AES256")
        self.assert_sse_s3(r)
        self.assertEqual(r["CopyObjectResult"]["ETag"], f'"{md5_hex(self.body)}"')
        self.assert_sse_s3(self.s3.head_object(Bucket=self.bucket, Key="s3"))
        self.assertEqual(self.read(self.bucket, "s3"), self.body)

    def test_sse_s3_to_sse_c(self):
        key = os.urandom(32)
        self.s3.put_object(Bucket=self.bucket, Key="s3", Body=self.body, ServerSideEncryption="AES256")
        r = self.copy("c", "s3", **ssec(key))
        self.assert_sse_c(r, key)
        self.assert_sse_c(self.s3.head_object(Bucket=self.bucket, Key="c", **ssec(key)), key)
        self.assertEqual(self.read(self.bucket, "c", **ssec(key)), self.body)
        self.assert_error("InvalidRequest", 400, self.s3.get_object, Bucket=self.bucket, Key="c")

    def test_sse_c_key_rotation(self):
        old, new = os.urandom(32), os.urandom(32)
        self.s3.put_object(Bucket=self.bucket, Key="c", Body=self.body, **ssec(old))
        # To another key name, then in place.
        r = self.copy("rotated", "c", **ssec_copy(old), **ssec(new))
        self.assert_sse_c(r, new)
        self.assertEqual(self.read(self.bucket, "rotated", **ssec(new)), self.body)
        self.assert_error("AccessDenied", 403, self.s3.get_object, Bucket=self.bucket, Key="rotated", **ssec(old))
        r = self.copy("c", "c", **ssec_copy(old), **ssec(new))
        self.assert_sse_c(r, new)
        self.assertEqual(self.read(self.bucket, "c", **ssec(new)), self.body)
        self.assert_error("AccessDenied", 403, self.s3.get_object, Bucket=self.bucket, Key="c", **ssec(old))

    def test_sse_c_to_plain(self):
        key = os.urandom(32)
        self.s3.put_object(Bucket=self.bucket, Key="c", Body=self.body, **ssec(key))
        # The source key is needed, and must be the right one.
        self.assert_error("InvalidRequest", 400, self.copy, "plain", "c")
        self.assert_error("AccessDenied", 403, self.copy, "plain", "c", **ssec_copy(os.urandom(32)))
        r = self.copy("plain", "c", **ssec_copy(key))
        self.assert_plain(r)
        self.assertEqual(r["CopyObjectResult"]["ETag"], f'"{md5_hex(self.body)}"')
        head = self.s3.head_object(Bucket=self.bucket, Key="plain")
        self.assert_plain(head)
        self.assertEqual(head["ETag"], f'"{md5_hex(self.body)}"')
        self.assertEqual(self.read(self.bucket, "plain"), self.body)

    def test_sse_kms_to_sse_s3(self):
        self.s3.put_object(
            Bucket=self.bucket, Key="kms", Body=self.body, ServerSideEncryption="aws:kms", SSEKMSKeyId=self.kms_name
        )
        r = self.copy("s3", "kms", ServerSideEncryption="AES256")
        self.assert_sse_s3(r)
        # And back to SSE-KMS with a context.
        context = b64(b'{"copy":"yes"}')
        r = self.copy("kms2", "s3", ServerSideEncryption="aws:kms", SSEKMSEncryptionContext=context)
        self.assert_sse_kms(r)
        self.assertEqual(r["SSEKMSEncryptionContext"], context)
        self.assertEqual(self.read(self.bucket, "kms2"), self.body)
        self.assert_sse_s3(self.s3.head_object(Bucket=self.bucket, Key="s3"))
        self.assertEqual(self.read(self.bucket, "s3"), self.body)

    def test_copy_source_key_for_a_source_without_sse_c(self):
        self.s3.put_object(Bucket=self.bucket, Key="s3", Body=self.body, ServerSideEncryption="AES256")
        self.assert_error("InvalidRequest", 400, self.copy, "x", "s3", **ssec_copy(os.urandom(32)))
        self.assert_error("404", 404, self.s3.head_object, Bucket=self.bucket, Key="x")

    def test_encrypted_multipart_source(self):
        key = os.urandom(32)
        body = data_of(PART + 3 * PKG + 5, seed=9)
        self.multipart(self.bucket, "mp", body, create=ssec(key), each=ssec(key))
        r = self.copy("s3", "mp", ServerSideEncryption="AES256", **ssec_copy(key))
        self.assert_sse_s3(r)
        head = self.s3.head_object(Bucket=self.bucket, Key="s3")
        self.assertEqual(head["ContentLength"], len(body))
        self.assertTrue(self.read(self.bucket, "s3") == body)


class UploadPartCopyTests(SseCase):
    """UploadPartCopy from and into encrypted objects: the source decrypted
    with its key, the part encrypted as the upload says, with ranges."""

    SRC = data_of(PART + 2 * PKG + 321, seed=10)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.bucket = unique_bucket("upc")
        cls.s3.create_bucket(Bucket=cls.bucket)
        cls.src_key = os.urandom(32)
        cls.s3.put_object(Bucket=cls.bucket, Key="src-c", Body=cls.SRC, **ssec(cls.src_key))
        cls.s3.put_object(Bucket=cls.bucket, Key="src-s3", Body=cls.SRC, ServerSideEncryption="AES256")
        cls.s3.put_object(Bucket=cls.bucket, Key="src-plain", Body=cls.SRC)

    def part_copy(self, key, upload, n, src, first=None, last=None, **kwargs):
        args = dict(
            Bucket=self.bucket, Key=key, UploadId=upload, PartNumber=n, CopySource={"Bucket": self.bucket, "Key": src}
        )
        if first is not None:
            args["CopySourceRange"] = f"bytes={first}-{last}"
        return self.s3.upload_part_copy(**args, **kwargs)

    def complete(self, key, upload, etags):
        parts = [{"PartNumber": n, "ETag": e} for n, e in enumerate(etags, 1)]
        return self.s3.complete_multipart_upload(
            Bucket=self.bucket, Key=key, UploadId=upload, MultipartUpload={"Parts": parts}
        )

    def test_sse_c_source_into_sse_s3_upload(self):
        upload = self.s3.create_multipart_upload(Bucket=self.bucket, Key="d1", ServerSideEncryption="AES256")[
            "UploadId"
        ]
        cut = PART + PKG  # a package boundary of the source, past the part minimum
        first = self.part_copy("d1", upload, 1, "src-c", 0, cut - 1, **ssec_copy(self.src_key))
        self.assert_sse_s3(first)
        second = self.part_copy("d1", upload, 2, "src-c", cut, len(self.SRC) - 1, **ssec_copy(self.src_key))
        sizes = [p["Size"] for p in self.s3.list_parts(Bucket=self.bucket, Key="d1", UploadId=upload)["Parts"]]
        self.assertEqual(sizes, [cut, len(self.SRC) - cut])
        self.complete("d1", upload, [first["CopyPartResult"]["ETag"], second["CopyPartResult"]["ETag"]])
        head = self.s3.head_object(Bucket=self.bucket, Key="d1")
        self.assert_sse_s3(head)
        self.assertEqual(head["ContentLength"], len(self.SRC))
        self.assertTrue(self.read(self.bucket, "d1") == self.SRC)

    def test_sse_s3_source_into_sse_c_upload(self):
        key = os.urandom(32)
        upload = self.s3.create_multipart_upload(Bucket=self.bucket, Key="d2", **ssec(key))["UploadId"]
        # The whole source (no range), then an uploaded tail.
        first = self.part_copy("d2", upload, 1, "src-s3", **ssec(key))
        self.assert_sse_c(first, key)
        tail = b"uploaded tail"
        second = self.s3.upload_part(
            Bucket=self.bucket, Key="d2", UploadId=upload, PartNumber=2, Body=tail, **ssec(key)
        )
        self.complete("d2", upload, [first["CopyPartResult"]["ETag"], second["ETag"]])
        self.assertTrue(self.read(self.bucket, "d2", **ssec(key)) == self.SRC + tail)
        self.assert_error("InvalidRequest", 400, self.s3.get_object, Bucket=self.bucket, Key="d2")

    def test_sse_c_source_into_sse_c_upload_with_another_key(self):
        key = os.urandom(32)
        upload = self.s3.create_multipart_upload(Bucket=self.bucket, Key="d3", **ssec(key))["UploadId"]
        first = self.part_copy("d3", upload, 1, "src-c", 1, PART, **ssec_copy(self.src_key), **ssec(key))
        self.assert_sse_c(first, key)
        second = self.part_copy(
            "d3", upload, 2, "src-c", PKG - 1, PKG, **ssec_copy(self.src_key), **ssec(key)
        )
        self.complete("d3", upload, [first["CopyPartResult"]["ETag"], second["CopyPartResult"]["ETag"]])
        expected = self.SRC[1 : PART + 1] + self.SRC[PKG - 1 : PKG + 1]
        self.assertTrue(self.read(self.bucket, "d3", **ssec(key)) == expected)

    def test_encrypted_multipart_source_across_its_parts_into_plain_upload(self):
        key = os.urandom(32)
        body = data_of(PART + PKG + 10, seed=11)
        self.multipart(self.bucket, "mp-src", body, create=ssec(key), each=ssec(key))
        upload = self.s3.create_multipart_upload(Bucket=self.bucket, Key="d4")["UploadId"]
        # A range over the source's part boundary, then the rest.
        first = self.part_copy("d4", upload, 1, "mp-src", 7, PART + 100, **ssec_copy(key))
        self.assert_plain(first)
        second = self.part_copy("d4", upload, 2, "mp-src", PART + 101, len(body) - 1, **ssec_copy(key))
        self.complete("d4", upload, [first["CopyPartResult"]["ETag"], second["CopyPartResult"]["ETag"]])
        head = self.s3.head_object(Bucket=self.bucket, Key="d4")
        self.assert_plain(head)
        self.assertTrue(self.read(self.bucket, "d4") == body[7:])
        # Plain parts keep the ETag of their bytes.
        self.assertEqual(first["CopyPartResult"]["ETag"], f'"{md5_hex(body[7 : PART + 101])}"')

    def test_plain_source_into_sse_kms_upload(self):
        upload = self.s3.create_multipart_upload(
            Bucket=self.bucket, Key="d5", ServerSideEncryption="aws:kms", SSEKMSKeyId=self.kms_name
        )["UploadId"]
        first = self.part_copy("d5", upload, 1, "src-plain", 0, PART - 1)
        self.assert_sse_kms(first)
        second = self.part_copy("d5", upload, 2, "src-plain", PART, len(self.SRC) - 1)
        self.complete("d5", upload, [first["CopyPartResult"]["ETag"], second["CopyPartResult"]["ETag"]])
        self.assert_sse_kms(self.s3.head_object(Bucket=self.bucket, Key="d5"))
        self.assertTrue(self.read(self.bucket, "d5") == self.SRC)
        needle = self.SRC[1000:1064]
        self.assertEqual(len(on_disk(self.server, needle)), 1, "only the plain source holds the plaintext")

    def test_errors(self):
        key = os.urandom(32)
        upload = self.s3.create_multipart_upload(Bucket=self.bucket, Key="bad", **ssec(key))["UploadId"]
        # The SSE-C source needs its key, the right one.
        self.assert_error("InvalidRequest", 400, self.part_copy, "bad", upload, 1, "src-c", **ssec(key))
        self.assert_error(
            "AccessDenied", 403, self.part_copy, "bad", upload, 1, "src-c", **ssec(key), **ssec_copy(os.urandom(32))
        )
        # The SSE-C upload needs its key, the right one.
        self.assert_error("InvalidRequest", 400, self.part_copy, "bad", upload, 1, "src-s3")
        self.assert_error("AccessDenied", 403, self.part_copy, "bad", upload, 1, "src-s3", **ssec(os.urandom(32)))
        # A copy-source key for a source without SSE-C.
        self.assert_error(
            "InvalidRequest", 400, self.part_copy, "bad", upload, 1, "src-s3", **ssec(key), **ssec_copy(key)
        )
        # Ranges are of the plaintext: past its end is refused even where the
        # stored (encrypted) object is longer.
        self.assert_error(
            "InvalidRange",
            416,
            self.part_copy,
            "bad",
            upload,
            1,
            "src-s3",
            len(self.SRC) - 1,
            len(self.SRC) + 10,
            **ssec(key),
        )
        self.assertEqual(self.s3.list_parts(Bucket=self.bucket, Key="bad", UploadId=upload).get("Parts", []), [])
        self.s3.abort_multipart_upload(Bucket=self.bucket, Key="bad", UploadId=upload)


class BucketDefaultEncryptionTests(SseCase):
    """PutBucketEncryption: objects written without encryption headers are
    encrypted as the bucket says; explicit headers win."""

    def config(self, algorithm, key_id=None):
        rule = {"SSEAlgorithm": algorithm}
        if key_id:
            rule["KMSMasterKeyID"] = key_id
        return {"Rules": [{"ApplyServerSideEncryptionByDefault": rule}]}

    def test_sse_s3_default(self):
        bucket = self.new_bucket()
        self.assert_error(
            "ServerSideEncryptionConfigurationNotFoundError", 404, self.s3.get_bucket_encryption, Bucket=bucket
        )
        self.s3.put_bucket_encryption(Bucket=bucket, ServerSideEncryptionConfiguration=self.config("AES256"))
        got = self.s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]
        self.assertEqual(got["Rules"][0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"], "AES256")
        body = data_of(2 * PKG + 3, seed=12)
        put = self.s3.put_object(Bucket=bucket, Key="k", Body=body)
        self.assert_sse_s3(put)
        self.assertEqual(put["ETag"], f'"{md5_hex(body)}"')
        self.assert_sse_s3(self.s3.head_object(Bucket=bucket, Key="k"))
        self.assertEqual(self.read(bucket, "k"), body)
        self.assertEqual(on_disk(self.server, body[1000:1064]), [])
        # Multipart uploads and copies follow the default too.
        created, _, _ = self.multipart(bucket, "mp", body[:100])
        self.assert_sse_s3(created)
        self.assert_sse_s3(self.s3.head_object(Bucket=bucket, Key="mp"))
        self.s3.put_object(Bucket=bucket, Key="src", Body=b"x", ServerSideEncryption="aws:kms")
        self.assert_sse_s3(self.s3.copy_object(Bucket=bucket, Key="cp", CopySource={"Bucket": bucket, "Key": "src"}))
        # An explicit SSE-C key wins over the default.
        key = os.urandom(32)
        self.assert_sse_c(self.s3.put_object(Bucket=bucket, Key="c", Body=b"c", **ssec(key)), key)
        self.assert_sse_c(self.s3.head_object(Bucket=bucket, Key="c", **ssec(key)), key)
        # Deleted: new objects are plain again, old ones stay encrypted.
        self.s3.delete_bucket_encryption(Bucket=bucket)
        self.assert_error(
            "ServerSideEncryptionConfigurationNotFoundError", 404, self.s3.get_bucket_encryption, Bucket=bucket
        )
        self.assert_plain(self.s3.put_object(Bucket=bucket, Key="after", Body=b"plain"))
        self.assert_plain(self.s3.head_object(Bucket=bucket, Key="after"))
        self.assert_sse_s3(self.s3.head_object(Bucket=bucket, Key="k"))
        self.assertEqual(self.read(bucket, "k"), body)

    def test_sse_kms_default_with_key_id(self):
        bucket = self.new_bucket()
        self.s3.put_bucket_encryption(
            Bucket=bucket, ServerSideEncryptionConfiguration=self.config("aws:kms", self.kms_name)
        )
        rule = self.s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"][0]
        self.assertEqual(
            rule["ApplyServerSideEncryptionByDefault"], {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": self.kms_name}
        )
        put = self.s3.put_object(Bucket=bucket, Key="k", Body=b"kms by default")
        self.assert_sse_kms(put)
        self.assert_sse_kms(self.s3.head_object(Bucket=bucket, Key="k"))
        self.assertEqual(self.read(bucket, "k"), b"kms by default")

    def test_bad_configuration(self):
        bucket = self.new_bucket()
        self.assert_error(
            "MalformedXML",
            400,
            self.s3.put_bucket_encryption,
            Bucket=bucket,
            ServerSideEncryptionConfiguration=self.config("AES128"),
        )
        self.assert_error(
            "ServerSideEncryptionConfigurationNotFoundError", 404, self.s3.get_bucket_encryption, Bucket=bucket
        )
        self.assert_error(
            "NoSuchBucket",
            404,
            self.s3.put_bucket_encryption,
            Bucket=unique_bucket("missing"),
            ServerSideEncryptionConfiguration=self.config("AES256"),
        )


class AutoEncryptionTests(SseCase):
    """TESSERA_KMS_AUTO_ENCRYPTION=on: objects written without encryption
    headers are SSE-S3; explicit modes are kept."""

    server_env = {"TESSERA_KMS_AUTO_ENCRYPTION": "on"}

    def test_objects_are_encrypted_without_headers(self):
        bucket = self.new_bucket()
        body = data_of(PKG + 77, seed=13)
        put = self.s3.put_object(Bucket=bucket, Key="k", Body=body)
        self.assert_sse_s3(put)
        self.assertEqual(put["ETag"], f'"{md5_hex(body)}"')
        self.assert_sse_s3(self.s3.head_object(Bucket=bucket, Key="k"))
        self.assertEqual(self.read(bucket, "k"), body)
        self.assertEqual(on_disk(self.server, body[1000:1064]), [])
        created, _, _ = self.multipart(bucket, "mp", body)
        self.assert_sse_s3(created)
        self.assert_sse_s3(self.s3.head_object(Bucket=bucket, Key="mp"))
        self.assertEqual(self.read(bucket, "mp"), body)

    def test_explicit_modes_are_kept(self):
        bucket = self.new_bucket()
        key = os.urandom(32)
        self.assert_sse_c(self.s3.put_object(Bucket=bucket, Key="c", Body=b"c", **ssec(key)), key)
        self.assert_sse_c(self.s3.head_object(Bucket=bucket, Key="c", **ssec(key)), key)
        self.assert_sse_kms(self.s3.put_object(Bucket=bucket, Key="kms", Body=b"k", ServerSideEncryption="aws:kms"))
        self.assert_sse_kms(self.s3.head_object(Bucket=bucket, Key="kms"))


class NoAutoEncryptionTests(SseCase):
    """The control of AutoEncryptionTests: the same server without the
    switch stores plain objects, and the drive scan finds their bytes."""

    def test_objects_are_plain_without_the_switch(self):
        bucket = self.new_bucket()
        body = data_of(PKG + 77, seed=14)
        put = self.s3.put_object(Bucket=bucket, Key="k", Body=body)
        self.assert_plain(put)
        self.assert_plain(self.s3.head_object(Bucket=bucket, Key="k"))
        self.assertNotEqual(on_disk(self.server, body[1000:1064]), [])


class OnDiskTests(SseCase):
    """The drives never hold the plaintext of an encrypted object (single
    part, inline and not, multipart); the scan finds a plain object's bytes,
    so it would see a leak."""

    def test_plaintext_is_not_on_the_drives(self):
        bucket = self.new_bucket()
        key = os.urandom(32)
        objects = {}
        for mode, args in (
            ("s3", {"ServerSideEncryption": "AES256"}),
            ("kms", {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": self.kms_name}),
            ("c", ssec(key)),
        ):
            # Small (stored inline in xl.meta) and large (part files).
            for size in (3 * KiB, 3 * PKG):
                body = data_of(size, seed=100 + len(objects))
                name = f"{mode}-{size}"
                self.s3.put_object(Bucket=bucket, Key=name, Body=body, **args)
                objects[name] = body
        mp = data_of(PART + 2 * PKG, seed=15)
        self.multipart(bucket, "mp-c", mp, create=ssec(key), each=ssec(key))
        objects["mp-c"] = mp
        plain = data_of(3 * PKG, seed=16)
        self.s3.put_object(Bucket=bucket, Key="plain", Body=plain)
        files = list(drive_files(self.server))
        self.assertTrue(files)
        for name, body in objects.items():
            for offset in (100, len(body) // 2, len(body) - 70):
                with self.subTest(object=name, offset=offset):
                    needle = body[offset : offset + 64]
                    leaks = [path for path, data in files if needle in data]
                    self.assertEqual(leaks, [], f"plaintext of {name} at {offset} found on disk")
        # The control: the plain object's bytes are on the data drives.
        found = [path for path, data in files if plain[100:164] in data]
        self.assertGreaterEqual(len(found), 1)


class AwsCliTests(SseCase):
    """aws-cli's SSE flags, for a file large enough to go up in parts, and
    put-bucket-encryption."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.home = tempfile.mkdtemp(prefix="tessera-awscli-sse-")
        config = os.path.join(cls.home, "config")
        with open(config, "w") as f:
            # Parts of 5 MiB: a 9 MiB file goes up in two.
            f.write(
                "[default]\n"
                f"region = {REGION}\n"
                "s3 =\n"
                "  addressing_style = path\n"
                "  multipart_threshold = 5MB\n"
                "  multipart_chunksize = 5MB\n"
            )
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(
            {
                "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_DEFAULT_REGION": REGION,
                "AWS_CONFIG_FILE": config,
                "AWS_SHARED_CREDENTIALS_FILE": os.path.join(cls.home, "no-credentials"),
                "AWS_EC2_METADATA_DISABLED": "true",
                "AWS_MAX_ATTEMPTS": "1",
                "HOME": cls.home,
                "NO_PROXY": "127.0.0.1,localhost",
            }
        )
        cls.env = env
        cls.data = data_of(9 * MiB + 12345, seed=17)
        cls.file = os.path.join(cls.home, "upload.bin")
        with open(cls.file, "wb") as f:
            f.write(cls.data)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.home, ignore_errors=True)
        super().tearDownClass()

    def aws(self, *args):
        command = [sys.executable, "-m", "awscli", *args, "--endpoint-url", self.endpoint]
        done = subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            self.fail(f"aws {' '.join(args)} exited with {done.returncode}:\n{done.stderr}\n{self.server.log_tail()}")
        return done

    def download(self, bucket, key, *flags):
        path = os.path.join(self.tmpdir(), "download.bin")
        self.aws("s3", "cp", f"s3://{bucket}/{key}", path, *flags)
        with open(path, "rb") as f:
            return f.read()

    def test_cp_with_sse_flags(self):
        bucket = self.new_bucket()
        key_file = os.path.join(self.tmpdir(), "sse-c.key")
        key = os.urandom(32)
        with open(key_file, "wb") as f:
            f.write(key)
        self.aws("s3", "cp", self.file, f"s3://{bucket}/s3.bin", "--sse", "AES256")
        self.aws("s3", "cp", self.file, f"s3://{bucket}/kms.bin", "--sse", "aws:kms", "--sse-kms-key-id", self.kms_name)
        c_flags = ("--sse-c", "AES256", "--sse-c-key", f"fileb://{key_file}")
        self.aws("s3", "cp", self.file, f"s3://{bucket}/c.bin", *c_flags)
        for name, check, args in (
            ("s3.bin", self.assert_sse_s3, {}),
            ("kms.bin", self.assert_sse_kms, {}),
            ("c.bin", lambda r: self.assert_sse_c(r, key), ssec(key)),
        ):
            with self.subTest(object=name):
                head = self.s3.head_object(Bucket=bucket, Key=name, **args)
                check(head)
                self.assertEqual(head["ContentLength"], len(self.data))
                # It went up in two parts.
                self.assertTrue(head["ETag"].endswith('-2"'), head["ETag"])
        self.assertTrue(self.download(bucket, "c.bin", *c_flags) == self.data)
        self.assertTrue(self.read(bucket, "kms.bin") == self.data)
        self.assertTrue(self.read(bucket, "s3.bin") == self.data)

    def test_bucket_encryption_commands(self):
        bucket = self.new_bucket()
        config = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}
        self.aws(
            "s3api", "put-bucket-encryption", "--bucket", bucket, "--server-side-encryption-configuration", json.dumps(config)
        )
        got = self.s3.get_bucket_encryption(Bucket=bucket)
        self.assertEqual(
            got["ServerSideEncryptionConfiguration"]["Rules"][0]["ApplyServerSideEncryptionByDefault"],
            {"SSEAlgorithm": "AES256"},
        )
        self.s3.put_object(Bucket=bucket, Key="k", Body=b"by default")
        self.assert_sse_s3(self.s3.head_object(Bucket=bucket, Key="k"))


if __name__ == "__main__":
    unittest.main()
