"""Secrets stay out of the logs: a server at its most verbose log level
(TESSERA_LOG=trace) serves SSE-C, SSE-S3 and SSE-KMS writes, reads, copies
and multipart uploads, and refused requests (a wrong SSE-C key, a bad
signature); its whole log then holds none of the keys used (the SSE-C
keys and the KMS master key in base64 and hex, the root secret key)."""

import base64
import hashlib
import os
import unittest

from botocore.exceptions import ClientError

from s3util import client
from tessera_server import SECRET_KEY, TesseraServer

MiB = 1024 * 1024


class SecretsStayOutOfLogs(unittest.TestCase):
    def test_no_key_reaches_the_log(self):
        master = os.urandom(32)
        name = "tessera-secret-" + os.urandom(4).hex()
        server = TesseraServer(env={
            "TESSERA_LOG": "trace",
            "TESSERA_KMS_SECRET_KEY": f"{name}:{base64.b64encode(master).decode()}",
            "TESSERA_INSECURE_SSE_C": "on",
        }).start()
        ssec = os.urandom(32)
        wrong = os.urandom(32)
        try:
            s3 = client(server.endpoint)
            s3.create_bucket(Bucket="secrets")
            c = dict(SSECustomerAlgorithm="AES256", SSECustomerKey=ssec)
            s3.put_object(Bucket="secrets", Key="c", Body=b"x" * 1000, **c)
            s3.get_object(Bucket="secrets", Key="c", **c)["Body"].read()
            s3.copy_object(Bucket="secrets", Key="c2", CopySource="secrets/c",
                           CopySourceSSECustomerAlgorithm="AES256", CopySourceSSECustomerKey=ssec, **c)
            with self.assertRaises(ClientError):
                s3.get_object(Bucket="secrets", Key="c", SSECustomerAlgorithm="AES256", SSECustomerKey=wrong)
            s3.put_object(Bucket="secrets", Key="s3", Body=b"y" * 1000, ServerSideEncryption="AES256")
            s3.put_object(Bucket="secrets", Key="kms", Body=b"z" * 1000, ServerSideEncryption="aws:kms",
                          SSEKMSKeyId=name)
            for k in ("s3", "kms"):
                s3.get_object(Bucket="secrets", Key=k)["Body"].read()
            up = s3.create_multipart_upload(Bucket="secrets", Key="mp", **c)
            p = s3.upload_part(Bucket="secrets", Key="mp", UploadId=up["UploadId"], PartNumber=1,
                               Body=b"m" * MiB, **c)
            s3.complete_multipart_upload(Bucket="secrets", Key="mp", UploadId=up["UploadId"],
                                         MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
            with self.assertRaises(ClientError):
                client(server.endpoint, secret_key="not-the-secret-key").list_buckets()
        finally:
            server.stop()
            log = open(server.log_path, "rb").read()
            server.cleanup()
        # The gateway logs every request at debug level: the log is verbose.
        self.assertGreater(log.count(b"DEBUG"), 10, "the debug log was written")
        for label, key in [("SSE-C key", ssec), ("wrong SSE-C key", wrong), ("KMS master key", master)]:
            for form in (base64.b64encode(key), key.hex().encode(), key.hex().upper().encode(),
                         base64.b64encode(hashlib.md5(key).digest())):
                self.assertNotIn(form, log, f"{label} in the log")
        self.assertNotIn(SECRET_KEY.encode(), log, "the root secret key in the log")


if __name__ == "__main__":
    unittest.main()
