"""Checksums of multipart uploads against a real `tessera server`: the
object checksum a CompleteMultipartUpload names in `x-amz-checksum-*`, as
`mc pipe` and the SDKs send it.

At CompleteMultipartUpload an `x-amz-checksum-*` header is the checksum of
the object being completed (a composite `<base64>-N` over the parts'
checksums, or for the CRCs the full-object CRC), never of the XML body.
"""

import base64
import os
import random
import struct
import subprocess
import tempfile
import unittest
import zlib

from s3util import client, error_of
from tessera_server import ACCESS_KEY, SECRET_KEY, ServerTestCase, unique_bucket
from test_mc import mc_binary

MiB = 1024 * 1024


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def crc32c(data):
    """CRC-32C (Castagnoli), pure Python (botocore needs awscrt for it)."""
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC32C[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def b64(digest):
    return base64.b64encode(digest).decode()


def composite(crc, part_values):
    """S3's COMPOSITE checksum: the CRC of the concatenated raw part
    digests, with the part count."""
    raw = b"".join(base64.b64decode(v) for v in part_values)
    return f"{b64(struct.pack('>I', crc(raw)))}-{len(part_values)}"


class CompleteChecksumTests(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.s3 = client(cls.endpoint)

    def make_bucket(self):
        bucket = unique_bucket("cks")
        self.s3.create_bucket(Bucket=bucket)
        return bucket

    def upload_parts(self, bucket, key, algorithm, sizes, seed=7):
        """A multipart upload created with `algorithm`, its parts uploaded
        with their checksums (botocore computes them). Returns the upload
        id, the data and the parts as CompleteMultipartUpload lists them."""
        rng = random.Random(seed)
        up = self.s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm=algorithm)
        field = f"Checksum{algorithm}"
        data, parts = b"", []
        for n, size in enumerate(sizes, start=1):
            body = rng.randbytes(size)
            data += body
            args = dict(Bucket=bucket, Key=key, UploadId=up["UploadId"], PartNumber=n, Body=body)
            if algorithm == "CRC32C":
                # botocore computes CRC32C only with awscrt, absent here.
                args[field] = b64(struct.pack(">I", crc32c(body)))
            else:
                args["ChecksumAlgorithm"] = algorithm
            r = self.s3.upload_part(**args)
            self.assertIn(field, r, "the part's checksum is echoed")
            parts.append({"PartNumber": n, "ETag": r["ETag"], field: r[field]})
        return up["UploadId"], data, parts

    def test_composite_crc32c_header_as_mc_sends_it(self):
        """What mc (minio-go) sends: CRC32C parts, then the composite of the
        parts in `x-amz-checksum-crc32c` at Complete."""
        bucket = self.make_bucket()
        upload, data, parts = self.upload_parts(bucket, "obj", "CRC32C", [5 * MiB, 123])
        value = composite(crc32c, [p["ChecksumCRC32C"] for p in parts])
        r = self.s3.complete_multipart_upload(
            Bucket=bucket,
            Key="obj",
            UploadId=upload,
            MultipartUpload={"Parts": parts},
            ChecksumCRC32C=value,
        )
        self.assertTrue(r["ETag"].endswith('-2"'), r["ETag"])
        self.assertEqual(self.s3.get_object(Bucket=bucket, Key="obj")["Body"].read(), data)

    def test_composite_without_part_count(self):
        """The composite's base64 alone (no `-N`), as older minio-go sends it."""
        bucket = self.make_bucket()
        upload, data, parts = self.upload_parts(bucket, "obj", "CRC32C", [100])
        value = composite(crc32c, [p["ChecksumCRC32C"] for p in parts]).rsplit("-", 1)[0]
        self.s3.complete_multipart_upload(
            Bucket=bucket,
            Key="obj",
            UploadId=upload,
            MultipartUpload={"Parts": parts},
            ChecksumCRC32C=value,
        )
        self.assertEqual(self.s3.get_object(Bucket=bucket, Key="obj")["Body"].read(), data)

    def test_full_object_crc32_header(self):
        """A full-object CRC32 (the CRC of the whole data) is checked by
        combining the parts' CRCs and sizes."""
        bucket = self.make_bucket()
        upload, data, parts = self.upload_parts(bucket, "obj", "CRC32", [5 * MiB, 3 * MiB + 17])
        value = b64(struct.pack(">I", zlib.crc32(data)))
        self.s3.complete_multipart_upload(
            Bucket=bucket,
            Key="obj",
            UploadId=upload,
            MultipartUpload={"Parts": parts},
            ChecksumCRC32=value,
        )
        self.assertEqual(self.s3.get_object(Bucket=bucket, Key="obj")["Body"].read(), data)

    def test_wrong_object_checksum_is_bad_digest_and_keeps_the_upload(self):
        bucket = self.make_bucket()
        upload, data, parts = self.upload_parts(bucket, "obj", "CRC32", [5 * MiB, 99])
        values = [p["ChecksumCRC32"] for p in parts]
        good = composite(zlib.crc32, values)
        wrong_crc = b64(struct.pack(">I", zlib.crc32(data) ^ 1))
        wrong_count = good.rsplit("-", 1)[0] + "-3"
        for bad in [wrong_crc, wrong_count, composite(zlib.crc32, values[::-1])]:
            with self.assertRaises(self.s3.exceptions.ClientError) as cm:
                self.s3.complete_multipart_upload(
                    Bucket=bucket,
                    Key="obj",
                    UploadId=upload,
                    MultipartUpload={"Parts": parts},
                    ChecksumCRC32=bad,
                )
            self.assertEqual(error_of(cm), ("BadDigest", 400), bad)
        # The refused completes left the upload as it was.
        self.s3.complete_multipart_upload(
            Bucket=bucket,
            Key="obj",
            UploadId=upload,
            MultipartUpload={"Parts": parts},
            ChecksumCRC32=good,
        )
        self.assertEqual(self.s3.get_object(Bucket=bucket, Key="obj")["Body"].read(), data)

    def test_malformed_object_checksum_is_invalid_request(self):
        bucket = self.make_bucket()
        upload, _, parts = self.upload_parts(bucket, "obj", "CRC32", [10])
        with self.assertRaises(self.s3.exceptions.ClientError) as cm:
            self.s3.complete_multipart_upload(
                Bucket=bucket,
                Key="obj",
                UploadId=upload,
                MultipartUpload={"Parts": parts},
                ChecksumCRC32="AAAA-1",
            )
        self.assertEqual(error_of(cm), ("InvalidRequest", 400))


class McPipeTests(ServerTestCase):
    """`mc pipe` reads a stream of unknown size: a multipart upload with
    CRC32C parts and the composite checksum at Complete."""

    @classmethod
    def setUpClass(cls):
        cls.mc_path = mc_binary()
        super().setUpClass()
        cls.config_dir = tempfile.mkdtemp(prefix="tessera-mc-")
        cls.env = dict(os.environ, MC_NO_COLOR="1", NO_PROXY="127.0.0.1,localhost")
        cls.env.pop("MC_HOST_t", None)
        done = cls.run_mc(None, "alias", "set", "t", cls.endpoint, ACCESS_KEY, SECRET_KEY, "--api", "S3v4", "--path", "on")
        if done.returncode != 0:
            raise RuntimeError(f"mc alias set failed: {done.stdout}{done.stderr}")

    @classmethod
    def tearDownClass(cls):
        import shutil

        shutil.rmtree(getattr(cls, "config_dir", ""), ignore_errors=True)
        super().tearDownClass()

    @classmethod
    def run_mc(cls, stdin, *args):
        command = [cls.mc_path, "--config-dir", cls.config_dir, "--no-color", "--quiet", *args]
        return subprocess.run(command, env=cls.env, input=stdin, capture_output=True, timeout=300)

    def mc(self, stdin, *args):
        done = self.run_mc(stdin, *args)
        if done.returncode != 0:
            self.fail(
                f"mc {' '.join(args)} exited with {done.returncode}\n"
                f"stderr:\n{done.stderr.decode(errors='replace')[-3000:]}\n"
                f"server log:\n{self.server.log_tail(20)}"
            )
        return done.stdout

    def test_pipe_several_parts(self):
        bucket = unique_bucket("pipe")
        self.mc(None, "mb", f"t/{bucket}")
        data = random.Random(3).randbytes(12 * MiB + 4321)
        self.mc(data, "pipe", "--part-size", "5MiB", f"t/{bucket}/backup.dump")
        self.assertEqual(self.mc(None, "cat", f"t/{bucket}/backup.dump"), data)
        head = client(self.endpoint).head_object(Bucket=bucket, Key="backup.dump")
        self.assertEqual(head["ContentLength"], len(data))
        self.assertTrue(head["ETag"].endswith('-3"'), head["ETag"])

    def test_pipe_small_stream(self):
        bucket = unique_bucket("pipe")
        self.mc(None, "mb", f"t/{bucket}")
        self.mc(b"hello\n", "pipe", f"t/{bucket}/small")
        self.assertEqual(self.mc(None, "cat", f"t/{bucket}/small"), b"hello\n")


if __name__ == "__main__":
    unittest.main()
