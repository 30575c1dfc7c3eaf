"""Multipart checksums end to end, and GetObjectAttributes, through boto3
(with its default settings: it computes CRC32 checksums of uploads) and the
aws-cli against a real `tessera server`.

As AWS S3: CreateMultipartUpload's checksum algorithm and type are echoed
and listed by ListParts; each part's checksum is stored and listed; the
completed object carries a composite (`<base64>-N`) or full-object
checksum computed from the parts, returned by HEAD/GET in checksum mode
and by GetObjectAttributes; GetObjectAttributes lists the parts only when
they have checksums, and never for a single-part object. Where older
clients send a full-object CRC at completion of an upload created as
COMPOSITE, Tessera accepts it (AWS documents one type per upload).
"""

import base64
import hashlib
import os
import random
import struct
import subprocess
import sys
import tempfile
import zlib

import boto3.s3.transfer
from botocore.exceptions import ClientError

from s3util import client, error_of, raw_request
import unittest

from tessera_server import ACCESS_KEY, REGION, SECRET_KEY, ServerTestCase, TesseraServer, unique_bucket
from test_checksums import crc32c

MiB = 1024 * 1024
ALL = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"]


def b64(digest):
    return base64.b64encode(digest).decode()


def crc64nvme(data, _table=[]):
    """CRC-64/NVME, pure Python (botocore needs awscrt for it)."""
    if not _table:
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0x9A6C9329AC4BC9B5 if c & 1 else c >> 1
            _table.append(c)
    c = 0xFFFFFFFFFFFFFFFF
    for b in data:
        c = _table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFFFFFFFFFF


def digest_of(algorithm, data):
    if algorithm == "CRC32":
        return struct.pack(">I", zlib.crc32(data))
    if algorithm == "CRC32C":
        return struct.pack(">I", crc32c(data))
    if algorithm == "CRC64NVME":
        return struct.pack(">Q", crc64nvme(data))
    if algorithm == "SHA1":
        return hashlib.sha1(data).digest()
    return hashlib.sha256(data).digest()


class MultipartChecksums(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.s3 = client(cls.endpoint)
        cls.bucket = unique_bucket("attrs")
        cls.s3.create_bucket(Bucket=cls.bucket)

    def upload(self, key, algorithm, sizes, checksum_type=None, seed=3):
        """Creates an upload with `algorithm` (and `checksum_type`), uploads
        parts of `sizes` with their checksums computed here, and completes
        it listing them. Returns (data, part checksums, complete answer)."""
        rng = random.Random(seed)
        args = dict(Bucket=self.bucket, Key=key, ChecksumAlgorithm=algorithm)
        if checksum_type:
            args["ChecksumType"] = checksum_type
        up = self.s3.create_multipart_upload(**args)
        self.assertEqual(up["ChecksumAlgorithm"], algorithm)
        want_type = checksum_type or ("FULL_OBJECT" if algorithm == "CRC64NVME" else "COMPOSITE")
        self.assertEqual(up["ChecksumType"], want_type)
        field = f"Checksum{algorithm}"
        data, parts, values = b"", [], []
        for n, size in enumerate(sizes, start=1):
            body = rng.randbytes(size)
            data += body
            value = b64(digest_of(algorithm, body))
            r = self.s3.upload_part(Bucket=self.bucket, Key=key, UploadId=up["UploadId"],
                                    PartNumber=n, Body=body, **{field: value})
            self.assertEqual(r[field], value)
            parts.append({"PartNumber": n, "ETag": r["ETag"], field: value})
            values.append(value)
        listed = self.s3.list_parts(Bucket=self.bucket, Key=key, UploadId=up["UploadId"])
        self.assertEqual(listed["ChecksumAlgorithm"], algorithm)
        self.assertEqual(listed["ChecksumType"], want_type)
        self.assertEqual([p[field] for p in listed["Parts"]], values)
        done = self.s3.complete_multipart_upload(Bucket=self.bucket, Key=key, UploadId=up["UploadId"],
                                                 MultipartUpload={"Parts": parts})
        return data, values, done

    def expected(self, algorithm, data, values, full_object):
        if full_object:
            return b64(digest_of(algorithm, data))
        raw = b"".join(base64.b64decode(v) for v in values)
        return f"{b64(digest_of(algorithm, raw))}-{len(values)}"

    def check_object(self, key, algorithm, data, values, full_object, done):
        field = f"Checksum{algorithm}"
        want = self.expected(algorithm, data, values, full_object)
        kind = "FULL_OBJECT" if full_object else "COMPOSITE"
        self.assertEqual((done[field], done["ChecksumType"]), (want, kind))
        head = self.s3.head_object(Bucket=self.bucket, Key=key, ChecksumMode="ENABLED")
        self.assertEqual((head[field], head["ChecksumType"]), (want, kind))
        got = self.s3.get_object(Bucket=self.bucket, Key=key, ChecksumMode="ENABLED")
        self.assertEqual(got[field], want)
        self.assertEqual(got["Body"].read(), data)
        # Without checksum mode, no checksum.
        self.assertNotIn(field, self.s3.head_object(Bucket=self.bucket, Key=key))
        # A part in checksum mode: the part's checksum.
        part = self.s3.head_object(Bucket=self.bucket, Key=key, PartNumber=len(values),
                                   ChecksumMode="ENABLED")
        self.assertEqual(part[field], values[-1])
        attrs = self.s3.get_object_attributes(Bucket=self.bucket, Key=key, ObjectAttributes=ALL)
        self.assertEqual(attrs["ETag"], done["ETag"].strip('"'))
        self.assertEqual(attrs["ObjectSize"], len(data))
        self.assertEqual(attrs["StorageClass"], "STANDARD")
        self.assertEqual(attrs["Checksum"][field], want)
        self.assertEqual(attrs["Checksum"]["ChecksumType"], kind)
        op = attrs["ObjectParts"]
        self.assertEqual(op["TotalPartsCount"], len(values))
        self.assertEqual([p[field] for p in op["Parts"]], values)
        self.assertEqual(sum(p["Size"] for p in op["Parts"]), len(data))

    def test_each_algorithm_and_type(self):
        for algorithm, kind in [("CRC32", None), ("CRC32", "FULL_OBJECT"), ("CRC32C", "FULL_OBJECT"),
                                ("CRC32C", "COMPOSITE"), ("CRC64NVME", None), ("SHA1", None),
                                ("SHA256", "COMPOSITE")]:
            with self.subTest(algorithm=algorithm, kind=kind):
                key = f"mp-{algorithm}-{kind}"
                sizes = [5 * MiB, 1000] if algorithm != "CRC64NVME" else [5 * MiB, 10]
                data, values, done = self.upload(key, algorithm, sizes, kind)
                full = kind == "FULL_OBJECT" or (kind is None and algorithm == "CRC64NVME")
                self.check_object(key, algorithm, data, values, full, done)

    def test_default_boto3_transfer(self):
        """boto3's upload_fileobj with its defaults: parts with CRC32, the
        object checksummed, every attribute answered."""
        body = random.Random(9).randbytes(12 * MiB + 5)
        cfg = boto3.s3.transfer.TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB)
        import io
        self.s3.upload_fileobj(io.BytesIO(body), self.bucket, "transfer", Config=cfg)
        head = self.s3.head_object(Bucket=self.bucket, Key="transfer", ChecksumMode="ENABLED")
        self.assertTrue(head["ETag"].endswith('-3"'), head["ETag"])
        self.assertIn("ChecksumCRC32", head)
        if head["ChecksumType"] == "FULL_OBJECT":
            self.assertEqual(head["ChecksumCRC32"], b64(struct.pack(">I", zlib.crc32(body))))
        attrs = self.s3.get_object_attributes(Bucket=self.bucket, Key="transfer", ObjectAttributes=ALL)
        self.assertEqual(attrs["ObjectParts"]["TotalPartsCount"], 3)
        self.assertEqual([p["Size"] for p in attrs["ObjectParts"]["Parts"]], [5 * MiB, 5 * MiB, 2 * MiB + 5])
        self.assertEqual(attrs["ObjectSize"], len(body))

    def test_parts_paging(self):
        data, values, _ = self.upload("paged", "CRC32", [5 * MiB, 5 * MiB, 7])
        a = self.s3.get_object_attributes(Bucket=self.bucket, Key="paged", ObjectAttributes=["ObjectParts"],
                                          MaxParts=2)["ObjectParts"]
        self.assertEqual((a["TotalPartsCount"], a["IsTruncated"], a["MaxParts"]), (3, True, 2))
        self.assertEqual([p["PartNumber"] for p in a["Parts"]], [1, 2])
        b = self.s3.get_object_attributes(Bucket=self.bucket, Key="paged", ObjectAttributes=["ObjectParts"],
                                          MaxParts=2, PartNumberMarker=int(a["NextPartNumberMarker"]))
        b = b["ObjectParts"]
        self.assertFalse(b["IsTruncated"])
        self.assertEqual([(p["PartNumber"], p["ChecksumCRC32"]) for p in b["Parts"]], [(3, values[2])])

    def test_refusals(self):
        with self.assertRaises(ClientError) as c:
            self.s3.create_multipart_upload(Bucket=self.bucket, Key="x", ChecksumAlgorithm="SHA256",
                                            ChecksumType="FULL_OBJECT")
        self.assertEqual(error_of(c), ("InvalidRequest", 400))
        r = raw_request(self.endpoint, "POST", f"/{self.bucket}/x", "uploads",
                        headers={"x-amz-checksum-type": "COMPOSITE"})
        self.assertEqual(r.status, 400, r)
        self.assertIn(b"<Code>InvalidRequest</Code>", r.body)
        # A part with another algorithm than the upload's.
        up = self.s3.create_multipart_upload(Bucket=self.bucket, Key="x", ChecksumAlgorithm="SHA256")
        with self.assertRaises(ClientError) as c:
            self.s3.upload_part(Bucket=self.bucket, Key="x", UploadId=up["UploadId"], PartNumber=1,
                                Body=b"abc", ChecksumCRC32=b64(struct.pack(">I", zlib.crc32(b"abc"))))
        self.assertEqual(error_of(c), ("InvalidRequest", 400))
        # A listed part checksum other than the stored one.
        r = self.s3.upload_part(Bucket=self.bucket, Key="x", UploadId=up["UploadId"], PartNumber=1,
                                Body=b"abc", ChecksumSHA256=b64(hashlib.sha256(b"abc").digest()))
        wrong = b64(hashlib.sha256(b"abd").digest())
        with self.assertRaises(ClientError) as c:
            self.s3.complete_multipart_upload(
                Bucket=self.bucket, Key="x", UploadId=up["UploadId"],
                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": r["ETag"], "ChecksumSHA256": wrong}]})
        self.assertEqual(error_of(c), ("InvalidPart", 400))
        # The upload is still there and completes with the right one.
        done = self.s3.complete_multipart_upload(
            Bucket=self.bucket, Key="x", UploadId=up["UploadId"],
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": r["ETag"],
                                        "ChecksumSHA256": r["ChecksumSHA256"]}]})
        self.assertTrue(done["ChecksumSHA256"].endswith("-1"))


class ObjectAttributes(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        # SSE-C over the suite's plain HTTP.
        unittest.TestCase.setUpClass()
        cls.server = TesseraServer(env={"TESSERA_INSECURE_SSE_C": "on"}).start()
        cls.endpoint = cls.server.endpoint
        cls.s3 = client(cls.endpoint)

    def setUp(self):
        super().setUp()
        self.bucket = unique_bucket("goa")
        self.s3.create_bucket(Bucket=self.bucket)

    def test_single_part_object(self):
        body = b"attribute me" * 100
        put = self.s3.put_object(Bucket=self.bucket, Key="k", Body=body, ChecksumAlgorithm="SHA256")
        a = self.s3.get_object_attributes(Bucket=self.bucket, Key="k", ObjectAttributes=ALL)
        self.assertEqual(a["ETag"], hashlib.md5(body).hexdigest())
        self.assertEqual(a["ObjectSize"], len(body))
        self.assertEqual(a["StorageClass"], "STANDARD")
        self.assertEqual(a["Checksum"]["ChecksumSHA256"], put["ChecksumSHA256"])
        self.assertEqual(a["Checksum"]["ChecksumType"], "FULL_OBJECT")
        self.assertNotIn("ObjectParts", a)
        self.assertIn("LastModified", a)
        # Only what is asked for.
        a = self.s3.get_object_attributes(Bucket=self.bucket, Key="k", ObjectAttributes=["ObjectSize"])
        self.assertEqual(a["ObjectSize"], len(body))
        self.assertNotIn("ETag", a)

    def test_copy_with_a_new_checksum(self):
        body = random.Random(4).randbytes(3 * MiB + 1)
        self.s3.put_object(Bucket=self.bucket, Key="src", Body=body, ChecksumAlgorithm="SHA256")
        src = f"{self.bucket}/src"
        r = self.s3.copy_object(Bucket=self.bucket, Key="dst", CopySource=src, ChecksumAlgorithm="CRC32")
        want = b64(struct.pack(">I", zlib.crc32(body)))
        self.assertEqual(r["CopyObjectResult"]["ChecksumCRC32"], want)
        head = self.s3.head_object(Bucket=self.bucket, Key="dst", ChecksumMode="ENABLED")
        self.assertEqual((head["ChecksumCRC32"], head.get("ChecksumSHA256")), (want, None))
        a = self.s3.get_object_attributes(Bucket=self.bucket, Key="dst", ObjectAttributes=["Checksum"])
        self.assertEqual(a["Checksum"]["ChecksumCRC32"], want)
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="dst")["Body"].read(), body)
        # In place, only the checksum changing, as S3 allows.
        self.s3.copy_object(Bucket=self.bucket, Key="dst", CopySource=f"{self.bucket}/dst",
                            ChecksumAlgorithm="SHA1")
        head = self.s3.head_object(Bucket=self.bucket, Key="dst", ChecksumMode="ENABLED")
        self.assertEqual(head["ChecksumSHA1"], b64(hashlib.sha1(body).digest()))
        self.assertNotIn("ChecksumCRC32", head)
        # Without an algorithm, the copy keeps the source's checksum.
        self.s3.copy_object(Bucket=self.bucket, Key="kept", CopySource=src)
        head = self.s3.head_object(Bucket=self.bucket, Key="kept", ChecksumMode="ENABLED")
        self.assertEqual(head["ChecksumSHA256"], b64(hashlib.sha256(body).digest()))
        with self.assertRaises(ClientError) as c:
            self.s3.copy_object(Bucket=self.bucket, Key="bad", CopySource=src, ChecksumAlgorithm="MD5")
        self.assertEqual(error_of(c)[1], 400)

    def test_storage_class_and_versions(self):
        self.s3.put_bucket_versioning(Bucket=self.bucket, VersioningConfiguration={"Status": "Enabled"})
        v1 = self.s3.put_object(Bucket=self.bucket, Key="v", Body=b"one")["VersionId"]
        self.s3.put_object(Bucket=self.bucket, Key="v", Body=b"second", StorageClass="REDUCED_REDUNDANCY")
        a = self.s3.get_object_attributes(Bucket=self.bucket, Key="v", ObjectAttributes=ALL)
        self.assertEqual((a["ObjectSize"], a["StorageClass"]), (6, "REDUCED_REDUNDANCY"))
        a = self.s3.get_object_attributes(Bucket=self.bucket, Key="v", VersionId=v1, ObjectAttributes=ALL)
        self.assertEqual((a["ObjectSize"], a["VersionId"], a["StorageClass"]), (3, v1, "STANDARD"))
        self.s3.delete_object(Bucket=self.bucket, Key="v")
        with self.assertRaises(ClientError) as c:
            self.s3.get_object_attributes(Bucket=self.bucket, Key="v", ObjectAttributes=ALL)
        self.assertEqual(error_of(c), ("NoSuchKey", 404))

    def test_multipart_without_checksums_lists_no_parts(self):
        """An upload whose parts carry no checksums (sent as raw requests,
        as older clients do): the part count, but no part list."""
        key = "plain-mp"
        r = raw_request(self.endpoint, "POST", f"/{self.bucket}/{key}", "uploads")
        upload = r.body.split(b"<UploadId>")[1].split(b"</UploadId>")[0].decode()
        etags = []
        for n, body in [(1, b"a" * (5 * MiB)), (2, b"b" * 10)]:
            r = raw_request(self.endpoint, "PUT", f"/{self.bucket}/{key}",
                            f"partNumber={n}&uploadId={upload}", body=body)
            self.assertEqual(r.status, 200, r)
            etags.append(r.headers["etag"])
        xml = "<CompleteMultipartUpload>" + "".join(
            f"<Part><PartNumber>{n}</PartNumber><ETag>{e}</ETag></Part>" for n, e in enumerate(etags, 1)
        ) + "</CompleteMultipartUpload>"
        r = raw_request(self.endpoint, "POST", f"/{self.bucket}/{key}", f"uploadId={upload}",
                        body=xml.encode())
        self.assertEqual(r.status, 200, r)
        a = self.s3.get_object_attributes(Bucket=self.bucket, Key=key, ObjectAttributes=ALL)
        self.assertEqual(a["ObjectParts"]["TotalPartsCount"], 2)
        self.assertNotIn("Parts", a["ObjectParts"])
        self.assertNotIn("Checksum", a)
        self.assertEqual(a["ObjectSize"], 5 * MiB + 10)

    def test_sse_c_object_needs_its_key(self):
        key = os.urandom(32)
        sse = dict(SSECustomerAlgorithm="AES256", SSECustomerKey=key)
        self.s3.put_object(Bucket=self.bucket, Key="secret", Body=b"x" * 1000, **sse)
        with self.assertRaises(ClientError) as c:
            self.s3.get_object_attributes(Bucket=self.bucket, Key="secret", ObjectAttributes=ALL)
        self.assertEqual(error_of(c)[1], 400)
        # botocore encodes the key only for the operations it knows carry
        # one: here it goes as S3 wants it on the wire.
        wire = dict(SSECustomerAlgorithm="AES256", SSECustomerKey=b64(key),
                    SSECustomerKeyMD5=b64(hashlib.md5(key).digest()))
        a = self.s3.get_object_attributes(Bucket=self.bucket, Key="secret", ObjectAttributes=ALL, **wire)
        self.assertEqual(a["ObjectSize"], 1000)
        self.assertEqual(a["ETag"], self.s3.head_object(Bucket=self.bucket, Key="secret", **sse)["ETag"].strip('"'))

    def test_bad_requests(self):
        self.s3.put_object(Bucket=self.bucket, Key="k", Body=b"x")
        r = raw_request(self.endpoint, "GET", f"/{self.bucket}/k", "attributes")
        self.assertEqual(r.status, 400, r)
        self.assertIn(b"<Code>InvalidArgument</Code>", r.body)
        r = raw_request(self.endpoint, "GET", f"/{self.bucket}/k", "attributes",
                        headers={"x-amz-object-attributes": "ETag,Colour"})
        self.assertEqual(r.status, 400, r)
        r = raw_request(self.endpoint, "GET", f"/{self.bucket}/k", "attributes",
                        headers={"x-amz-object-attributes": "ETag", "x-amz-max-parts": "-1"})
        self.assertEqual(r.status, 400, r)
        r = raw_request(self.endpoint, "GET", f"/{self.bucket}/absent", "attributes",
                        headers={"x-amz-object-attributes": "ETag"})
        self.assertEqual(r.status, 404, r)


class AwsCliAttributes(ServerTestCase):
    def test_cli_multipart_copy_has_a_checksum_and_attributes(self):
        home = tempfile.mkdtemp(prefix="tessera-awscli-attrs-")
        config = os.path.join(home, "config")
        with open(config, "w") as f:
            f.write(f"[default]\nregion = {REGION}\ns3 =\n  addressing_style = path\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY, AWS_CONFIG_FILE=config,
                   AWS_SHARED_CREDENTIALS_FILE=os.path.join(home, "none"), AWS_EC2_METADATA_DISABLED="true",
                   AWS_MAX_ATTEMPTS="1", HOME=home)

        def aws(*args):
            out = subprocess.run([sys.executable, "-m", "awscli", *args, "--endpoint-url", self.endpoint],
                                 env=env, capture_output=True, timeout=300)
            self.assertEqual(out.returncode, 0, out.stderr.decode())
            return out.stdout.decode()

        import json
        import shutil
        try:
            path = os.path.join(home, "big.bin")
            data = random.Random(5).randbytes(20 * MiB + 3)
            with open(path, "wb") as f:
                f.write(data)
            bucket = unique_bucket("cliattr")
            aws("s3", "mb", f"s3://{bucket}")
            aws("s3", "cp", path, f"s3://{bucket}/big.bin")
            attrs = json.loads(aws("s3api", "get-object-attributes", "--bucket", bucket, "--key", "big.bin",
                                   "--object-attributes", "ETag", "Checksum", "ObjectParts", "ObjectSize"))
            self.assertEqual(attrs["ObjectSize"], len(data))
            self.assertEqual(attrs["ObjectParts"]["TotalPartsCount"], 3)
            self.assertIn("ChecksumCRC32", attrs["Checksum"])
            head = json.loads(aws("s3api", "head-object", "--bucket", bucket, "--key", "big.bin",
                                  "--checksum-mode", "ENABLED"))
            self.assertEqual(head["ChecksumCRC32"], attrs["Checksum"]["ChecksumCRC32"])
            aws("s3", "cp", f"s3://{bucket}/big.bin", os.path.join(home, "back.bin"))
            with open(os.path.join(home, "back.bin"), "rb") as f:
                self.assertEqual(f.read(), data)
        finally:
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
