"""aws-cli (v1, from the same Python environment) against a real `tessera
server`: high-level `aws s3` transfers and a few `aws s3api` calls."""

import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import unittest

from tessera_server import (
    ACCESS_KEY,
    REGION,
    SECRET_KEY,
    ServerTestCase,
    read_tree,
    unique_bucket,
    write_random_tree,
)

MiB = 1024 * 1024


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(MiB), b""):
            h.update(chunk)
    return h.hexdigest()


class AwsCliTests(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.home = tempfile.mkdtemp(prefix="tessera-awscli-")
        config = os.path.join(cls.home, "config")
        with open(config, "w") as f:
            # Path-style addressing; the CLI's default 8 MiB multipart
            # threshold and part size, spelled out.
            f.write(
                "[default]\n"
                f"region = {REGION}\n"
                "s3 =\n"
                "  addressing_style = path\n"
                "  multipart_threshold = 8MB\n"
                "  multipart_chunksize = 8MB\n"
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

    @classmethod
    def tearDownClass(cls):
        import shutil

        shutil.rmtree(cls.home, ignore_errors=True)
        super().tearDownClass()

    def aws(self, *args, check=True):
        """Runs `aws ARGS --endpoint-url ...` with this environment's Python
        (`python -m awscli`, so it is the awscli installed beside boto3);
        returns the completed process."""
        command = [sys.executable, "-m", "awscli", *args, "--endpoint-url", self.endpoint]
        done = subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=300)
        if check and done.returncode != 0:
            self.fail(
                f"aws {' '.join(args)} exited with {done.returncode}\n"
                f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}\n"
                f"server log:\n{self.server.log_tail(20)}"
            )
        return done

    def api(self, *args):
        """An `aws s3api` call; returns its JSON output (None if empty)."""
        out = self.aws("s3api", *args, "--output", "json").stdout
        return json.loads(out) if out.strip() else None

    def make_bucket(self):
        bucket = unique_bucket("cli")
        self.aws("s3", "mb", f"s3://{bucket}")
        return bucket

    def remote_keys(self, bucket, prefix=""):
        keys, token = [], None
        while True:
            args = ["list-objects-v2", "--bucket", bucket, "--prefix", prefix, "--max-items", "1000"]
            if token:
                args += ["--starting-token", token]
            out = self.api(*args) or {}
            keys.extend(o["Key"] for o in out.get("Contents", []))
            token = out.get("NextToken")
            if not token:
                return sorted(keys)

    def test_cp_large_file_multipart(self):
        bucket = self.make_bucket()
        directory = self.tmpdir()
        source = os.path.join(directory, "big.bin")
        size = 40 * MiB + 12345
        with open(source, "wb") as f:
            f.write(random.Random(7).randbytes(size))
        self.aws("s3", "cp", source, f"s3://{bucket}/large/big.bin", "--no-progress", "--only-show-errors")
        head = self.api("head-object", "--bucket", bucket, "--key", "large/big.bin")
        self.assertEqual(head["ContentLength"], size)
        # 8 MiB parts: 6 parts, so a multipart ETag.
        self.assertTrue(head["ETag"].endswith('-6"'), head["ETag"])
        target = os.path.join(directory, "big.down")
        self.aws("s3", "cp", f"s3://{bucket}/large/big.bin", target, "--no-progress", "--only-show-errors")
        self.assertEqual(os.path.getsize(target), size)
        self.assertEqual(sha256_file(target), sha256_file(source))

    def test_sync_up_modify_and_down(self):
        bucket = self.make_bucket()
        local = self.tmpdir()
        names = write_random_tree(local, 50, max_size=6000, seed=3)
        out = self.aws("s3", "sync", local, f"s3://{bucket}/tree", "--no-progress").stdout
        self.assertEqual(out.count("upload: "), 50, out)
        self.assertEqual(self.remote_keys(bucket, "tree/"), sorted(f"tree/{n}" for n in names))

        # Change three files (new sizes), add one, remove one locally.
        changed = names[:3]
        for rel in changed:
            with open(os.path.join(local, rel), "ab") as f:
                f.write(b"appended")
        with open(os.path.join(local, "new-file.txt"), "wb") as f:
            f.write(b"new")
        os.remove(os.path.join(local, names[10]))
        out = self.aws("s3", "sync", local, f"s3://{bucket}/tree", "--delete", "--no-progress").stdout
        uploads = sorted(
            line.rsplit(" to ", 1)[1] for line in out.splitlines() if line.startswith("upload: ")
        )
        expected = sorted(f"s3://{bucket}/tree/{rel}" for rel in changed + ["new-file.txt"])
        self.assertEqual(uploads, expected, out)
        self.assertEqual(sum(line.startswith("delete: ") for line in out.splitlines()), 1, out)

        # Down into a fresh directory: the same tree.
        down = self.tmpdir()
        self.aws("s3", "sync", f"s3://{bucket}/tree", down, "--no-progress", "--only-show-errors")
        self.assertEqual(read_tree(down), read_tree(local))
        # Nothing changed: a second sync in either direction moves nothing.
        self.assertEqual(self.aws("s3", "sync", f"s3://{bucket}/tree", down, "--no-progress").stdout.strip(), "")
        self.assertEqual(self.aws("s3", "sync", local, f"s3://{bucket}/tree", "--no-progress").stdout.strip(), "")

    def test_ls_and_rm_recursive(self):
        bucket = self.make_bucket()
        local = self.tmpdir()
        names = write_random_tree(local, 20, max_size=500, seed=4)
        self.aws("s3", "cp", local, f"s3://{bucket}/", "--recursive", "--no-progress", "--only-show-errors")

        buckets = self.aws("s3", "ls").stdout
        self.assertIn(bucket, buckets)

        top = self.aws("s3", "ls", f"s3://{bucket}/").stdout.splitlines()
        prefixes = sorted(line.split()[-1] for line in top if line.strip().startswith("PRE "))
        files = sorted(line.split()[-1] for line in top if not line.strip().startswith("PRE "))
        self.assertEqual(prefixes, sorted({n.split("/")[0] + "/" for n in names if "/" in n}))
        self.assertEqual(files, sorted(n for n in names if "/" not in n))

        recursive = self.aws("s3", "ls", f"s3://{bucket}/", "--recursive").stdout.splitlines()
        listed = {line.split(None, 3)[3]: int(line.split(None, 3)[2]) for line in recursive}
        self.assertEqual(listed, {n: os.path.getsize(os.path.join(local, *n.split("/"))) for n in names})

        self.aws("s3", "rm", f"s3://{bucket}/dir0/", "--recursive", "--only-show-errors")
        remaining = [n for n in names if not n.startswith("dir0/")]
        self.assertLess(len(remaining), len(names))
        self.assertEqual(self.remote_keys(bucket), sorted(remaining))
        self.aws("s3", "rm", f"s3://{bucket}", "--recursive", "--only-show-errors")
        self.assertEqual(self.remote_keys(bucket), [])
        self.aws("s3", "rb", f"s3://{bucket}")
        self.assertNotIn(bucket, self.aws("s3", "ls").stdout)

    def test_mv_and_cp_between_keys(self):
        bucket = self.make_bucket()
        directory = self.tmpdir()
        source = os.path.join(directory, "f.txt")
        with open(source, "wb") as f:
            f.write(b"move me")
        self.aws("s3", "cp", source, f"s3://{bucket}/a.txt", "--only-show-errors")
        self.aws("s3", "cp", f"s3://{bucket}/a.txt", f"s3://{bucket}/b.txt", "--only-show-errors")
        self.aws("s3", "mv", f"s3://{bucket}/a.txt", f"s3://{bucket}/moved/c.txt", "--only-show-errors")
        self.assertEqual(self.remote_keys(bucket), ["b.txt", "moved/c.txt"])
        out = self.aws("s3", "cp", f"s3://{bucket}/moved/c.txt", "-").stdout
        self.assertEqual(out, "move me")

    def test_s3api_calls(self):
        bucket = self.make_bucket()
        directory = self.tmpdir()
        body = os.path.join(directory, "body.json")
        with open(body, "wb") as f:
            f.write(b'{"hello": "tessera"}')
        put = self.api(
            "put-object",
            "--bucket", bucket,
            "--key", "api/doc.json",
            "--body", body,
            "--content-type", "application/json",
            "--metadata", "owner=ci,purpose=test",
        )
        self.assertEqual(put["ETag"], '"' + hashlib.md5(b'{"hello": "tessera"}').hexdigest() + '"')

        head = self.api("head-object", "--bucket", bucket, "--key", "api/doc.json")
        self.assertEqual(head["ContentLength"], 20)
        self.assertEqual(head["ContentType"], "application/json")
        self.assertEqual(head["Metadata"], {"owner": "ci", "purpose": "test"})

        target = os.path.join(directory, "out.json")
        got = self.api("get-object", "--bucket", bucket, "--key", "api/doc.json", target)
        self.assertEqual(got["ContentType"], "application/json")
        self.assertEqual(got["Metadata"], {"owner": "ci", "purpose": "test"})
        with open(target, "rb") as f:
            self.assertEqual(f.read(), b'{"hello": "tessera"}')

        ranged = self.api(
            "get-object", "--bucket", bucket, "--key", "api/doc.json", "--range", "bytes=2-6", target
        )
        self.assertEqual(ranged["ContentRange"], "bytes 2-6/20")
        with open(target, "rb") as f:
            self.assertEqual(f.read(), b"hello")

        for i in range(5):
            self.api("put-object", "--bucket", bucket, "--key", f"api/n{i}", "--body", body)
        listed = self.api(
            "list-objects-v2", "--bucket", bucket, "--prefix", "api/n", "--page-size", "2"
        )
        self.assertEqual([o["Key"] for o in listed["Contents"]], [f"api/n{i}" for i in range(5)])
        top = self.api("list-objects-v2", "--bucket", bucket, "--delimiter", "/")
        self.assertEqual([p["Prefix"] for p in top["CommonPrefixes"]], ["api/"])

        missing = self.aws("s3api", "head-object", "--bucket", bucket, "--key", "nope", check=False)
        self.assertNotEqual(missing.returncode, 0)
        self.assertIn("404", missing.stderr)
        missing = self.aws("s3api", "get-object", "--bucket", bucket, "--key", "nope", target, check=False)
        self.assertNotEqual(missing.returncode, 0)
        self.assertIn("NoSuchKey", missing.stderr)


if __name__ == "__main__":
    unittest.main()
