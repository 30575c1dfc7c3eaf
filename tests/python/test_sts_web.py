"""STS AssumeRoleWithWebIdentity against a real `tessera server` and an
OpenID Connect provider run by the test: a discovery document and a key
set over HTTP (and HTTPS, with a certificate the server trusts through
SSL_CERT_FILE), ID tokens signed RS256 with python-rsa. boto3's STS client
trades the tokens for temporary credentials, used with boto3's S3 client.

The server runs with TESSERA_TEST_STS_MIN_DURATION=1s (a setting for tests
only) so that expiry can be tested without waiting 15 minutes.
"""

import base64
import http.server
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import threading
import time
import unittest

import boto3
import rsa
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import ClientError

from s3util import client
from tessera_server import REGION, TesseraServer
from test_iam import IamCase
from test_iam_minio import MINIO_ATTEMPTS, Minio, minio_client
from test_sts import temp_client

CLIENT_ID = "tessera-test-client"
ROLE = "arn:minio:iam:::role/dummy"


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def int_b64u(i):
    return b64u(i.to_bytes((i.bit_length() + 7) // 8, "big"))


class Provider:
    """An OpenID provider: discovery and key set, counted fetches, and
    tokens signed with its keys."""

    def __init__(self, tls_dir=None):
        self.keys = {"k1": rsa.newkeys(2048)}
        self.published = ["k1"]
        self.fetches = {"discovery": 0, "jwks": 0}
        provider = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path == "/.well-known/openid-configuration":
                    provider.fetches["discovery"] += 1
                    doc = {"issuer": provider.issuer, "jwks_uri": provider.issuer + "/jwks"}
                elif self.path == "/jwks":
                    provider.fetches["jwks"] += 1
                    doc = {"keys": [
                        {"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
                         "n": int_b64u(provider.keys[kid][0].n), "e": int_b64u(provider.keys[kid][0].e)}
                        for kid in provider.published]}
                else:
                    self.send_error(404)
                    return
                body = json.dumps(doc).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        scheme = "http"
        if tls_dir:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(os.path.join(tls_dir, "cert.pem"), os.path.join(tls_dir, "key.pem"))
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
            scheme = "https"
        self.issuer = f"{scheme}://127.0.0.1:{self.httpd.server_address[1]}"
        self.config_url = self.issuer + "/.well-known/openid-configuration"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def token(self, kid="k1", alg="RS256", **claims):
        """An ID token: a valid one unless `claims` change it (None
        removes a claim)."""
        now = int(time.time())
        body = {"iss": self.issuer, "sub": "web-alice", "aud": CLIENT_ID, "iat": now, "exp": now + 3600,
                "policy": "readonly"}
        for k, v in claims.items():
            if v is None:
                body.pop(k, None)
            else:
                body[k] = v
        header = b64u(json.dumps({"alg": alg, "kid": kid, "typ": "JWT"}).encode())
        payload = b64u(json.dumps(body).encode())
        signing_input = f"{header}.{payload}".encode()
        hashes = {"RS256": "SHA-256", "RS384": "SHA-384", "RS512": "SHA-512"}
        priv = self.keys[kid][1]
        signature = rsa.sign(signing_input, priv, hashes.get(alg, "SHA-256"))
        return f"{header}.{payload}.{b64u(signature)}"


def unsigned_sts(endpoint):
    return boto3.session.Session().client(
        "sts", endpoint_url=endpoint, region_name=REGION,
        config=Config(signature_version=UNSIGNED, parameter_validation=False,
                      retries={"total_max_attempts": 1, "mode": "standard"}))


class WebIdentityTests(IamCase):
    @classmethod
    def setUpClass(cls):
        cls.provider = Provider()
        cls.server_env = dict(IamCase.server_env, TESSERA_TEST_STS_MIN_DURATION="1s",
                              TESSERA_IDENTITY_OPENID_CONFIG_URL=cls.provider.config_url,
                              TESSERA_IDENTITY_OPENID_CLIENT_ID=CLIENT_ID)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.provider.stop()

    def assume(self, token, **kwargs):
        r = unsigned_sts(self.endpoint).assume_role_with_web_identity(
            RoleArn=ROLE, RoleSessionName="web", WebIdentityToken=token, **kwargs)
        return r

    def refused(self, token, code="InvalidParameterValue", status=400, **kwargs):
        with self.assertRaises(ClientError) as cm:
            self.assume(token, **kwargs)
        err = cm.exception.response
        self.assertEqual((err["Error"]["Code"], err["ResponseMetadata"]["HTTPStatusCode"]), (code, status),
                         err["Error"].get("Message"))
        return err["Error"].get("Message", "")

    def test_tokens_trade_for_credentials_with_the_claimed_policies(self):
        b = self.bucket("a.txt")
        before = dict(self.provider.fetches)
        r = self.assume(self.provider.token(), DurationSeconds=900)
        self.assertEqual(r["SubjectFromWebIdentityToken"], "web-alice")
        creds = r["Credentials"]
        remaining = creds["Expiration"].timestamp() - time.time()
        self.assertTrue(800 < remaining <= 905, remaining)
        reader = temp_client(self.endpoint, creds)
        self.assertEqual(reader.get_object(Bucket=b, Key="a.txt")["Body"].read(), b"body of a.txt")
        with self.assertRaises(ClientError) as cm:
            reader.put_object(Bucket=b, Key="x", Body=b"x")
        self.assertEqual(cm.exception.response["Error"]["Code"], "AccessDenied")
        # Without the session token the keys are refused.
        no_token = temp_client(self.endpoint, creds, token="")
        with self.assertRaises(ClientError):
            no_token.get_object(Bucket=b, Key="a.txt")
        # A list claim, names that do not exist left out; a session policy
        # narrows what the claimed policies allow.
        writer = temp_client(self.endpoint, self.assume(
            self.provider.token(policy=["no-such-policy", "readwrite"]))["Credentials"])
        writer.put_object(Bucket=b, Key="w", Body=b"w")
        narrowed = temp_client(self.endpoint, self.assume(
            self.provider.token(policy="readwrite"),
            Policy=json.dumps({"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": [f"arn:aws:s3:::{b}/*"]}]}))["Credentials"])
        narrowed.get_object(Bucket=b, Key="w")
        with self.assertRaises(ClientError):
            narrowed.put_object(Bucket=b, Key="n", Body=b"n")
        # Four exchanges, at most one fetch of the keys (the first use, if
        # this test runs first).
        for doc in ("discovery", "jwks"):
            self.assertLessEqual(self.provider.fetches[doc] - before[doc], 1, self.provider.fetches)

    def test_credentials_last_as_long_as_the_token(self):
        b = self.bucket("a.txt")
        token = self.provider.token(exp=int(time.time()) + 4)
        creds = self.assume(token)["Credentials"]
        c = temp_client(self.endpoint, creds)
        c.get_object(Bucket=b, Key="a.txt")
        time.sleep(max(0.0, creds["Expiration"].timestamp() - time.time()) + 1.5)
        with self.assertRaises(ClientError) as cm:
            c.get_object(Bucket=b, Key="a.txt")
        self.assertEqual(cm.exception.response["Error"]["Code"], "ExpiredToken")

    def test_invalid_tokens_are_refused(self):
        p = self.provider
        self.refused(p.token(exp=int(time.time()) - 5), code="ExpiredToken")
        self.assertIn("issuer", self.refused(p.token(iss="http://elsewhere")))
        self.assertIn("client id", self.refused(p.token(aud="another-client")))
        self.refused(p.token(sub=None))
        self.refused(p.token(nbf=int(time.time()) + 3600))
        self.assertIn("claim", self.refused(p.token(policy=None)))
        self.assertIn("defined", self.refused(p.token(policy="no-such-policy")))
        # A token whose claims were changed after signing.
        header, _, sig = p.token().split(".")
        forged = b64u(json.dumps({"iss": p.issuer, "sub": "x", "aud": CLIENT_ID,
                                  "exp": int(time.time()) + 60, "policy": "consoleAdmin"}).encode())
        self.assertIn("signature", self.refused(f"{header}.{forged}.{sig}"))
        # Symmetric and unsigned tokens; garbage.
        none_header = b64u(json.dumps({"alg": "none", "kid": "k1"}).encode())
        self.refused(f"{none_header}.{forged}.")
        self.refused("not-a-token")
        # A key the provider does not publish: refused, and not fetched
        # again at once (an unsigned caller cannot make the server hammer
        # the provider).
        p.keys["k2"] = rsa.newkeys(2048)
        before = dict(p.fetches)
        self.refused(p.token(kid="k2"))
        self.refused(p.token(kid="k2"))
        self.assertLessEqual(p.fetches["jwks"] - before["jwks"], 1)
        # Bad parameters are refused before the provider is asked.
        self.refused(p.token(), DurationSeconds=0)
        self.refused(p.token(), Policy="not json")
        with self.assertRaises(ClientError) as cm:
            unsigned_sts(self.endpoint).assume_role_with_web_identity(
                RoleArn=ROLE, RoleSessionName="web", WebIdentityToken="")
        self.assertEqual(cm.exception.response["ResponseMetadata"]["HTTPStatusCode"], 400)

    def test_unsigned_assume_role_is_refused(self):
        with self.assertRaises(ClientError) as cm:
            unsigned_sts(self.endpoint).assume_role(RoleArn=ROLE, RoleSessionName="web")
        self.assertEqual(cm.exception.response["Error"]["Code"], "AccessDenied")


class WebIdentityOverHttps(unittest.TestCase):
    """A provider served over HTTPS: trusted through SSL_CERT_FILE, its
    tokens work; not trusted, the call fails with IDPCommunicationError
    and the server keeps serving."""

    def test_https_provider(self):
        if shutil.which("openssl") is None:
            self.fail("openssl is needed to make the test certificate")
        tls_dir = tempfile.mkdtemp(prefix="tessera-oidc-tls-")
        self.addCleanup(shutil.rmtree, tls_dir, True)
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-addext", "basicConstraints=critical,CA:FALSE",
             "-keyout", os.path.join(tls_dir, "key.pem"), "-out", os.path.join(tls_dir, "cert.pem")],
            check=True, capture_output=True)
        provider = Provider(tls_dir=tls_dir)
        self.addCleanup(provider.stop)
        for trusted in (True, False):
            env = {"TESSERA_IDENTITY_OPENID_CONFIG_URL": provider.config_url,
                   "TESSERA_IDENTITY_OPENID_CLIENT_ID": CLIENT_ID,
                   "SSL_CERT_FILE": os.path.join(tls_dir, "cert.pem") if trusted else os.devnull}
            server = TesseraServer(env=env)
            self.addCleanup(server.cleanup)
            server.start()
            call = lambda: unsigned_sts(server.endpoint).assume_role_with_web_identity(  # noqa: E731
                RoleArn=ROLE, RoleSessionName="web", WebIdentityToken=provider.token())
            if trusted:
                self.assertEqual(call()["SubjectFromWebIdentityToken"], "web-alice")
            else:
                with self.assertRaises(ClientError) as cm:
                    call()
                self.assertEqual(cm.exception.response["Error"]["Code"], "IDPCommunicationError")
                # The server still serves.
                client(server.endpoint).list_buckets()
            server.stop()


class WebIdentityMinio(unittest.TestCase):
    """The same provider trusted by MinIO and by Tessera on the same four
    drives, one server at a time: the same token gets the same rights from
    both (MinIO the oracle), and the temporary credentials either server
    issued keep working on the other (the session token, its claims and
    the `policydb/sts-users` mapping read as the issuer wrote them)."""

    def test_minio_and_tessera_share_web_identity_sessions(self):
        provider = Provider()
        self.addCleanup(provider.stop)
        env = {"TESSERA_IDENTITY_OPENID_CONFIG_URL": provider.config_url,
               "TESSERA_IDENTITY_OPENID_CLIENT_ID": CLIENT_ID}
        tessera = TesseraServer(env=env)
        self.addCleanup(tessera.cleanup)
        for d in tessera.drives:
            os.makedirs(d, exist_ok=True)
        minio = Minio(tessera.root, tessera.drives, env={
            "MINIO_IDENTITY_OPENID_CONFIG_URL": provider.config_url,
            "MINIO_IDENTITY_OPENID_CLIENT_ID": CLIENT_ID})
        self.addCleanup(minio.stop)

        def retried(call, attempts):
            for attempt in range(attempts):
                try:
                    return call()
                except ClientError as e:
                    if e.response["ResponseMetadata"]["HTTPStatusCode"] != 503 or attempt + 1 == attempts:
                        raise
                    time.sleep(0.5)

        def rights(endpoint, creds, attempts, who):
            """(GET allowed, PUT allowed) of `creds` on `endpoint`."""
            c = temp_client(endpoint, creds)
            got = []
            for call in (lambda: c.get_object(Bucket="web", Key="a.txt")["Body"].read(),
                         lambda: c.put_object(Bucket="web", Key=f"by-{who}", Body=b"x")):
                try:
                    retried(call, attempts)
                    got.append(True)
                except ClientError as e:
                    self.assertEqual(e.response["Error"]["Code"], "AccessDenied", f"{who}: {e}")
                    got.append(False)
            return tuple(got)

        def exchange(endpoint, token, attempts):
            return retried(lambda: unsigned_sts(endpoint).assume_role_with_web_identity(
                RoleArn=ROLE, RoleSessionName="web", WebIdentityToken=token), attempts)["Credentials"]

        minio.start()
        root = minio_client(minio.endpoint)
        retried(lambda: root.create_bucket(Bucket="web"), MINIO_ATTEMPTS)
        retried(lambda: root.put_object(Bucket="web", Key="a.txt", Body=b"a"), MINIO_ATTEMPTS)
        # Two subjects: the policies of a subject's sessions are stored
        # per subject (its latest token's claim), by both servers.
        reader = provider.token(sub="web-reader", policy="readonly")
        writer = provider.token(sub="web-writer", policy="readwrite")
        minio_reader = exchange(minio.endpoint, reader, MINIO_ATTEMPTS)
        minio_writer = exchange(minio.endpoint, writer, MINIO_ATTEMPTS)
        oracle = {"readonly": rights(minio.endpoint, minio_reader, MINIO_ATTEMPTS, "minio"),
                  "readwrite": rights(minio.endpoint, minio_writer, MINIO_ATTEMPTS, "minio")}
        self.assertEqual(oracle, {"readonly": (True, False), "readwrite": (True, True)})
        minio.stop()

        tessera.start()
        self.assertEqual(rights(tessera.endpoint, exchange(tessera.endpoint, reader, 1), 1, "tessera"),
                         oracle["readonly"])
        tessera_writer = exchange(tessera.endpoint, writer, 1)
        self.assertEqual(rights(tessera.endpoint, tessera_writer, 1, "tessera"), oracle["readwrite"])
        # MinIO's session, read from the drives.
        self.assertEqual(rights(tessera.endpoint, minio_reader, 1, "tessera-minio-session"),
                         oracle["readonly"])
        self.assertEqual(tessera.stop(), 0, tessera.log_tail())

        minio.start()
        # Tessera's session, read by MinIO from the drives.
        self.assertEqual(rights(minio.endpoint, tessera_writer, MINIO_ATTEMPTS, "minio-tessera-session"),
                         oracle["readwrite"])
        minio.stop()


if __name__ == "__main__":
    unittest.main()
