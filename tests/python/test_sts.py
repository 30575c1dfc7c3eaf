"""Temporary credentials (STS AssumeRole) against a real `tessera server`:
asked for with boto3's STS client by users made with the real `mc admin`,
used with boto3's S3 client.

The server runs with TESSERA_TEST_STS_MIN_DURATION=1s (a setting for tests
only) so that an expired session can be tested without waiting MinIO's
15-minute minimum.
"""

import json
import time
import unittest
import urllib.request

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from s3util import client
from tessera_server import ACCESS_KEY, REGION, SECRET_KEY
from test_iam import IamCase

ROLE = "arn:xxx:xxx:xxx:xxxx"


def sts(endpoint, access_key, secret_key, session_token=None):
    return boto3.session.Session().client(
        "sts",
        endpoint_url=endpoint,
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
        aws_session_token=session_token,
        region_name=REGION,
        # The server, not botocore, judges the parameters (botocore holds
        # DurationSeconds to AWS's 900..43200).
        config=Config(parameter_validation=False, retries={"total_max_attempts": 1, "mode": "standard"}),
    )


def temp_client(endpoint, creds, token=None):
    """An S3 client with temporary credentials (`token` overrides theirs)."""
    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=creds["AccessKeyId"],
        aws_secret_access_key=creds["SecretAccessKey"],
        aws_session_token=creds["SessionToken"] if token is None else token,
        region_name=REGION,
        config=Config(
            signature_version="s3v4",
            s3={"addressing_style": "path"},
            retries={"total_max_attempts": 1, "mode": "standard"},
        ),
    )


def read_only(bucket):
    return {
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Action": ["s3:GetObject"],
            "Resource": [f"arn:aws:s3:::{bucket}/*"],
        }],
    }


class StsTests(IamCase):
    server_env = dict(IamCase.server_env, TESSERA_TEST_STS_MIN_DURATION="1s")

    def assume(self, access_key, secret_key, **kwargs):
        r = sts(self.endpoint, access_key, secret_key).assume_role(
            RoleArn=ROLE, RoleSessionName="session", **kwargs
        )
        return r["Credentials"]

    def sts_denied(self, code, status, call, *args, **kwargs):
        with self.assertRaises(ClientError) as cm:
            call(*args, **kwargs)
        self.assertEqual(cm.exception.response["Error"]["Code"], code)
        self.assertEqual(cm.exception.response["ResponseMetadata"]["HTTPStatusCode"], status)

    def test_temporary_credentials_act_with_the_parents_rights(self):
        b = self.bucket("a.txt")
        self.user("stsalice", "stsalice-secret", "readwrite")
        creds = self.assume("stsalice", "stsalice-secret", DurationSeconds=900)
        self.assertEqual(len(creds["AccessKeyId"]), 20)
        self.assertGreater(creds["Expiration"].timestamp(), time.time() + 800)
        t = temp_client(self.endpoint, creds)
        self.assertEqual(t.get_object(Bucket=b, Key="a.txt")["Body"].read(), b"body of a.txt")
        t.put_object(Bucket=b, Key="by-temp", Body=b"x")
        self.assertEqual(self.root.get_object(Bucket=b, Key="by-temp")["Body"].read(), b"x")
        self.assertIn(b, [x["Name"] for x in t.list_buckets()["Buckets"]])
        # Presigned URLs carry the token in the query.
        url = t.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "a.txt"}, ExpiresIn=60)
        self.assertIn("X-Amz-Security-Token", url)
        with urllib.request.urlopen(url) as r:
            self.assertEqual(r.read(), b"body of a.txt")

    def test_session_policy_narrows_the_parents_rights(self):
        b = self.bucket("a.txt")
        other = self.bucket("a.txt")
        self.user("stsbob", "stsbob-secret", "readwrite")
        creds = self.assume("stsbob", "stsbob-secret", Policy=json.dumps(read_only(b)))
        t = temp_client(self.endpoint, creds)
        self.assertEqual(t.get_object(Bucket=b, Key="a.txt")["Body"].read(), b"body of a.txt")
        # The parent may write and read the other bucket; the session may not.
        self.denied(t.put_object, Bucket=b, Key="new", Body=b"x")
        self.denied(t.get_object, Bucket=other, Key="a.txt")
        # A session policy cannot grant what the parent lacks.
        self.user("stscarol", "stscarol-secret", "readonly")
        wide = {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": ["s3:*"], "Resource": ["arn:aws:s3:::*"]}],
        }
        creds = self.assume("stscarol", "stscarol-secret", Policy=json.dumps(wide))
        t = temp_client(self.endpoint, creds)
        self.assertEqual(t.get_object(Bucket=b, Key="a.txt")["Body"].read(), b"body of a.txt")
        self.denied(t.put_object, Bucket=b, Key="new", Body=b"x")

    def test_root_may_assume_a_role_bounded_by_its_session_policy(self):
        b = self.bucket("a.txt")
        creds = self.assume(ACCESS_KEY, SECRET_KEY)
        t = temp_client(self.endpoint, creds)
        t.put_object(Bucket=b, Key="root-temp", Body=b"x")
        creds = self.assume(ACCESS_KEY, SECRET_KEY, Policy=json.dumps(read_only(b)))
        t = temp_client(self.endpoint, creds)
        t.get_object(Bucket=b, Key="a.txt")
        self.denied(t.put_object, Bucket=b, Key="no", Body=b"x")

    def test_wrong_or_missing_token_is_refused(self):
        b = self.bucket("a.txt")
        self.user("stsdave", "stsdave-secret", "readwrite")
        creds = self.assume("stsdave", "stsdave-secret")
        no_token = client(self.endpoint, access_key=creds["AccessKeyId"], secret_key=creds["SecretAccessKey"])
        self.denied(no_token.get_object, Bucket=b, Key="a.txt", code="MissingSecurityHeader", status=400)
        other = self.assume("stsdave", "stsdave-secret")
        wrong = temp_client(self.endpoint, creds, token=other["SessionToken"])
        self.denied(wrong.get_object, Bucket=b, Key="a.txt", code="InvalidToken", status=400)
        garbage = temp_client(self.endpoint, creds, token="not-a-token")
        self.denied(garbage.get_object, Bucket=b, Key="a.txt", code="InvalidToken", status=400)
        # Temporary credentials cannot ask for more.
        self.sts_denied(
            "AccessDenied", 403,
            sts(self.endpoint, creds["AccessKeyId"], creds["SecretAccessKey"], creds["SessionToken"]).assume_role,
            RoleArn=ROLE, RoleSessionName="session",
        )

    def test_expired_session_is_refused_with_expired_token(self):
        b = self.bucket("a.txt")
        self.user("stserin", "stserin-secret", "readwrite")
        creds = self.assume("stserin", "stserin-secret", DurationSeconds=1)
        time.sleep(2.1)
        t = temp_client(self.endpoint, creds)
        self.denied(t.get_object, Bucket=b, Key="a.txt", code="ExpiredToken", status=403)
        # Still refused once a reload has dropped it (another change
        # reloads every view).
        self.user("stserin2", "stserin2-secret")
        self.denied(t.get_object, Bucket=b, Key="a.txt", code="ExpiredToken", status=403)

    def test_disabled_or_removed_parent_disables_its_sessions(self):
        b = self.bucket("a.txt")
        self.user("stsfrank", "stsfrank-secret", "readwrite")
        creds = self.assume("stsfrank", "stsfrank-secret")
        t = temp_client(self.endpoint, creds)
        t.get_object(Bucket=b, Key="a.txt")
        self.mc("admin", "user", "disable", "t", "stsfrank")
        self.denied(t.get_object, Bucket=b, Key="a.txt", code="InvalidAccessKeyId")
        self.mc("admin", "user", "enable", "t", "stsfrank")
        t.get_object(Bucket=b, Key="a.txt")
        self.mc("admin", "user", "remove", "t", "stsfrank")
        self.denied(t.get_object, Bucket=b, Key="a.txt", code="InvalidAccessKeyId")

    def test_bad_requests_get_sts_errors(self):
        self.user("stsgina", "stsgina-secret", "readwrite")
        c = sts(self.endpoint, "stsgina", "stsgina-secret")
        self.sts_denied("InvalidParameterValue", 400, c.assume_role,
                        RoleArn=ROLE, RoleSessionName="session", DurationSeconds=31536001)
        self.sts_denied("InvalidParameterValue", 400, c.assume_role,
                        RoleArn=ROLE, RoleSessionName="session", Policy="{not json")
        self.sts_denied("InvalidParameterValue", 400, c.assume_role,
                        RoleArn=ROLE, RoleSessionName="session", Policy=json.dumps({"Statement": []}))
        big = read_only("b" * 3000)
        self.sts_denied("InvalidParameterValue", 400, c.assume_role,
                        RoleArn=ROLE, RoleSessionName="session", Policy=json.dumps(big))
        wrong = sts(self.endpoint, "stsgina", "not-the-secret")
        self.sts_denied("AccessDenied", 403, wrong.assume_role, RoleArn=ROLE, RoleSessionName="session")
        unknown = sts(self.endpoint, "nobody", "nobody-secret")
        self.sts_denied("AccessDenied", 403, unknown.assume_role, RoleArn=ROLE, RoleSessionName="session")


if __name__ == "__main__":
    unittest.main()
