"""Bucket tagging (Put/Get/DeleteBucketTagging) through boto3 against a real
`tessera server`: S3's validation and errors, and tags that survive a
restart because they live in the bucket's `.metadata.bin`, where MinIO
keeps them.

Codes and statuses are AWS S3's: a bucket without tags answers
GetBucketTagging with 404 NoSuchTagSet; more than 50 tags, a duplicate key,
an over-long key or value, or a key in the reserved `aws:` namespace is 400
InvalidTag; PutBucketTagging answers 204.
"""

import unittest

from botocore.exceptions import ClientError

from s3util import client, error_of, raw_request
from tessera_server import ServerTestCase, TesseraServer, unique_bucket


def tag_set(pairs):
    return {"TagSet": [{"Key": k, "Value": v} for k, v in pairs]}


class BucketTagging(ServerTestCase):
    def setUp(self):
        super().setUp()
        self.s3 = client(self.endpoint)
        self.bucket = unique_bucket("btag")
        self.s3.create_bucket(Bucket=self.bucket)

    def get_tags(self, bucket=None):
        got = self.s3.get_bucket_tagging(Bucket=bucket or self.bucket)
        return [(t["Key"], t["Value"]) for t in got["TagSet"]]

    def test_no_tags_is_no_such_tag_set(self):
        with self.assertRaises(ClientError) as c:
            self.s3.get_bucket_tagging(Bucket=self.bucket)
        self.assertEqual(error_of(c), ("NoSuchTagSet", 404))

    def test_put_get_replace_delete(self):
        pairs = [("team", "storage"), ("cost centre", "42/a&b"), ("ünï", "çödé"), ("empty", "")]
        r = self.s3.put_bucket_tagging(Bucket=self.bucket, Tagging=tag_set(pairs))
        self.assertEqual(r["ResponseMetadata"]["HTTPStatusCode"], 204)
        self.assertEqual(self.get_tags(), pairs)
        self.s3.put_bucket_tagging(Bucket=self.bucket, Tagging=tag_set([("only", "one")]))
        self.assertEqual(self.get_tags(), [("only", "one")])
        r = self.s3.delete_bucket_tagging(Bucket=self.bucket)
        self.assertEqual(r["ResponseMetadata"]["HTTPStatusCode"], 204)
        with self.assertRaises(ClientError) as c:
            self.s3.get_bucket_tagging(Bucket=self.bucket)
        self.assertEqual(error_of(c), ("NoSuchTagSet", 404))
        # Deleting again is still a success.
        r = self.s3.delete_bucket_tagging(Bucket=self.bucket)
        self.assertEqual(r["ResponseMetadata"]["HTTPStatusCode"], 204)

    def test_bucket_tags_are_not_object_tags(self):
        self.s3.put_object(Bucket=self.bucket, Key="o", Body=b"x")
        self.s3.put_bucket_tagging(Bucket=self.bucket, Tagging=tag_set([("b", "1")]))
        self.assertEqual(self.s3.get_object_tagging(Bucket=self.bucket, Key="o")["TagSet"], [])
        self.s3.put_object_tagging(Bucket=self.bucket, Key="o", Tagging=tag_set([("o", "2")]))
        self.assertEqual(self.get_tags(), [("b", "1")])

    def test_fifty_tags_and_no_more(self):
        fifty = [(f"k{i}", f"v{i}") for i in range(50)]
        self.s3.put_bucket_tagging(Bucket=self.bucket, Tagging=tag_set(fifty))
        self.assertEqual(self.get_tags(), fifty)
        with self.assertRaises(ClientError) as c:
            self.s3.put_bucket_tagging(Bucket=self.bucket, Tagging=tag_set(fifty + [("k50", "x")]))
        self.assertEqual(error_of(c), ("InvalidTag", 400))
        # The refused request changed nothing.
        self.assertEqual(self.get_tags(), fifty)

    def test_invalid_tags(self):
        cases = [
            [("dup", "1"), ("dup", "2")],
            [("k" * 129, "v")],
            [("k", "v" * 257)],
            [("aws:createdBy", "me")],
        ]
        for pairs in cases:
            with self.subTest(pairs=[(k[:10], v[:10]) for k, v in pairs]):
                with self.assertRaises(ClientError) as c:
                    self.s3.put_bucket_tagging(Bucket=self.bucket, Tagging=tag_set(pairs))
                self.assertEqual(error_of(c), ("InvalidTag", 400))
        # An empty key, which boto3 refuses to send.
        body = b"<Tagging><TagSet><Tag><Key></Key><Value>v</Value></Tag></TagSet></Tagging>"
        r = raw_request(self.endpoint, "PUT", f"/{self.bucket}", "tagging", body=body)
        self.assertEqual(r.status, 400, r.body)
        self.assertIn(b"<Code>InvalidTag</Code>", r.body)
        self.s3.put_bucket_tagging(Bucket=self.bucket, Tagging=tag_set([("k" * 128, "v" * 256)]))

    def test_malformed_document(self):
        for body in [b"<Tagging><Nope/></Tagging>", b"<NotTagging/>", b"not xml"]:
            with self.subTest(body=body):
                r = raw_request(self.endpoint, "PUT", f"/{self.bucket}", "tagging", body=body)
                self.assertEqual(r.status, 400, r.body)
                self.assertIn(b"<Code>MalformedXML</Code>", r.body)

    def test_missing_bucket(self):
        for call in [
            lambda b: self.s3.get_bucket_tagging(Bucket=b),
            lambda b: self.s3.put_bucket_tagging(Bucket=b, Tagging=tag_set([("a", "b")])),
            lambda b: self.s3.delete_bucket_tagging(Bucket=b),
        ]:
            with self.assertRaises(ClientError) as c:
                call(unique_bucket("nobucket"))
            self.assertEqual(error_of(c), ("NoSuchBucket", 404))


class BucketTaggingPersists(unittest.TestCase):
    def test_tags_survive_a_restart(self):
        server = TesseraServer().start()
        try:
            s3 = client(server.endpoint)
            s3.create_bucket(Bucket="kept")
            s3.put_bucket_tagging(Bucket="kept", Tagging=tag_set([("a", "1"), ("b", "2")]))
            server.stop()
            server.start()
            s3 = client(server.endpoint)
            got = s3.get_bucket_tagging(Bucket="kept")["TagSet"]
            self.assertEqual([(t["Key"], t["Value"]) for t in got], [("a", "1"), ("b", "2")])
        finally:
            server.cleanup()


if __name__ == "__main__":
    unittest.main()
