"""MinIO's `mc` client against a real `tessera server`.

The mc binary comes from TESSERA_MC (`cargo xtask ci` installs mc into
target/tools/bin and exports the path). A missing mc fails the class: it
is part of the suite, not optional.
"""

import json
import os
import random
import shutil
import subprocess
import tempfile
import unittest

from tessera_server import (
    ACCESS_KEY,
    SECRET_KEY,
    ServerTestCase,
    read_tree,
    unique_bucket,
    write_random_tree,
)

MiB = 1024 * 1024


def mc_binary():
    path = os.environ.get("TESSERA_MC")
    if not path:
        raise RuntimeError(
            "TESSERA_MC is not set: run `cargo xtask tools` and point TESSERA_MC at "
            "target/tools/bin/mc (cargo xtask ci does both)"
        )
    path = os.path.abspath(path)
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"TESSERA_MC={path} is not an executable file")
    return path


class McCase(ServerTestCase):
    """A server with an mc alias `t` for it, in a configuration directory of
    its own; `alias_options` are added to `mc alias set`."""

    alias_options = ()
    # Extra environment of mc.
    mc_env = {}

    @classmethod
    def setUpClass(cls):
        cls.mc_path = mc_binary()
        super().setUpClass()
        cls.config_dir = tempfile.mkdtemp(prefix="tessera-mc-")
        cls.env = dict(os.environ, MC_NO_COLOR="1", NO_PROXY="127.0.0.1,localhost", **cls.mc_env)
        cls.env.pop("MC_HOST_t", None)
        done = cls.run_mc(
            "alias", "set", "t", cls.endpoint, ACCESS_KEY, SECRET_KEY, "--api", "S3v4", *cls.alias_options
        )
        if done.returncode != 0:
            raise RuntimeError(f"mc alias set failed: {done.stdout}{done.stderr}")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(getattr(cls, "config_dir", ""), ignore_errors=True)
        super().tearDownClass()

    @classmethod
    def run_mc(cls, *args, env=None):
        command = [cls.mc_path, "--config-dir", cls.config_dir, "--no-color", "--quiet", *args]
        env = dict(cls.env, **(env or {}))
        return subprocess.run(command, env=env, capture_output=True, timeout=300)

    def mc(self, *args):
        """Runs mc; fails the test on a non-zero exit. Returns stdout bytes."""
        done = self.run_mc(*args)
        if done.returncode != 0:
            self.fail(
                f"mc {' '.join(args)} exited with {done.returncode}\n"
                f"stdout:\n{done.stdout.decode(errors='replace')[-3000:]}\n"
                f"stderr:\n{done.stderr.decode(errors='replace')[-3000:]}\n"
                f"server log:\n{self.server.log_tail(20)}"
            )
        return done.stdout

    def mc_json(self, *args):
        """mc --json ARGS: one JSON document per line."""
        out = self.mc("--json", *args).decode()
        return [json.loads(line) for line in out.splitlines() if line.strip()]


class McTests(McCase):
    alias_options = ("--path", "on")

    def make_bucket(self):
        bucket = unique_bucket("mc")
        self.mc("mb", f"t/{bucket}")
        return bucket

    def listed_keys(self, target):
        return sorted(
            entry["key"] for entry in self.mc_json("ls", "--recursive", target) if entry.get("type") == "file"
        )

    def test_cp_ls_cat_rm(self):
        bucket = self.make_bucket()
        directory = self.tmpdir()
        small = os.path.join(directory, "small.txt")
        with open(small, "wb") as f:
            f.write(b"hello from mc\n")
        # Above mc's 16 MiB part size: a multipart upload.
        large = os.path.join(directory, "large.bin")
        large_body = random.Random(5).randbytes(20 * MiB + 3)
        with open(large, "wb") as f:
            f.write(large_body)

        self.mc("cp", small, f"t/{bucket}/docs/small.txt")
        self.mc("cp", large, f"t/{bucket}/blobs/large.bin")

        top = self.mc_json("ls", f"t/{bucket}")
        self.assertEqual(sorted(e["key"] for e in top), ["blobs/", "docs/"])
        self.assertTrue(all(e["type"] == "folder" for e in top))
        files = {e["key"]: e["size"] for e in self.mc_json("ls", "--recursive", f"t/{bucket}")}
        self.assertEqual(files, {"docs/small.txt": 14, "blobs/large.bin": len(large_body)})

        self.assertEqual(self.mc("cat", f"t/{bucket}/docs/small.txt"), b"hello from mc\n")
        down = os.path.join(directory, "large.down")
        self.mc("cp", f"t/{bucket}/blobs/large.bin", down)
        with open(down, "rb") as f:
            self.assertEqual(f.read(), large_body)

        stat = self.mc_json("stat", f"t/{bucket}/blobs/large.bin")[0]
        self.assertEqual(stat["size"], len(large_body))
        self.assertTrue(stat["etag"].endswith("-2"), stat["etag"])

        self.mc("rm", f"t/{bucket}/docs/small.txt")
        self.assertEqual(self.listed_keys(f"t/{bucket}"), ["blobs/large.bin"])
        failed = self.run_mc("cat", f"t/{bucket}/docs/small.txt")
        self.assertNotEqual(failed.returncode, 0)

        self.mc("rm", "--recursive", "--force", f"t/{bucket}")
        self.assertEqual(self.listed_keys(f"t/{bucket}"), [])
        self.mc("rb", f"t/{bucket}")
        self.assertNotIn(bucket, [e["key"].rstrip("/") for e in self.mc_json("ls", "t")])

    def test_mirror_both_ways(self):
        bucket = self.make_bucket()
        local = self.tmpdir()
        names = write_random_tree(local, 40, max_size=20000, seed=8)
        self.mc("mirror", local, f"t/{bucket}/tree")
        self.assertEqual(self.listed_keys(f"t/{bucket}/tree"), sorted(names))

        back = self.tmpdir()
        self.mc("mirror", f"t/{bucket}/tree", back)
        self.assertEqual(read_tree(back), read_tree(local))

        # Change, add and remove; mirror again with overwrite and remove.
        for rel in names[:3]:
            with open(os.path.join(local, *rel.split("/")), "wb") as f:
                f.write(b"changed " + rel.encode())
        with open(os.path.join(local, "added.txt"), "wb") as f:
            f.write(b"added")
        os.remove(os.path.join(local, *names[5].split("/")))
        self.mc("mirror", "--overwrite", "--remove", local, f"t/{bucket}/tree")
        self.assertEqual(
            self.listed_keys(f"t/{bucket}/tree"), sorted([n for n in names if n != names[5]] + ["added.txt"])
        )
        for rel in names[:3]:
            self.assertEqual(self.mc("cat", f"t/{bucket}/tree/{rel}"), b"changed " + rel.encode())

        again = self.tmpdir()
        self.mc("mirror", f"t/{bucket}/tree", again)
        self.assertEqual(read_tree(again), read_tree(local))

    def test_versioned_bucket(self):
        bucket = self.make_bucket()
        self.mc("version", "enable", f"t/{bucket}")
        directory = self.tmpdir()
        path = os.path.join(directory, "v.txt")
        for content in (b"one", b"two"):
            with open(path, "wb") as f:
                f.write(content)
            self.mc("cp", path, f"t/{bucket}/v.txt")
        self.mc("rm", f"t/{bucket}/v.txt")
        versions = self.mc_json("ls", "--versions", f"t/{bucket}")
        self.assertEqual(len(versions), 3, versions)
        self.assertEqual(sum(1 for v in versions if v.get("type") == "file" and v.get("size") == 3), 2, versions)
        self.assertEqual(self.listed_keys(f"t/{bucket}"), [])


if __name__ == "__main__":
    unittest.main()


class McTlsTests(McCase):
    """mc over HTTPS, trusting the server's certificate: minio-go sends
    bodies there as UNSIGNED-PAYLOAD instead of signing every chunk as it
    does over HTTP. (Its trailer form, which mc leaves off, is covered
    by tessera-bench's `crc32c-trailer` mode against the real server.)"""

    alias_options = ("--path", "on")

    @classmethod
    def setUpClass(cls):
        if shutil.which("openssl") is None:
            raise RuntimeError("openssl is needed to make the test certificate")
        cls.certs = tempfile.mkdtemp(prefix="tessera-mc-certs-")
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-days", "2", "-subj", "/CN=tessera-test",
             "-addext", "subjectAltName=IP:127.0.0.1", "-addext", "basicConstraints=critical,CA:FALSE",
             "-keyout", os.path.join(cls.certs, "private.key"),
             "-out", os.path.join(cls.certs, "public.crt")],
            check=True, capture_output=True,
        )
        cls.server_env = {"TESSERA_CERTS_DIR": cls.certs}
        # Go's crypto/x509 trusts the file SSL_CERT_FILE names.
        cls.mc_env = {"SSL_CERT_FILE": os.path.join(cls.certs, "public.crt")}
        super().setUpClass()
        if not cls.endpoint.startswith("https://"):
            raise RuntimeError(f"the server did not serve https: {cls.endpoint}")

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(getattr(cls, "certs", ""), ignore_errors=True)

    def test_put_and_multipart_over_https(self):
        bucket = unique_bucket("mctls")
        self.mc("mb", f"t/{bucket}")
        directory = self.tmpdir()
        bodies = {
            "empty": b"",
            "small": b"over tls\n",
            # One chunk and a bit: two data chunks, then the trailer.
            "chunks": random.Random(1).randbytes(64 * 1024 + 1),
            "single": random.Random(2).randbytes(5 * MiB + 7),
            # Above mc's 16 MiB part size: a multipart upload.
            "multi": random.Random(3).randbytes(17 * MiB + 5),
        }
        for name, body in bodies.items():
            path = os.path.join(directory, name)
            with open(path, "wb") as f:
                f.write(body)
            self.mc("cp", path, f"t/{bucket}/{name}")
        for name, body in bodies.items():
            down = os.path.join(directory, name + ".down")
            self.mc("cp", f"t/{bucket}/{name}", down)
            with open(down, "rb") as f:
                self.assertEqual(f.read(), body, name)
        stat = self.mc_json("stat", f"t/{bucket}/multi")[0]
        self.assertTrue(stat["etag"].endswith("-2"), stat["etag"])
