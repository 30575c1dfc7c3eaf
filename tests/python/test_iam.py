"""Identity and access against a real `tessera server`: bucket policies
and anonymous access (boto3), users, groups and policies made with the
real `mc admin` and used with boto3.
"""

import base64
import json
import os
import tempfile
import time
import unittest

import boto3
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import ClientError

from s3util import client
from tessera_server import REGION, unique_bucket
from test_mc import McCase


def anonymous(endpoint):
    """An unsigned (anonymous) path-style client without retries."""
    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint,
        region_name=REGION,
        config=Config(
            signature_version=UNSIGNED,
            s3={"addressing_style": "path"},
            retries={"total_max_attempts": 1, "mode": "standard"},
        ),
    )


def public_read(bucket, list_too=True):
    statements = [{
        "Effect": "Allow",
        "Principal": {"AWS": ["*"]},
        "Action": ["s3:GetObject"],
        "Resource": [f"arn:aws:s3:::{bucket}/*"],
    }]
    if list_too:
        statements.append({
            "Effect": "Allow",
            "Principal": "*",
            "Action": ["s3:ListBucket", "s3:GetBucketLocation"],
            "Resource": [f"arn:aws:s3:::{bucket}"],
        })
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


class IamCase(McCase):
    alias_options = ("--path", "on")
    # A KMS key, so that policies may require SSE-S3 on writes.
    server_env = {"TESSERA_KMS_SECRET_KEY": "iam-test-key:" + base64.b64encode(os.urandom(32)).decode()}

    def setUp(self):
        super().setUp()
        self.root = client(self.endpoint)

    def denied(self, call, *args, code="AccessDenied", status=403, **kwargs):
        with self.assertRaises(ClientError) as cm:
            call(*args, **kwargs)
        self.assertEqual(cm.exception.response["Error"]["Code"], code)
        self.assertEqual(cm.exception.response["ResponseMetadata"]["HTTPStatusCode"], status)

    def bucket(self, *objects):
        b = unique_bucket("iam")
        self.root.create_bucket(Bucket=b)
        for k in objects:
            self.root.put_object(Bucket=b, Key=k, Body=f"body of {k}".encode())
        return b

    def user(self, name, secret, *policies, group=None):
        """A user made with mc admin, with `policies` attached (to it, or
        to `group`, made with it as its member); its boto3 client."""
        self.mc("admin", "user", "add", "t", name, secret)
        if group:
            self.mc("admin", "group", "add", "t", group, name)
        for p in policies:
            target = ["--group", group] if group else ["--user", name]
            self.mc("admin", "policy", "attach", "t", p, *target)
        return client(self.endpoint, access_key=name, secret_key=secret)

    def policy(self, name, document):
        path = os.path.join(self.tmpdir(), f"{name}.json")
        with open(path, "w") as f:
            json.dump(document, f)
        self.mc("admin", "policy", "create", "t", name, path)


class BucketPolicyTests(IamCase):
    def test_public_read_bucket_serves_anonymous_reads_only(self):
        b = self.bucket("a.txt", "dir/b.txt")
        anon = anonymous(self.endpoint)
        self.denied(anon.get_object, Bucket=b, Key="a.txt")
        self.denied(anon.list_objects_v2, Bucket=b)
        self.denied(self.root.get_bucket_policy, Bucket=b, code="NoSuchBucketPolicy", status=404)

        doc = public_read(b)
        self.root.put_bucket_policy(Bucket=b, Policy=doc)
        self.assertEqual(json.loads(self.root.get_bucket_policy(Bucket=b)["Policy"]), json.loads(doc))
        self.assertTrue(self.root.get_bucket_policy_status(Bucket=b)["PolicyStatus"]["IsPublic"])

        self.assertEqual(anon.get_object(Bucket=b, Key="a.txt")["Body"].read(), b"body of a.txt")
        self.assertEqual(anon.head_object(Bucket=b, Key="dir/b.txt")["ContentLength"], len(b"body of dir/b.txt"))
        keys = [o["Key"] for o in anon.list_objects_v2(Bucket=b)["Contents"]]
        self.assertEqual(keys, ["a.txt", "dir/b.txt"])
        # Reading is all the policy allows.
        self.denied(anon.put_object, Bucket=b, Key="new", Body=b"x")
        self.denied(anon.delete_object, Bucket=b, Key="a.txt")
        self.denied(anon.get_bucket_policy, Bucket=b)
        self.denied(anon.list_buckets)
        other = self.bucket("a.txt")
        self.denied(anon.get_object, Bucket=other, Key="a.txt")

        self.root.delete_bucket_policy(Bucket=b)
        self.denied(anon.get_object, Bucket=b, Key="a.txt")
        self.denied(self.root.get_bucket_policy_status, Bucket=b, code="NoSuchBucketPolicy", status=404)

    def test_objects_only_policy_is_not_a_listing(self):
        b = self.bucket("a.txt")
        self.root.put_bucket_policy(Bucket=b, Policy=public_read(b, list_too=False))
        anon = anonymous(self.endpoint)
        self.assertEqual(anon.get_object(Bucket=b, Key="a.txt")["Body"].read(), b"body of a.txt")
        self.denied(anon.list_objects_v2, Bucket=b)

    def test_anonymous_write_where_a_prefix_allows_it(self):
        b = self.bucket()
        self.root.put_bucket_policy(Bucket=b, Policy=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:PutObject",
                           "Resource": f"arn:aws:s3:::{b}/uploads/*"}],
        }))
        anon = anonymous(self.endpoint)
        anon.put_object(Bucket=b, Key="uploads/x", Body=b"dropped")
        self.assertEqual(self.root.get_object(Bucket=b, Key="uploads/x")["Body"].read(), b"dropped")
        self.denied(anon.put_object, Bucket=b, Key="elsewhere", Body=b"x")
        self.denied(anon.get_object, Bucket=b, Key="uploads/x")

    def test_anonymous_multi_delete_is_decided_key_by_key(self):
        b = self.bucket("drop/a", "keep/b")
        anon = anonymous(self.endpoint)
        objects = {"Objects": [{"Key": "drop/a"}, {"Key": "keep/b"}]}
        # No bucket policy: the request is refused before its body is read.
        self.denied(anon.delete_objects, Bucket=b, Delete=objects)
        self.root.put_bucket_policy(Bucket=b, Policy=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:DeleteObject",
                           "Resource": f"arn:aws:s3:::{b}/drop/*"}],
        }))
        out = anon.delete_objects(Bucket=b, Delete=objects)
        self.assertEqual([d["Key"] for d in out.get("Deleted", [])], ["drop/a"])
        self.assertEqual([(e["Key"], e["Code"]) for e in out["Errors"]], [("keep/b", "AccessDenied")])
        keys = [o["Key"] for o in self.root.list_objects_v2(Bucket=b)["Contents"]]
        self.assertEqual(keys, ["keep/b"])

    def test_malformed_policies_are_refused(self):
        b = self.bucket()
        other = unique_bucket("iam")
        for doc in [
            "not json",
            json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": "*",
                        "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{other}/*"}]}),
            json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Maybe", "Principal": "*",
                        "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{b}/*"}]}),
            json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": "*",
                        "Action": "s3:NoSuchAction", "Resource": f"arn:aws:s3:::{b}/*"}]}),
        ]:
            with self.subTest(doc=doc[:80]):
                self.denied(self.root.put_bucket_policy, Bucket=b, Policy=doc, code="MalformedPolicy", status=400)
        self.denied(self.root.get_bucket_policy, Bucket=b, code="NoSuchBucketPolicy", status=404)
        big = json.dumps({"Version": "2012-10-17", "Statement": [{"Sid": "x" * 21000, "Effect": "Allow",
                          "Principal": "*", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{b}/*"}]})
        with self.assertRaises(ClientError) as cm:
            self.root.put_bucket_policy(Bucket=b, Policy=big)
        self.assertEqual(cm.exception.response["ResponseMetadata"]["HTTPStatusCode"], 400)

    def test_policy_of_a_missing_bucket(self):
        b = unique_bucket("iam")
        self.denied(self.root.put_bucket_policy, Bucket=b, Policy=public_read(b), code="NoSuchBucket", status=404)
        self.denied(self.root.get_bucket_policy, Bucket=b, code="NoSuchBucket", status=404)


class AclTests(IamCase):
    """ACLs as S3 has them with Object Ownership "bucket owner enforced":
    they grant nothing, so only those that say the owner has full control
    are accepted."""

    def test_canned_acls(self):
        b = self.bucket()
        for acl in ("private", "bucket-owner-full-control"):
            self.root.put_object(Bucket=b, Key=acl, Body=b"x", ACL=acl)
        for acl in ("public-read", "public-read-write", "authenticated-read"):
            with self.subTest(acl=acl):
                self.denied(self.root.put_object, Bucket=b, Key="k", Body=b"x", ACL=acl,
                            code="AccessControlListNotSupported", status=400)
                self.denied(self.root.put_bucket_acl, Bucket=b, ACL=acl,
                            code="AccessControlListNotSupported", status=400)
        self.denied(self.root.put_object, Bucket=b, Key="k", Body=b"x", GrantRead='uri="http://acs.amazonaws.com/groups/global/AllUsers"',
                    code="AccessControlListNotSupported", status=400)
        self.denied(self.root.create_bucket, Bucket=unique_bucket("iam"), ACL="public-read",
                    code="AccessControlListNotSupported", status=400)
        self.denied(self.root.create_multipart_upload, Bucket=b, Key="m", ACL="public-read",
                    code="AccessControlListNotSupported", status=400)
        self.root.put_bucket_acl(Bucket=b, ACL="private")
        with self.assertRaises(ClientError):
            anonymous(self.endpoint).get_object(Bucket=b, Key="private")

    def test_acl_documents(self):
        b = self.bucket("k")
        acl = self.root.get_object_acl(Bucket=b, Key="k")
        [grant] = acl["Grants"]
        self.assertEqual(grant["Permission"], "FULL_CONTROL")
        self.assertEqual(grant["Grantee"]["ID"], acl["Owner"]["ID"])
        policy = {"Owner": acl["Owner"], "Grants": acl["Grants"]}
        self.root.put_object_acl(Bucket=b, Key="k", AccessControlPolicy=policy)
        self.root.put_bucket_acl(Bucket=b, AccessControlPolicy=policy)
        wider = {"Owner": acl["Owner"], "Grants": acl["Grants"] + [
            {"Grantee": {"Type": "Group", "URI": "http://acs.amazonaws.com/groups/global/AllUsers"},
             "Permission": "READ"}]}
        self.denied(self.root.put_object_acl, Bucket=b, Key="k", AccessControlPolicy=wider,
                    code="AccessControlListNotSupported", status=400)
        self.denied(self.root.put_object_acl, Bucket=b, Key="missing", ACL="private",
                    code="NoSuchKey", status=404)

    def test_ownership_controls(self):
        b = self.bucket()
        rules = self.root.get_bucket_ownership_controls(Bucket=b)["OwnershipControls"]["Rules"]
        self.assertEqual(rules, [{"ObjectOwnership": "BucketOwnerEnforced"}])
        self.root.put_bucket_ownership_controls(
            Bucket=b, OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]})
        self.denied(self.root.put_bucket_ownership_controls, Bucket=b,
                    OwnershipControls={"Rules": [{"ObjectOwnership": "ObjectWriter"}]},
                    code="InvalidRequest", status=400)


class UserTests(IamCase):
    def test_readonly_user_reads_and_cannot_write(self):
        b = self.bucket("a.txt")
        alice = self.user("alice-ro", "alice-secret-1", "readonly")
        self.assertEqual(alice.get_object(Bucket=b, Key="a.txt")["Body"].read(), b"body of a.txt")
        self.denied(alice.put_object, Bucket=b, Key="new", Body=b"x")
        self.denied(alice.delete_object, Bucket=b, Key="a.txt")
        self.denied(alice.create_bucket, Bucket=unique_bucket("iam"))
        # `readonly` has no s3:ListBucket: listing is refused, as in MinIO.
        self.denied(alice.list_objects_v2, Bucket=b)

    def test_user_without_policies_may_do_nothing(self):
        b = self.bucket("a.txt")
        nobody = self.user("nobody-1", "nobody-secret-1")
        self.denied(nobody.get_object, Bucket=b, Key="a.txt")
        self.denied(nobody.list_buckets)
        self.denied(nobody.put_object, Bucket=b, Key="x", Body=b"x")

    def test_group_policy_applies_to_members(self):
        b = self.bucket()
        bob = self.user("bob-rw", "bob-secret-12", "readwrite", group="writers-1")
        bob.put_object(Bucket=b, Key="from-bob", Body=b"hello")
        self.assertEqual(bob.get_object(Bucket=b, Key="from-bob")["Body"].read(), b"hello")
        self.assertIn(b, [x["Name"] for x in bob.list_buckets()["Buckets"]])
        # A disabled group no longer grants its policies.
        self.mc("admin", "group", "disable", "t", "writers-1")
        self.denied(bob.put_object, Bucket=b, Key="again", Body=b"x")
        self.mc("admin", "group", "enable", "t", "writers-1")
        bob.put_object(Bucket=b, Key="again", Body=b"x")

    def test_disabled_and_removed_users_are_refused(self):
        b = self.bucket("a.txt")
        carol = self.user("carol-1", "carol-secret-1", "readwrite")
        carol.get_object(Bucket=b, Key="a.txt")
        self.mc("admin", "user", "disable", "t", "carol-1")
        with self.assertRaises(ClientError) as cm:
            carol.get_object(Bucket=b, Key="a.txt")
        self.assertEqual(cm.exception.response["ResponseMetadata"]["HTTPStatusCode"], 403)
        self.mc("admin", "user", "enable", "t", "carol-1")
        carol.get_object(Bucket=b, Key="a.txt")
        self.mc("admin", "user", "remove", "t", "carol-1")
        with self.assertRaises(ClientError) as cm:
            carol.get_object(Bucket=b, Key="a.txt")
        self.assertEqual(cm.exception.response["Error"]["Code"], "InvalidAccessKeyId")

    def test_bucket_policy_deny_beats_user_allow(self):
        b = self.bucket("secret.txt", "open.txt")
        dave = self.user("dave-1", "dave-secret-1", "readwrite")
        self.root.put_bucket_policy(Bucket=b, Policy=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Deny", "Principal": {"AWS": ["*"]}, "Action": ["s3:GetObject"],
                           "Resource": [f"arn:aws:s3:::{b}/secret.txt"]}],
        }))
        self.denied(dave.get_object, Bucket=b, Key="secret.txt")
        self.assertEqual(dave.get_object(Bucket=b, Key="open.txt")["Body"].read(), b"body of open.txt")
        # The root user is not bound by policies.
        self.root.get_object(Bucket=b, Key="secret.txt")

    def test_bucket_policy_grants_a_user_without_policies(self):
        b = self.bucket("shared.txt")
        erin = self.user("erin-1", "erin-secret-1")
        self.denied(erin.get_object, Bucket=b, Key="shared.txt")
        self.root.put_bucket_policy(Bucket=b, Policy=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam:::user/erin-1"]},
                           "Action": ["s3:GetObject"], "Resource": [f"arn:aws:s3:::{b}/*"]}],
        }))
        self.assertEqual(erin.get_object(Bucket=b, Key="shared.txt")["Body"].read(), b"body of shared.txt")

    def test_conditions(self):
        b = self.bucket("home/frank-1/a", "home/other/b")
        self.policy("home-dirs", {
            "Version": "2012-10-17",
            "Statement": [
                {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [f"arn:aws:s3:::{b}"],
                 "Condition": {"StringLike": {"s3:prefix": ["home/${aws:username}/*"]}}},
                {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"],
                 "Resource": [f"arn:aws:s3:::{b}/home/${{aws:username}}/*"]},
                {"Effect": "Deny", "Action": ["s3:PutObject"], "Resource": [f"arn:aws:s3:::{b}/*"],
                 "Condition": {"StringNotEquals": {"s3:x-amz-server-side-encryption": "AES256"}}},
            ],
        })
        frank = self.user("frank-1", "frank-secret-1", "home-dirs")
        keys = [o["Key"] for o in frank.list_objects_v2(Bucket=b, Prefix="home/frank-1/")["Contents"]]
        self.assertEqual(keys, ["home/frank-1/a"])
        self.denied(frank.list_objects_v2, Bucket=b, Prefix="home/other/")
        self.denied(frank.list_objects_v2, Bucket=b)
        frank.get_object(Bucket=b, Key="home/frank-1/a")
        self.denied(frank.get_object, Bucket=b, Key="home/other/b")
        # Writes must ask for encryption.
        self.denied(frank.put_object, Bucket=b, Key="home/frank-1/plain", Body=b"x")
        frank.put_object(Bucket=b, Key="home/frank-1/sealed", Body=b"x", ServerSideEncryption="AES256")

    def test_existing_object_tags(self):
        b = self.bucket()
        self.root.put_object(Bucket=b, Key="alpha", Body=b"a", Tagging="project=alpha&stage=one")
        self.root.put_object(Bucket=b, Key="beta", Body=b"b", Tagging="project=beta")
        self.root.put_object(Bucket=b, Key="untagged", Body=b"u")
        self.policy("project-alpha", {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": [f"arn:aws:s3:::{b}/*"],
                           "Condition": {"StringEquals": {"s3:ExistingObjectTag/project": "alpha"}}}],
        })
        kim = self.user("kim-1", "kim-secret-12", "project-alpha")
        self.assertEqual(kim.get_object(Bucket=b, Key="alpha")["Body"].read(), b"a")
        self.denied(kim.get_object, Bucket=b, Key="beta")
        self.denied(kim.get_object, Bucket=b, Key="untagged")
        # Retagged, the object follows its new tags.
        self.root.put_object_tagging(Bucket=b, Key="beta", Tagging={"TagSet": [{"Key": "project", "Value": "alpha"}]})
        self.assertEqual(kim.get_object(Bucket=b, Key="beta")["Body"].read(), b"b")

    def test_source_ip_and_secure_transport(self):
        b = self.bucket("a.txt")
        self.policy("from-elsewhere", {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": [f"arn:aws:s3:::{b}/*"],
                           "Condition": {"IpAddress": {"aws:SourceIp": ["10.99.0.0/16"]}}}],
        })
        self.policy("from-loopback", {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": [f"arn:aws:s3:::{b}/*"],
                           "Condition": {"IpAddress": {"aws:SourceIp": ["127.0.0.0/8"]},
                                         "Bool": {"aws:SecureTransport": "false"}}}],
        })
        gina = self.user("gina-1", "gina-secret-1", "from-elsewhere")
        self.denied(gina.get_object, Bucket=b, Key="a.txt")
        self.mc("admin", "policy", "attach", "t", "from-loopback", "--user", "gina-1")
        gina.get_object(Bucket=b, Key="a.txt")

    def test_mc_admin_lists_and_describes(self):
        self.policy("listing-1", {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::x/*"]}]})
        self.user("henry-1", "henry-secret-1", "listing-1", group="listers-1")
        users = [json.loads(line) for line in self.mc("--json", "admin", "user", "list", "t").decode().splitlines()]
        self.assertIn("henry-1", [u.get("accessKey") for u in users])
        info = json.loads(self.mc("--json", "admin", "user", "info", "t", "henry-1"))
        self.assertEqual(info["userStatus"], "enabled")
        self.assertIn("listers-1", info.get("memberOf", [{}])[0].get("name", "") or json.dumps(info))
        policies = self.mc("admin", "policy", "list", "t").decode().split()
        for p in ("readonly", "readwrite", "writeonly", "diagnostics", "consoleAdmin", "listing-1"):
            self.assertIn(p, policies)
        shown = json.loads(self.mc("--json", "admin", "policy", "info", "t", "listing-1"))
        self.assertEqual(shown["policyInfo"]["Policy"]["Statement"][0]["Resource"], ["arn:aws:s3:::x/*"])
        group = json.loads(self.mc("--json", "admin", "group", "info", "t", "listers-1"))
        self.assertEqual(group["members"], ["henry-1"])
        self.assertIn("listing-1", group.get("groupPolicy", ""))
        groups = self.mc("admin", "group", "list", "t").decode()
        self.assertIn("listers-1", groups)
        self.mc("admin", "policy", "detach", "t", "listing-1", "--group", "listers-1")
        self.mc("admin", "policy", "rm", "t", "listing-1")
        self.assertNotIn("listing-1", self.mc("admin", "policy", "list", "t").decode().split())

    def test_users_may_not_use_the_admin_api(self):
        self.user("ivan-1", "ivan-secret-1", "readwrite")
        env = {"MC_HOST_ivan": self.endpoint.replace("://", "://ivan-1:ivan-secret-1@")}
        done = self.run_mc("admin", "user", "list", "ivan", env=env)
        self.assertNotEqual(done.returncode, 0, done.stdout)
        self.assertIn(b"Access Denied", done.stdout + done.stderr)


def json_docs(out):
    """The JSON documents mc --json printed one after another (indented,
    several lines each)."""
    text, docs, pos = out.decode(), [], 0
    decoder = json.JSONDecoder()
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return docs
        doc, pos = decoder.raw_decode(text, pos)
        docs.append(doc)


class ServiceAccountTests(IamCase):
    """Service accounts made with `mc admin user svcacct`: keys that act
    as their parent user, optionally restricted by an embedded policy."""

    def svc(self, alias, parent, *flags, env=None):
        done = self.run_mc("--json", "admin", "user", "svcacct", "add", alias, parent, *flags, env=env)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        doc = json_docs(done.stdout)[0]
        return doc["accessKey"], doc["secretKey"]

    def info(self, key, alias="t", env=None):
        done = self.run_mc("--json", "admin", "user", "svcacct", "info", alias, key, env=env)
        return done, (json_docs(done.stdout)[0] if done.returncode == 0 else None)

    def listed(self, user, alias="t", env=None):
        out = self.mc("--json", "admin", "user", "svcacct", "ls", alias, user) if env is None else \
            self.run_mc("--json", "admin", "user", "svcacct", "ls", alias, user, env=env).stdout
        return sorted(d["accessKey"] for d in json_docs(out) if d.get("accessKey"))

    def test_service_account_acts_as_its_parent(self):
        b = self.bucket("a.txt")
        self.user("sam-1", "sam-secret-1", "readonly")
        key, secret = self.svc("t", "sam-1", "--access-key", "svcsam1", "--secret-key", "svcsam-secret-1",
                               "--name", "backup", "--description", "nightly copies")
        self.assertEqual((key, secret), ("svcsam1", "svcsam-secret-1"))
        # Generated keys look like MinIO's.
        gen_key, gen_secret = self.svc("t", "sam-1")
        self.assertEqual((len(gen_key), len(gen_secret)), (20, 40))
        self.assertEqual(self.listed("sam-1"), sorted([key, gen_key]))
        done, info = self.info(key)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertEqual((info["parentUser"], info["accountStatus"], info["impliedPolicy"]), ("sam-1", "on", True))
        self.assertEqual((info["name"], info["description"]), ("backup", "nightly copies"))
        # The implied policy shown is the parent's.
        self.assertIn("s3:GetObject", json.dumps(info["policy"]))
        sam = client(self.endpoint, access_key=key, secret_key=secret)
        self.assertEqual(sam.get_object(Bucket=b, Key="a.txt")["Body"].read(), b"body of a.txt")
        self.denied(sam.put_object, Bucket=b, Key="new", Body=b"x")
        # The parent's rights as they are now: a policy attached to it
        # applies to its service accounts at once.
        self.mc("admin", "policy", "attach", "t", "readwrite", "--user", "sam-1")
        sam.put_object(Bucket=b, Key="new", Body=b"x")
        # Disabled, the key is unknown; enabled again, it works.
        self.mc("admin", "user", "svcacct", "disable", "t", key)
        self.assertEqual(self.info(key)[1]["accountStatus"], "off")
        self.denied(sam.list_objects_v2, Bucket=b, code="InvalidAccessKeyId")
        self.mc("admin", "user", "svcacct", "enable", "t", key)
        sam.list_objects_v2(Bucket=b)
        # A disabled parent takes its service accounts' rights with it.
        self.mc("admin", "user", "disable", "t", "sam-1")
        self.denied(sam.list_objects_v2, Bucket=b, code="InvalidAccessKeyId")
        self.mc("admin", "user", "enable", "t", "sam-1")
        sam.list_objects_v2(Bucket=b)
        # A new secret key replaces the old one.
        self.mc("admin", "user", "svcacct", "edit", "t", key, "--secret-key", "svcsam-secret-2")
        self.denied(sam.list_objects_v2, Bucket=b, code="SignatureDoesNotMatch")
        sam = client(self.endpoint, access_key=key, secret_key="svcsam-secret-2")
        sam.list_objects_v2(Bucket=b)
        # Service accounts cannot ask STS for temporary credentials.
        sts = boto3.client("sts", endpoint_url=self.endpoint, region_name=REGION,
                           aws_access_key_id=key, aws_secret_access_key="svcsam-secret-2")
        with self.assertRaises(ClientError) as cm:
            sts.assume_role(RoleArn="arn:xxx:xxx:xxx:xxxx", RoleSessionName="session")
        self.assertEqual(cm.exception.response["Error"]["Code"], "AccessDenied")
        # Removed, it is unknown and gone from the listing; removing the
        # parent removes the rest.
        self.mc("admin", "user", "svcacct", "rm", "t", key)
        self.denied(sam.list_objects_v2, Bucket=b, code="InvalidAccessKeyId")
        self.assertEqual(self.listed("sam-1"), [gen_key])
        done, _ = self.info(key)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn(b"not found", (done.stdout + done.stderr).lower())
        self.mc("admin", "user", "remove", "t", "sam-1")
        self.assertEqual(self.listed("sam-1"), [])
        gen = client(self.endpoint, access_key=gen_key, secret_key=gen_secret)
        self.denied(gen.list_objects_v2, Bucket=b, code="InvalidAccessKeyId")

    def test_embedded_policy_restricts_within_the_parents_rights(self):
        b, other = self.bucket("a.txt"), self.bucket("b.txt")
        self.user("tina-1", "tina-secret-1", "readwrite")
        path = os.path.join(self.tmpdir(), "only-read.json")
        with open(path, "w") as f:
            json.dump({"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": [f"arn:aws:s3:::{b}/*"]}]}, f)
        key, secret = self.svc("t", "tina-1", "--policy", path)
        _, info = self.info(key)
        self.assertFalse(info.get("impliedPolicy", False))
        self.assertEqual(info["policy"]["Statement"][0]["Resource"], [f"arn:aws:s3:::{b}/*"])
        tina = client(self.endpoint, access_key=key, secret_key=secret)
        tina.get_object(Bucket=b, Key="a.txt")
        self.denied(tina.put_object, Bucket=b, Key="new", Body=b"x")
        self.denied(tina.get_object, Bucket=other, Key="b.txt")
        # A broader embedded policy gives no more than the parent has.
        with open(path, "w") as f:
            json.dump({"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": ["s3:*"], "Resource": ["arn:aws:s3:::*"]},
                {"Effect": "Allow", "Action": ["admin:*"]}]}, f)
        self.mc("admin", "user", "svcacct", "edit", "t", key, "--policy", path)
        tina.put_object(Bucket=b, Key="new", Body=b"x")
        tina.get_object(Bucket=other, Key="b.txt")
        self.mc("admin", "policy", "detach", "t", "readwrite", "--user", "tina-1")
        self.mc("admin", "policy", "attach", "t", "readonly", "--user", "tina-1")
        self.denied(tina.put_object, Bucket=b, Key="new2", Body=b"x")
        env = {"MC_HOST_tina": self.endpoint.replace("://", f"://{key}:{secret}@")}
        done = self.run_mc("admin", "user", "list", "tina", env=env)
        self.assertNotEqual(done.returncode, 0, done.stdout)
        # A too large policy is refused with MinIO's code.
        with open(path, "w") as f:
            json.dump({"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": [f"arn:aws:s3:::{'x' * 5000}"]}]}, f)
        done = self.run_mc("admin", "user", "svcacct", "add", "t", "tina-1", "--policy", path)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn(b"larger than 4096", done.stdout + done.stderr)

    def test_users_manage_their_own_service_accounts(self):
        b = self.bucket("a.txt")
        self.user("uma-1", "uma-secret-1", "readwrite")
        self.user("vic-1", "vic-secret-1", "readonly")
        vic_key, _ = self.svc("t", "vic-1")
        env = {"MC_HOST_uma": self.endpoint.replace("://", "://uma-1:uma-secret-1@")}
        # Its own, without any admin right.
        key, secret = self.svc("uma", "uma-1", env=env)
        self.assertEqual(self.listed("uma-1", "uma", env=env), [key])
        done, info = self.info(key, "uma", env=env)
        self.assertEqual(info["parentUser"], "uma-1")
        # Another user's: refused, and another's account reads as absent.
        done = self.run_mc("admin", "user", "svcacct", "add", "uma", "vic-1", env=env)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn(b"Access Denied", done.stdout + done.stderr)
        done = self.run_mc("admin", "user", "svcacct", "ls", "uma", "vic-1", env=env)
        self.assertNotEqual(done.returncode, 0)
        done, _ = self.info(vic_key, "uma", env=env)
        self.assertNotEqual(done.returncode, 0)
        done = self.run_mc("admin", "user", "svcacct", "rm", "uma", vic_key, env=env)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn(b"not found", (done.stdout + done.stderr).lower())
        self.assertEqual(self.listed("vic-1"), [vic_key])
        # Changing one needs admin:UpdateServiceAccount, even one's own.
        done = self.run_mc("admin", "user", "svcacct", "disable", "uma", key, env=env)
        self.assertNotEqual(done.returncode, 0)
        self.assertEqual(self.info(key)[1]["accountStatus"], "on")
        # A service account makes service accounts for its parent.
        svc_env = {"MC_HOST_umasvc": self.endpoint.replace("://", f"://{key}:{secret}@")}
        second, second_secret = self.svc("umasvc", "uma-1", env=svc_env)
        self.assertEqual(self.info(second)[1]["parentUser"], "uma-1")
        client(self.endpoint, access_key=second, secret_key=second_secret).put_object(
            Bucket=b, Key="from-second", Body=b"x")
        # A policy that denies the action stops even one's own.
        self.policy("no-svcacct-1", {"Version": "2012-10-17", "Statement": [
            {"Effect": "Deny", "Action": ["admin:CreateServiceAccount"], "Resource": ["arn:aws:s3:::*"]}]})
        self.mc("admin", "policy", "attach", "t", "no-svcacct-1", "--user", "uma-1")
        done = self.run_mc("admin", "user", "svcacct", "add", "uma", "uma-1", env=env)
        self.assertNotEqual(done.returncode, 0)
        # Removing one's own works.
        self.mc("admin", "policy", "detach", "t", "no-svcacct-1", "--user", "uma-1")
        done = self.run_mc("admin", "user", "svcacct", "rm", "uma", second, env=env)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertEqual(self.listed("uma-1"), [key])

    def test_expiry_and_bad_requests(self):
        self.user("wes-1", "wes-secret-1", "readonly")
        ahead = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 2 * 86400))
        key, secret = self.svc("t", "wes-1", "--expiry", ahead)
        _, info = self.info(key)
        self.assertEqual(info["expiration"], ahead)
        listed = json_docs(self.mc("--json", "admin", "user", "svcacct", "ls", "t", "wes-1"))
        self.assertEqual([d.get("expiration") for d in listed if d.get("accessKey") == key], [ahead])
        client(self.endpoint, access_key=key, secret_key=secret).list_buckets()
        # Less than 15 minutes ahead, or a year and more, is refused.
        for when in (time.time() + 60, time.time() + 400 * 86400):
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))
            done = self.run_mc("admin", "user", "svcacct", "add", "t", "wes-1", "--expiry", stamp)
            self.assertNotEqual(done.returncode, 0, stamp)
        # Keys of another identity, a missing parent, half a key pair.
        for args in (["wes-1", "--access-key", "wes-1", "--secret-key", "whatever-secret"],
                     ["wes-1", "--access-key", key, "--secret-key", "whatever-secret"],
                     ["nobody-1"],
                     ["wes-1", "--access-key", "ab", "--secret-key", "whatever-secret"]):
            done = self.run_mc("admin", "user", "svcacct", "add", "t", *args)
            self.assertNotEqual(done.returncode, 0, args)
        # A user cannot take a service account's key.
        done = self.run_mc("admin", "user", "add", "t", key, "some-secret-1")
        self.assertNotEqual(done.returncode, 0)


if __name__ == "__main__":
    unittest.main()
