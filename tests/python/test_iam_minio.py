"""Users, groups, policies, attachments and bucket policies shared with a
real single-node MinIO on the same four drives, one server at a time: the
contract that Tessera reads and writes MinIO's IAM documents
(`.minio.sys/config/iam/...`) and bucket policies (the bucket's
`.metadata.bin`) as MinIO does.

- MinIO to Tessera: MinIO formats the drives; `mc admin` against it makes
  a user with `readonly`, a group with a member and `readwrite` attached
  to the group, a custom policy (GetObject on one prefix of one bucket)
  attached to a third user and a disabled user, and `mc anonymous set
  download` makes a bucket public. The rights are checked against MinIO
  (the oracle) and MinIO stops; Tessera starts on the drives with the same
  root credentials, and each user authenticates with the secret MinIO
  stored and gets exactly MinIO's answers: what its policy allows works,
  the rest is 403 AccessDenied, the disabled user is refused, anonymous
  GET works on the public bucket and anonymous PUT does not. `mc admin
  user list|info`, `group info` and `policy list|info` show through
  Tessera what they showed through MinIO.
  Temporary credentials of `reader` from MinIO's STS (narrowed by a
  session policy) act the same on Tessera.
- Tessera to MinIO: the same made with mc against Tessera on fresh
  drives, checked against Tessera, which stops; MinIO starts on the drives
  and gives the same answers, to Tessera's temporary credentials too.
- The documents themselves: MinIO on four drives and Tessera on four
  others are given the same users, group, policies and bucket policy; the
  same documents must be at the same paths with the same fields and
  values, but for the times of the writes.

A failure quotes the IAM documents and the bucket policies on the drives
(each read back from the drives' xl.meta shards), so that a difference of
format shows the file and its content.

Not checked, because the two servers differ by design: MinIO decides an
authenticated user's request by the user's (and its groups') policies
only, a bucket policy neither grants nor denies it anything; Tessera, as
S3 does, also applies the bucket policy (docs/operations.md, "How a
request is decided"). So no user here asks for what only the public
bucket's policy would allow it.

MinIO single-node on local directories listens on loopback (only
distributed endpoints need another address, see test_cluster_minio). The
MinIO binary comes from TESSERA_MINIO (else target/tools/bin/minio), mc
from TESSERA_MC; without them the test fails, it never skips. MinIO's
clients retry as an SDK does (it may answer 503 while its IAM loads);
Tessera's clients never retry.

Run by hand:

    cd tests/python && TESSERA_MC=../../target/tools/bin/mc \\
        TESSERA_MINIO=../../target/tools/bin/minio \\
        TESSERA_BIN=../../target/debug/tessera \\
        ../../target/pyenv/bin/python -m unittest test_iam_minio -v
"""

import base64
import contextlib
import http.client
import json
import os
import re
import struct
import subprocess
import time
import unittest

import boto3
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from s3util import client
from tessera_server import ACCESS_KEY, REGION, SECRET_KEY, TesseraServer, free_port, stop_process
from test_cluster_minio import minio_binary
from test_iam import json_docs
from test_mc import mc_binary

# A single-node MinIO on four drives is ready in a few seconds; a loaded
# 2-core CI machine gets ample room.
MINIO_READY_BOUND_S = 90
# How long MinIO's IAM may take to load the documents once S3 answers.
MINIO_IAM_BOUND_S = 60
# Tries of a request to MinIO (503 while a subsystem comes up).
MINIO_ATTEMPTS = 10
# One mc command.
MC_TIMEOUT_S = 120
# mc errors of a MinIO that is still coming up, worth another try (the
# commands retried are idempotent).
TRANSIENT = ("not initialized", "reduce your request rate", "Server not initialized",
             "please try again", "503")

DATA = "iam-data"
PUBLIC = "iam-public"
OBJECTS = {
    (DATA, "a.txt"): b"body of a.txt",
    (DATA, "reports/r1.txt"): b"the first report",
    (PUBLIC, "p.txt"): b"public body",
}

CUSTOM = "reports-only"
CUSTOM_DOC = {
    "Version": "2012-10-17",
    "Statement": [{
        "Effect": "Allow",
        "Action": ["s3:GetObject"],
        "Resource": [f"arn:aws:s3:::{DATA}/reports/*"],
    }],
}

# name: (secret, policies attached to the user, group, policies attached
# to the group, enabled)
USERS = {
    "reader": ("reader-secret-1", ["readonly"], None, [], True),
    "writer": ("writer-secret-1", [], "writers", ["readwrite"], True),
    "reporter": ("reporter-secret-1", [CUSTOM], None, [], True),
    "ghost": ("ghost-secret-12", ["readwrite"], None, [], False),
}

# Service accounts: access key: (secret, parent, embedded policy or None
# for the parent's).
READ_DATA_DOC = {
    "Version": "2012-10-17",
    "Statement": [{
        "Effect": "Allow",
        "Action": ["s3:GetObject"],
        "Resource": [f"arn:aws:s3:::{DATA}/*"],
    }],
}
SVCACCTS = {
    "readersvc1": ("readersvc-secret-1", "reader", None),
    "writersvc1": ("writersvc-secret-1", "writer", READ_DATA_DOC),
}


# --- the servers ---------------------------------------------------------

class Minio:
    """`minio server` on `drives` (local directories: one node, one
    erasure set), on loopback, with the tests' root credentials. Its log
    and HOME are in `root`."""

    def __init__(self, root, drives, env=None):
        self.root = root
        self.drives = drives
        self.extra_env = dict(env or {})
        self.proc = None
        self.endpoint = None
        self.log_path = None

    def log_tail(self, lines=40):
        try:
            with open(self.log_path, "rb") as f:
                return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-lines:])
        except (TypeError, FileNotFoundError):
            return ""

    def start(self):
        for attempt in range(1, 4):
            port, console = free_port(), free_port()
            self.log_path = os.path.join(self.root, f"minio-{port}.log")
            home = os.path.join(self.root, "minio-home")
            os.makedirs(home, exist_ok=True)
            env = {k: v for k, v in os.environ.items() if not k.startswith("MINIO_")}
            env.update({
                "HOME": home,
                "MINIO_ROOT_USER": ACCESS_KEY,
                "MINIO_ROOT_PASSWORD": SECRET_KEY,
                # MinIO refuses drives on the root disk unless told it is a CI run.
                "MINIO_CI_CD": "1",
                "MINIO_BROWSER": "off",
                "MINIO_UPDATE": "off",
            })
            env.update(self.extra_env)
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(
                    [minio_binary(), "server", "--address", f"127.0.0.1:{port}",
                     "--console-address", f"127.0.0.1:{console}", *self.drives],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                )
            self.endpoint = f"http://127.0.0.1:{port}"
            if self._wait_ready(port):
                return self
            if attempt < 3 and "address already in use" in self.log_tail(200).lower():
                continue
            raise AssertionError(f"minio did not become ready within {MINIO_READY_BOUND_S} s "
                                 f"(exit code {self.proc.poll()}):\n{self.log_tail()}")
        raise AssertionError("unreachable")

    def _wait_ready(self, port):
        """True once /minio/health/ready says 200 and the root user lists
        buckets; False if the process exits."""
        deadline = time.monotonic() + MINIO_READY_BOUND_S
        s3 = minio_client(self.endpoint)
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.proc = None
                return False
            if http_status(port, "/minio/health/ready") == 200:
                try:
                    s3.list_buckets()
                    return True
                except (ClientError, BotoCoreError, OSError):
                    pass
            time.sleep(0.3)
        self.stop()
        return False

    def stop(self):
        if self.proc is not None:
            proc, self.proc = self.proc, None
            stop_process(proc)


def http_status(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    except OSError:
        return None
    finally:
        conn.close()


def minio_client(endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY):
    """A client of MinIO, retrying as an SDK does."""
    return client(endpoint, access_key, secret_key,
                  retries={"total_max_attempts": MINIO_ATTEMPTS, "mode": "standard"})


def anonymous(endpoint, retries=1):
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, region_name=REGION,
        config=Config(signature_version=UNSIGNED, s3={"addressing_style": "path"},
                      retries={"total_max_attempts": retries, "mode": "standard"},
                      connect_timeout=10, read_timeout=60),
    )


def assume_reader(endpoint, retries):
    """Temporary credentials of `reader` (readonly) from `endpoint`'s STS,
    for an hour, narrowed by a session policy to DATA's objects."""
    sts = boto3.session.Session().client(
        "sts", endpoint_url=endpoint, region_name=REGION,
        aws_access_key_id="reader", aws_secret_access_key=USERS["reader"][0],
        config=Config(retries={"total_max_attempts": retries, "mode": "standard"}))
    session = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Action": ["s3:GetObject"], "Resource": [f"arn:aws:s3:::{DATA}/*"]}]}
    return sts.assume_role(RoleArn="arn:xxx:xxx:xxx:xxxx", RoleSessionName="interop",
                           DurationSeconds=3600, Policy=json.dumps(session))["Credentials"]


def check_temporary(test, endpoint, creds, retries, who):
    """What `assume_reader`'s credentials may do on `endpoint`: read DATA,
    not PUBLIC (the session policy), never write (the parent's policy)."""
    s3 = boto3.session.Session().client(
        "s3", endpoint_url=endpoint, region_name=REGION,
        aws_access_key_id=creds["AccessKeyId"], aws_secret_access_key=creds["SecretAccessKey"],
        aws_session_token=creds["SessionToken"],
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                      retries={"total_max_attempts": retries, "mode": "standard"}))
    got = s3.get_object(Bucket=DATA, Key="a.txt")["Body"].read()
    test.assertEqual(got, OBJECTS[(DATA, "a.txt")], f"{who}: temporary read")
    for what, call, params in [
        ("write", s3.put_object, {"Bucket": DATA, "Key": "temp-put", "Body": b"x"}),
        ("read outside the session policy", s3.get_object, {"Bucket": PUBLIC, "Key": "p.txt"}),
    ]:
        with test.assertRaises(ClientError, msg=f"{who}: temporary {what}") as cm:
            call(**params)
        test.assertEqual(cm.exception.response["Error"]["Code"], "AccessDenied", f"{who}: {what}")


# --- the drives' documents, for failure messages -------------------------
#
# MinIO writes its configuration with the most parity the set allows (two
# data and two parity shards on four drives) and inline in xl.meta, so a
# document is read back by joining the data shards of the drives' xl.meta
# (a minimal reading of MinIO's format: the metadata's EcIndex, EcM and
# Size, and the inline data's one version, a 32-byte bitrot hash and the
# shard).

def _mp_int(data, pos):
    t = data[pos]
    if t < 0x80:
        return t, pos + 1
    if t >= 0xe0:
        return t - 0x100, pos + 1
    fmt = {0xcc: ">B", 0xcd: ">H", 0xce: ">I", 0xcf: ">Q", 0xd0: ">b", 0xd1: ">h", 0xd2: ">i", 0xd3: ">q"}[t]
    return struct.unpack_from(fmt, data, pos + 1)[0], pos + 1 + struct.calcsize(fmt)


def _mp_bin(data, pos):
    fmt = {0xc4: ">B", 0xc5: ">H", 0xc6: ">I"}[data[pos]]
    (n,) = struct.unpack_from(fmt, data, pos + 1)
    start = pos + 1 + struct.calcsize(fmt)
    return data[start:start + n], start + n


def _mp_str(data, pos):
    t = data[pos]
    if 0xa0 <= t <= 0xbf:
        n, start = t - 0xa0, pos + 1
    else:
        fmt = {0xd9: ">B", 0xda: ">H", 0xdb: ">I"}[t]
        (n,) = struct.unpack_from(fmt, data, pos + 1)
        start = pos + 1 + struct.calcsize(fmt)
    return data[start:start + n], start + n


def xl_shard(data):
    """(EcIndex, EcM, Size, shard) of an xl.meta holding one small inline
    version."""
    if data[:4] != b"XL2 ":
        raise ValueError("not an xl.meta")
    meta, pos = _mp_bin(data, 8)
    pos += 5  # the metadata's CRC (msgpack uint32)
    if pos >= len(data):
        raise ValueError("no inline data")
    pos += 1  # the inline data's version
    count = data[pos] - 0x80
    if not 0 < count < 16:
        raise ValueError("unexpected inline data")
    pos += 1
    for _ in range(count):
        _, pos = _mp_str(data, pos)
        blob, pos = _mp_bin(data, pos)

    def field(name):
        key = bytes([0xa0 + len(name)]) + name
        return _mp_int(meta, meta.index(key) + len(key))[0]

    return field(b"EcIndex"), field(b"EcM"), field(b"Size"), blob[32:]


def read_document(drives, rel):
    """The content of the document whose xl.meta is at `rel` on each of
    `drives`, or why it cannot be read."""
    shards, m, size = {}, None, None
    for d in drives:
        try:
            with open(os.path.join(d, rel), "rb") as f:
                index, m, size, shard = xl_shard(f.read())
            shards[index] = shard
        except (OSError, ValueError, KeyError, IndexError, struct.error) as e:
            last = e
    if m is None or any(i not in shards for i in range(1, m + 1)):
        return f"<unreadable: {last!r}>".encode()
    return b"".join(shards[i] for i in range(1, m + 1))[:size]


def json_in(data):
    """The longest JSON object inside `data` (a bucket's .metadata.bin
    holds its policy verbatim), else `data` itself, shown safely."""
    text = data.decode("latin-1")
    decoder = json.JSONDecoder()
    best = None
    start = text.find("{")
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
            if isinstance(value, dict) and (best is None or end - start > len(best)):
                best = text[start:end]
        except ValueError:
            pass
        start = text.find("{", start + 1)
    return best if best is not None else repr(data[:300])


def documents(drives):
    """{path under a drive: content} of the IAM documents (JSON) and of
    the buckets' metadata (the JSON inside: the bucket policy)."""
    out = {}
    sys_dir = os.path.join(drives[0], ".minio.sys")
    for sub in ("config/iam", "buckets"):
        for dirpath, _, files in os.walk(os.path.join(sys_dir, sub)):
            if "xl.meta" not in files:
                continue
            rel = os.path.relpath(os.path.join(dirpath, "xl.meta"), drives[0])
            if sub == "buckets" and not rel.endswith("/.metadata.bin/xl.meta"):
                continue
            data = read_document(drives, rel)
            out[rel] = data.decode("utf-8", "replace") if sub == "config/iam" else json_in(data)
    return dict(sorted(out.items()))


def dump(drives):
    docs = documents(drives)
    if not docs:
        return f"(no IAM documents under {drives[0]}/.minio.sys)"
    return "\n".join(f"{path}\n    {text}" for path, text in docs.items())


RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$")
TIMES = ("updatedAt", "CreateDate", "UpdateDate")


def token_claims(token):
    """A service account's session token, as what it says: its claims,
    the embedded policy in one spelling (the signature differs where the
    spelling does)."""
    parts = token.split(".")
    if len(parts) != 3:
        return f"not a JWT: {token!r}"
    claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    if "sessionPolicy" in claims:
        claims["sessionPolicy"] = normal_policy(json.loads(base64.b64decode(claims["sessionPolicy"])))
    return {"header": json.loads(base64.urlsafe_b64decode(parts[0] + "=" * (-len(parts[0]) % 4))),
            "claims": claims}


def shape(rel, text):
    """What of a stored document both servers must write alike: the JSON
    with its change times (updatedAt, CreateDate, UpdateDate: the moment of
    each write) reduced to whether they are RFC 3339 UTC times, policies
    in one spelling (MinIO re-marshals them), session tokens as their
    claims, and a bucket's metadata reduced to its policy."""
    if rel.endswith("/.metadata.bin/xl.meta"):
        return normal_policy(json.loads(text)) if text.startswith("{") else None
    try:
        doc = json.loads(text)
    except ValueError:
        return text

    def walk(v):
        if isinstance(v, dict):
            return {k: (("RFC 3339 UTC" if isinstance(x, str) and RFC3339.match(x) else f"not RFC 3339: {x!r}")
                        if k in TIMES else token_claims(x) if k == "sessionToken" else walk(x))
                    for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    doc = walk(doc)
    if isinstance(doc, dict) and isinstance(doc.get("Policy"), dict):
        doc["Policy"] = normal_policy(doc["Policy"])
    return doc


# --- mc ------------------------------------------------------------------

class Mc:
    """mc with a configuration directory of its own and an alias `s` for
    the server being tested; `retry` retries MinIO's transient errors."""

    def __init__(self, test, config_dir):
        self.test = test
        self.config_dir = config_dir
        self.path = mc_binary()
        self.env = dict(os.environ, MC_NO_COLOR="1", NO_PROXY="127.0.0.1,localhost")
        self.env = {k: v for k, v in self.env.items() if not k.startswith("MC_HOST_")}
        self.retry = False
        self.log_tail = lambda: ""

    def point_at(self, endpoint, retry, log_tail):
        self.retry = retry
        self.log_tail = log_tail
        self("alias", "set", "s", endpoint, ACCESS_KEY, SECRET_KEY, "--api", "S3v4", "--path", "on")

    def run(self, *args, env=None):
        command = [self.path, "--config-dir", self.config_dir, "--no-color", "--quiet", *args]
        return subprocess.run(command, env=dict(self.env, **(env or {})), capture_output=True,
                              timeout=MC_TIMEOUT_S)

    def __call__(self, *args):
        """Runs mc; fails the test on a non-zero exit. Returns stdout."""
        deadline = time.monotonic() + MINIO_IAM_BOUND_S
        while True:
            done = self.run(*args)
            if done.returncode == 0:
                return done.stdout.decode()
            said = (done.stdout + done.stderr).decode(errors="replace")
            if self.retry and time.monotonic() < deadline and any(t in said for t in TRANSIENT):
                time.sleep(0.5)
                continue
            self.test.fail(f"mc {' '.join(args)} exited with {done.returncode}:\n{said[-3000:]}\n"
                           f"server log:\n{self.log_tail()}")

    def json(self, *args):
        return [json.loads(line) for line in self("--json", *args).splitlines() if line.strip()]


# --- what is made, and what is checked -----------------------------------

def make_everything(test, mc, s3, tmp):
    """Buckets, objects, users, groups, policies, attachments and the
    public bucket, made with mc admin and the root user's `s3`."""
    for bucket in (DATA, PUBLIC):
        s3.create_bucket(Bucket=bucket)
    for (bucket, key), body in OBJECTS.items():
        s3.put_object(Bucket=bucket, Key=key, Body=body)
    path = os.path.join(tmp, f"{CUSTOM}.json")
    with open(path, "w") as f:
        json.dump(CUSTOM_DOC, f)
    mc("admin", "policy", "create", "s", CUSTOM, path)
    for name, (secret, policies, group, group_policies, enabled) in USERS.items():
        mc("admin", "user", "add", "s", name, secret)
        for p in policies:
            mc("admin", "policy", "attach", "s", p, "--user", name)
        if group:
            mc("admin", "group", "add", "s", group, name)
            for p in group_policies:
                mc("admin", "policy", "attach", "s", p, "--group", group)
        if not enabled:
            mc("admin", "user", "disable", "s", name)
    for key, (secret, parent, doc) in SVCACCTS.items():
        flags = ["--access-key", key, "--secret-key", secret, "--name", f"{parent}-key"]
        if doc:
            path = os.path.join(tmp, f"{key}.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            flags += ["--policy", path]
        mc("admin", "user", "svcacct", "add", "s", parent, *flags)
    mc("anonymous", "set", "download", f"s/{PUBLIC}")


def outcome(call, **params):
    """("ok", result) or ("error", code, status) of an S3 call."""
    try:
        return ("ok", call(**params))
    except ClientError as e:
        return ("error", e.response["Error"].get("Code"), e.response["ResponseMetadata"]["HTTPStatusCode"])


def check_rights(test, endpoint, who, make_client, tag):
    """Every user's, and anonymous, rights on `endpoint`, as the table
    below says; returns {check: (code, status)} of the refusals, to
    compare servers. `make_client(endpoint, key, secret)`; `tag` keeps the
    keys written apart between servers."""
    users = {name: make_client(endpoint, name, spec[0]) for name, spec in USERS.items()}
    anon = anonymous(endpoint, retries=MINIO_ATTEMPTS if who == "minio" else 1)
    refusals = {}

    def allowed(what, call, **params):
        got = outcome(call, **params)
        test.assertEqual(got[0], "ok", f"{who}: {what} must be allowed, got {got}")
        return got[1]

    def refused(what, call, code="AccessDenied", status=403, **params):
        got = outcome(call, **params)
        test.assertEqual(got[0], "error", f"{who}: {what} must be refused, it was allowed")
        refusals[what] = got[1:]
        if code is not None:
            test.assertEqual(got[1:], (code, status), f"{who}: {what}")
        else:
            test.assertEqual(got[2], status, f"{who}: {what}: {got}")

    def body(result):
        return result["Body"].read()

    # readonly, attached to the user.
    r = users["reader"]
    test.assertEqual(body(allowed("reader GET", r.get_object, Bucket=DATA, Key="a.txt")), OBJECTS[(DATA, "a.txt")])
    refused("reader PUT", r.put_object, Bucket=DATA, Key=f"reader-{tag}", Body=b"x")
    refused("reader DELETE", r.delete_object, Bucket=DATA, Key="a.txt")
    refused("reader CreateBucket", r.create_bucket, Bucket=f"reader-{tag}")
    wrong = make_client(endpoint, "reader", "not-the-reader-secret")
    refused("reader with a wrong secret", wrong.get_object, code="SignatureDoesNotMatch", Bucket=DATA, Key="a.txt")

    # readwrite, attached to the user's group.
    w = users["writer"]
    key = f"from-writer-{tag}"
    allowed("writer PUT", w.put_object, Bucket=DATA, Key=key, Body=b"written by a group member")
    test.assertEqual(body(allowed("writer GET", w.get_object, Bucket=DATA, Key=key)), b"written by a group member")
    listed = allowed("writer LIST", w.list_objects_v2, Bucket=DATA)
    test.assertIn(key, [o["Key"] for o in listed.get("Contents", [])], who)
    allowed("writer DELETE", w.delete_object, Bucket=DATA, Key=key)

    # The custom policy: GetObject under reports/ of DATA, nothing else.
    p = users["reporter"]
    test.assertEqual(body(allowed("reporter GET reports/", p.get_object, Bucket=DATA, Key="reports/r1.txt")),
                     OBJECTS[(DATA, "reports/r1.txt")])
    refused("reporter GET outside reports/", p.get_object, Bucket=DATA, Key="a.txt")
    refused("reporter PUT reports/", p.put_object, Bucket=DATA, Key=f"reports/{tag}", Body=b"x")
    refused("reporter LIST", p.list_objects_v2, Bucket=DATA)

    # The disabled user is refused even what its policy allows (MinIO says
    # InvalidAccessKeyId, "Your account is disabled"; the code is compared
    # between the servers by the caller).
    refused("disabled user GET", users["ghost"].get_object, code=None, Bucket=DATA, Key="a.txt")
    refused("disabled user PUT", users["ghost"].put_object, code=None, Bucket=DATA, Key=f"ghost-{tag}", Body=b"x")

    # Service accounts: the reader's acts as the reader; the writer's is
    # held by its embedded policy to reading DATA.
    svc = {key: make_client(endpoint, key, spec[0]) for key, spec in SVCACCTS.items()}
    test.assertEqual(body(allowed("reader's service account GET", svc["readersvc1"].get_object,
                                  Bucket=DATA, Key="a.txt")), OBJECTS[(DATA, "a.txt")])
    refused("reader's service account PUT", svc["readersvc1"].put_object, Bucket=DATA, Key=f"rs-{tag}", Body=b"x")
    test.assertEqual(body(allowed("writer's service account GET", svc["writersvc1"].get_object,
                                  Bucket=DATA, Key="a.txt")), OBJECTS[(DATA, "a.txt")])
    refused("writer's service account PUT", svc["writersvc1"].put_object, Bucket=DATA, Key=f"ws-{tag}", Body=b"x")
    refused("writer's service account LIST", svc["writersvc1"].list_objects_v2, Bucket=DATA)

    # `mc anonymous set download`: anonymous reads and lists PUBLIC only.
    test.assertEqual(body(allowed("anonymous GET public", anon.get_object, Bucket=PUBLIC, Key="p.txt")),
                     OBJECTS[(PUBLIC, "p.txt")])
    listed = allowed("anonymous LIST public", anon.list_objects_v2, Bucket=PUBLIC)
    test.assertEqual([o["Key"] for o in listed.get("Contents", [])], ["p.txt"], who)
    refused("anonymous PUT public", anon.put_object, Bucket=PUBLIC, Key=f"anon-{tag}", Body=b"x")
    refused("anonymous DELETE public", anon.delete_object, Bucket=PUBLIC, Key="p.txt")
    refused("anonymous GET private", anon.get_object, Bucket=DATA, Key="a.txt")
    return refusals


def normal_policy(doc):
    """A policy document in one spelling, to compare two servers' (MinIO
    answers GetBucketPolicy with the actions of a statement in Go map
    order, drops empty Sids and writes one Principal form): statements and
    their lists sorted, single strings as lists, `"*"` as `{"AWS": ["*"]}`,
    no empty Sid."""
    statements = doc.get("Statement", [])
    if isinstance(statements, dict):
        statements = [statements]
    out = []
    for st in statements:
        n = {}
        for k, v in st.items():
            if k == "Sid" and not v:
                continue
            if k in ("Action", "NotAction", "Resource", "NotResource"):
                v = sorted([v] if isinstance(v, str) else v)
            if k in ("Principal", "NotPrincipal"):
                v = {"AWS": "*"} if v == "*" else v
                v = {pk: sorted([pv] if isinstance(pv, str) else pv) for pk, pv in v.items()}
            n[k] = v
        out.append(n)
    return {"Version": doc.get("Version"),
            "Statement": sorted(out, key=lambda x: json.dumps(x, sort_keys=True))}


def bucket_policy(s3):
    """PUBLIC's policy as `s3` answers it, in one spelling."""
    return normal_policy(json.loads(s3.get_bucket_policy(Bucket=PUBLIC)["Policy"]))


def check_enabling(test, mc, endpoint, make_client, who):
    """Enabling the disabled user lets it in with the secret on the
    drives: its refusal was its status."""
    mc("admin", "user", "enable", "s", "ghost")
    ghost = make_client(endpoint, "ghost", USERS["ghost"][0])
    got = outcome(ghost.get_object, Bucket=DATA, Key="a.txt")
    test.assertEqual(got[0], "ok", f"{who}: the user enabled again: {got}")
    test.assertEqual(got[1]["Body"].read(), OBJECTS[(DATA, "a.txt")], who)


def check_admin_api_refused(test, mc, endpoint, who):
    """A readwrite user (through its group) may not use the admin API."""
    env = {"MC_HOST_w": endpoint.replace("://", "://writer:writer-secret-1@")}
    done = mc.run("admin", "user", "list", "w", env=env)
    said = (done.stdout + done.stderr).decode(errors="replace")
    test.assertNotEqual(done.returncode, 0, f"{who}: writer listed users:\n{said}")
    test.assertIn("Access Denied", said, who)


def admin_view(test, mc, who):
    """What `mc admin` shows of the users, group and policies, reduced to
    what both servers must agree on; checked against USERS."""
    listed = {u["accessKey"]: u for u in mc.json("admin", "user", "list", "s") if "accessKey" in u}
    view = {"users": {}, "infos": {}}
    for name, (_, policies, group, group_policies, enabled) in USERS.items():
        test.assertIn(name, listed, f"{who}: mc admin user list: {listed}")
        u = listed[name]
        view["users"][name] = (u.get("userStatus"), sorted(filter(None, u.get("policyName", "").split(","))))
        test.assertEqual(view["users"][name], ("enabled" if enabled else "disabled", sorted(policies)),
                         f"{who}: mc admin user list: {u}")
        [info] = mc.json("admin", "user", "info", "s", name)
        member_of = sorted(g["name"] if isinstance(g, dict) else g for g in info.get("memberOf") or [])
        view["infos"][name] = (info.get("userStatus"),
                               sorted(filter(None, info.get("policyName", "").split(","))), member_of)
        test.assertEqual(view["infos"][name],
                         ("enabled" if enabled else "disabled", sorted(policies), [group] if group else []),
                         f"{who}: mc admin user info {name}: {info}")
    test.assertEqual(sorted(listed), sorted(USERS), f"{who}: mc admin user list")

    [group] = mc.json("admin", "group", "info", "s", "writers")
    view["group"] = (group.get("groupStatus"), group.get("members"),
                     sorted(filter(None, group.get("groupPolicy", "").split(","))))
    test.assertEqual(view["group"], ("enabled", ["writer"], ["readwrite"]), f"{who}: mc admin group info: {group}")
    groups = mc.json("admin", "group", "list", "s")
    view["groups"] = sorted(g for entry in groups for g in (entry.get("groups") or []))
    test.assertEqual(view["groups"], ["writers"], f"{who}: mc admin group list: {groups}")

    policies = set(mc("admin", "policy", "list", "s").split())
    for p in ("readonly", "readwrite", "writeonly", "diagnostics", "consoleAdmin", CUSTOM):
        test.assertIn(p, policies, f"{who}: mc admin policy list")
    view["policies"] = sorted(policies)
    [shown] = mc.json("admin", "policy", "info", "s", CUSTOM)
    stored = shown["policyInfo"]["Policy"]
    view["custom"] = stored
    test.assertEqual(stored["Statement"][0]["Resource"], CUSTOM_DOC["Statement"][0]["Resource"],
                     f"{who}: mc admin policy info: {shown}")
    test.assertEqual(stored["Statement"][0]["Action"], ["s3:GetObject"], f"{who}: mc admin policy info")

    # `mc admin policy entities`: by user (with its groups'), by group, by
    # policy, and everything (the timestamp aside).
    view["entities"] = {}
    for query in (["--user", "reader", "--user", "writer", "--user", "nobody"], ["--group", "writers"],
                  ["--policy", "readonly", "--policy", CUSTOM], []):
        [doc] = json_docs(mc("--json", "admin", "policy", "entities", "s", *query).encode())
        result = doc["result"]
        result.pop("timestamp", None)
        view["entities"][" ".join(query) or "all"] = result
    test.assertEqual(view["entities"]["--group writers"],
                     {"groupMappings": [{"group": "writers", "policies": ["readwrite"]}]}, who)
    view["svcaccts"] = {}
    for parent in ("reader", "writer"):
        listed = json_docs(mc("--json", "admin", "user", "svcacct", "ls", "s", parent).encode())
        keys = sorted(d["accessKey"] for d in listed if d.get("accessKey"))
        test.assertEqual(keys, [k for k, spec in SVCACCTS.items() if spec[1] == parent],
                         f"{who}: mc admin user svcacct ls {parent}: {listed}")
        for key in keys:
            [info] = json_docs(mc("--json", "admin", "user", "svcacct", "info", "s", key).encode())
            implied = SVCACCTS[key][2] is None
            seen = (info.get("parentUser"), info.get("accountStatus"), bool(info.get("impliedPolicy")),
                    info.get("name"), info.get("expiration"))
            test.assertEqual(seen, (parent, "on", implied, f"{parent}-key", None),
                             f"{who}: mc admin user svcacct info {key}: {info}")
            if not implied:
                test.assertEqual(normal_policy(info["policy"]), normal_policy(SVCACCTS[key][2]),
                                 f"{who}: the embedded policy of {key}")
            view["svcaccts"][key] = seen

    anon = mc("anonymous", "get", f"s/{PUBLIC}")
    test.assertIn("download", anon, f"{who}: mc anonymous get")
    view["anonymous"] = anon.strip()
    return view


# --- the tests -----------------------------------------------------------

class IamMinio(unittest.TestCase):
    maxDiff = None
    # Environments of the two servers (the KMS variant below sets a key).
    tessera_env = {}
    minio_env = {}

    def setUp(self):
        # The drives, the logs and mc's configuration are all under the
        # Tessera server's temporary root; its cleanup removes them, after
        # both servers stopped (cleanups run last in, first out).
        self.tessera = TesseraServer(env=self.tessera_env)
        self.addCleanup(self.tessera.cleanup)
        for d in self.tessera.drives:
            os.makedirs(d, exist_ok=True)
        self.minio = Minio(self.tessera.root, self.tessera.drives, env=self.minio_env)
        self.addCleanup(self.minio.stop)
        config = os.path.join(self.tessera.root, "mc-config")
        os.makedirs(config)
        self.mc = Mc(self, config)
        self.tmp = os.path.join(self.tessera.root, "tmp")
        os.makedirs(self.tmp)
        self.started = time.monotonic()

    @contextlib.contextmanager
    def quoting_drives(self, what):
        """An assertion failing inside says what the drives hold."""
        try:
            yield
        except AssertionError as e:
            raise AssertionError(f"{what}: {e}\n\nIAM documents and bucket policies on the drives:\n"
                                 f"{dump(self.tessera.drives)}") from None

    def start_minio(self):
        self.minio.start()
        self.mc.point_at(self.minio.endpoint, retry=True, log_tail=self.minio.log_tail)
        return self.minio.endpoint

    def start_tessera(self):
        self.tessera.start()
        self.mc.point_at(self.tessera.endpoint, retry=False, log_tail=self.tessera.log_tail)
        return self.tessera.endpoint

    def wait_minio_iam(self, endpoint):
        """Waits (bounded) until MinIO's IAM has loaded the users: each
        user's first request answers something other than 503."""
        deadline = time.monotonic() + MINIO_IAM_BOUND_S
        probe = client(endpoint, "reader", USERS["reader"][0])
        while True:
            got = outcome(probe.get_object, Bucket=DATA, Key="a.txt")
            if got[0] == "ok" or got[2] != 503:
                return
            if time.monotonic() > deadline:
                self.fail(f"minio answers {got} for {MINIO_IAM_BOUND_S} s:\n{self.minio.log_tail()}")
            time.sleep(0.5)

    def test_minio_made_tessera_serves(self):
        endpoint = self.start_minio()
        with self.quoting_drives("minio, making everything"):
            make_everything(self, self.mc, minio_client(endpoint), self.tmp)
        with self.quoting_drives("minio (the oracle)"):
            oracle = check_rights(self, endpoint, "minio", minio_client, "m")
            oracle_view = admin_view(self, self.mc, "minio")
            oracle_policy = bucket_policy(minio_client(endpoint))
            check_admin_api_refused(self, self.mc, endpoint, "minio")
            creds = assume_reader(endpoint, MINIO_ATTEMPTS)
            check_temporary(self, endpoint, creds, MINIO_ATTEMPTS, "minio")
        self.minio.stop()
        minio_docs = documents(self.tessera.drives)

        endpoint = self.start_tessera()
        with self.quoting_drives("tessera on the drives minio wrote"):
            got = check_rights(self, endpoint, "tessera", client, "t")
            self.assertEqual(got, oracle, "tessera's refusals (code, status) against minio's")
            self.assertEqual(admin_view(self, self.mc, "tessera"), oracle_view, "mc admin: tessera against minio")
            policy = bucket_policy(client(endpoint))
            self.assertEqual(policy, oracle_policy, "the bucket policy minio stored, read by tessera")
            check_admin_api_refused(self, self.mc, endpoint, "tessera")
            # Tessera only read: the documents are as MinIO left them.
            self.assertEqual(documents(self.tessera.drives), minio_docs)
            # MinIO's temporary credentials (its session token, its STS
            # document) act the same on Tessera.
            check_temporary(self, endpoint, creds, 1, "tessera, minio's session")
            check_enabling(self, self.mc, endpoint, client, "tessera")
        self.tessera.stop()
        print(f"\nminio -> tessera in {time.monotonic() - self.started:.1f} s")

    def test_tessera_made_minio_serves(self):
        endpoint = self.start_tessera()
        with self.quoting_drives("tessera, making everything"):
            make_everything(self, self.mc, client(endpoint), self.tmp)
        with self.quoting_drives("tessera"):
            mine = check_rights(self, endpoint, "tessera", client, "t")
            my_view = admin_view(self, self.mc, "tessera")
            my_policy = bucket_policy(client(endpoint))
            creds = assume_reader(endpoint, 1)
            check_temporary(self, endpoint, creds, 1, "tessera")
        code = self.tessera.stop()
        self.assertEqual(code, 0, f"tessera's exit code:\n{self.tessera.log_tail()}")

        endpoint = self.start_minio()
        with self.quoting_drives("minio on the drives tessera wrote"):
            self.wait_minio_iam(endpoint)
            got = check_rights(self, endpoint, "minio", minio_client, "m")
            self.assertEqual(mine, got, "tessera's refusals (code, status) against minio's")
            self.assertEqual(my_view, admin_view(self, self.mc, "minio"), "mc admin: tessera against minio")
            policy = bucket_policy(minio_client(endpoint))
            self.assertEqual(my_policy, policy, "the bucket policy tessera stored, read by minio")
            check_admin_api_refused(self, self.mc, endpoint, "minio")
            check_enabling(self, self.mc, endpoint, minio_client, "minio")
            check_temporary(self, endpoint, creds, MINIO_ATTEMPTS, "minio, tessera's session")
        self.minio.stop()
        print(f"\ntessera -> minio in {time.monotonic() - self.started:.1f} s")

    def make_everything_on_both(self):
        """MinIO on four other drives, then Tessera on its own, are each
        given everything; returns MinIO's drives."""
        other = [os.path.join(self.tessera.root, f"m{i}") for i in range(1, 5)]
        self.minio = Minio(self.tessera.root, other, env=self.minio_env)
        self.addCleanup(self.minio.stop)
        endpoint = self.start_minio()
        make_everything(self, self.mc, minio_client(endpoint), self.tmp)
        self.minio.stop()
        endpoint = self.start_tessera()
        make_everything(self, self.mc, client(endpoint), self.tmp)
        code = self.tessera.stop()
        self.assertEqual(code, 0, f"tessera's exit code:\n{self.tessera.log_tail()}")
        return other

    def test_documents_are_written_alike(self):
        """MinIO on four drives and Tessera on four others are given the
        same users, group, policies and bucket policy: the same documents
        are on the drives, at the same paths, with the same fields and
        values (but for the moment of each write)."""
        other = self.make_everything_on_both()
        theirs, ours = documents(other), documents(self.tessera.drives)
        self.assertTrue(any("/users/reader/" in p for p in theirs), dump(other))
        differences = []
        for rel in sorted(set(theirs) | set(ours)):
            if rel not in ours:
                differences.append(f"{rel}: written by minio only:\n    minio:   {theirs[rel]}")
            elif rel not in theirs:
                differences.append(f"{rel}: written by tessera only:\n    tessera: {ours[rel]}")
            elif shape(rel, theirs[rel]) != shape(rel, ours[rel]):
                differences.append(f"{rel}:\n    minio:   {theirs[rel]}\n    tessera: {ours[rel]}")
        if differences:
            self.fail(f"{len(differences)} documents tessera writes unlike minio (paths under each "
                      "drive; times of writes aside):\n\n" + "\n\n".join(differences))


KMS_KEY = "iam-kms-key:" + base64.b64encode(bytes(range(32))).decode()


def raw_iam_files(drives):
    """{path under config/iam: the stored bytes (shards joined)}."""
    out = {}
    base = os.path.join(drives[0], ".minio.sys", "config", "iam")
    for dirpath, _, files in os.walk(base):
        if "xl.meta" in files:
            rel = os.path.relpath(os.path.join(dirpath, "xl.meta"), drives[0])
            out[os.path.relpath(dirpath, base)] = read_document(drives, rel)
    return out


class IamMinioKms(IamMinio):
    """The same, both servers with the same static KMS key: MinIO then
    seals every IAM document at rest (per document, under a data key bound
    to its path), and so does Tessera; each reads the other's."""

    tessera_env = {"TESSERA_KMS_SECRET_KEY": KMS_KEY}
    minio_env = {"MINIO_KMS_SECRET_KEY": KMS_KEY}

    def test_documents_are_written_alike(self):
        """Sealed documents differ by their random keys and nonces: what
        both servers must share is that no secret is on the drives in the
        clear, and that the same paths are written."""
        other = self.make_everything_on_both()
        theirs, ours = raw_iam_files(other), raw_iam_files(self.tessera.drives)
        self.assertEqual(sorted(ours), sorted(theirs))
        secrets = [spec[0].encode() for spec in USERS.values()] + [spec[0].encode() for spec in SVCACCTS.values()]
        for who, files in (("minio", theirs), ("tessera", ours)):
            self.assertTrue(any("users/reader" in p for p in files), f"{who}: {sorted(files)}")
            for rel, data in files.items():
                for secret in secrets:
                    self.assertNotIn(secret, data, f"{who}: {rel} holds a secret in the clear")
                self.assertNotIn(b'"Statement"', data, f"{who}: {rel} holds a policy in the clear")


if __name__ == "__main__":
    unittest.main()
