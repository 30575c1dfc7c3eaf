"""Starts and stops a real `tessera` server for the client test suites.

Builds nothing: the binary comes from the TESSERA_BIN environment variable
(`cargo xtask ci` builds it with `cargo build -p daemon` and exports the
path). Each test class gets its own server on a free port over four fresh
temporary directories (one erasure set, two parity drives).

Run by hand:

    cargo build -p daemon
    TESSERA_BIN=target/debug/tessera TESSERA_MC=target/tools/bin/mc \\
        target/pyenv/bin/python -m unittest discover -s tests/python -v
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest
import uuid

ACCESS_KEY = "tessera-test-user"
SECRET_KEY = "tessera-test-secret-0123456789"
REGION = "us-east-1"

# How long a server may take to print its API line.
START_TIMEOUT_S = 30.0


def binary():
    """The `tessera` binary under test (env TESSERA_BIN). A missing binary
    is an error of the test set-up: it fails, it never skips."""
    path = os.environ.get("TESSERA_BIN")
    if not path:
        raise RuntimeError(
            "TESSERA_BIN is not set: build the server with `cargo build -p daemon` "
            "and point TESSERA_BIN at target/debug/tessera (cargo xtask ci does both)"
        )
    path = os.path.abspath(path)
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"TESSERA_BIN={path} is not an executable file")
    return path


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TesseraServer:
    """One `tessera server` process over four temporary drive directories.

    stdout and stderr go to `server.log` in the server's temporary root (a
    file, not a pipe, so a chatty server can never block on a full pipe);
    `log_tail()` returns the end of it for failure messages."""

    def __init__(self, drives=4, env=None):
        self.root = tempfile.mkdtemp(prefix="tessera-pytest-")
        self.drives = [os.path.join(self.root, f"d{i}") for i in range(1, drives + 1)]
        self.log_path = os.path.join(self.root, "server.log")
        self.extra_env = dict(env or {})
        self.proc = None
        self.port = None
        self.endpoint = None

    def start(self):
        last_error = None
        # A port found free can be taken before the server binds it; retry
        # a few times with a new port in that case.
        for _ in range(5):
            port = free_port()
            try:
                self._start_on(port)
                return self
            except _PortTaken as error:
                last_error = error
        raise RuntimeError(f"could not start tessera on a free port: {last_error}")

    def _start_on(self, port):
        env = dict(os.environ)
        env.update(
            {
                "TESSERA_ROOT_USER": ACCESS_KEY,
                "TESSERA_ROOT_PASSWORD": SECRET_KEY,
            }
        )
        env.update(self.extra_env)
        args = [binary(), "server", "--address", f"127.0.0.1:{port}", *self.drives]
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )
        finally:
            log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        # https when the environment gives the server certificates.
        marker = f"API: http://127.0.0.1:{port}"
        while time.monotonic() < deadline:
            text = self._log_text()
            for scheme in ("http", "https"):
                marker = f"API: {scheme}://127.0.0.1:{port}"
                if marker in text and self._accepts(port):
                    self.port = port
                    self.endpoint = f"{scheme}://127.0.0.1:{port}"
                    return
            code = self.proc.poll()
            if code is not None:
                self.proc = None
                if "in use" in text.lower():
                    raise _PortTaken(f"port {port}: {text[-300:]}")
                raise RuntimeError(
                    f"tessera exited with {code} before listening:\n{self.log_tail()}"
                )
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(
            f"tessera did not print {marker!r} within {START_TIMEOUT_S} s:\n{self.log_tail()}"
        )

    @staticmethod
    def _accepts(port):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            return False

    def _log_text(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines=40):
        text = self._log_text().splitlines()
        return "\n".join(text[-lines:])

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        """Stops the server (SIGTERM, then SIGKILL after 10 s); returns its
        exit code, None if it was not running."""
        if self.proc is None:
            return None
        proc, self.proc = self.proc, None
        return stop_process(proc)

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def stop_process(proc, timeout=10):
    """SIGTERM, then SIGKILL after `timeout` seconds; returns the exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


class _PortTaken(Exception):
    pass


def unique_bucket(prefix="b"):
    """A fresh, valid bucket name."""
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


class ServerTestCase(unittest.TestCase):
    """A test class with its own server (started once for the class).

    After every test the server must still be running: a crash is reported
    as a failure of the test that caused it, with the server's log."""

    server = None
    # Extra environment of the class's server.
    server_env = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.server = TesseraServer(env=cls.server_env).start()
        cls.endpoint = cls.server.endpoint

    @classmethod
    def tearDownClass(cls):
        server, cls.server = cls.server, None
        if server is not None:
            crashed = not server.alive()
            tail = server.log_tail()
            server.cleanup()
            if crashed:
                raise AssertionError(f"tessera was not running at the end of the class:\n{tail}")
        super().tearDownClass()

    def tearDown(self):
        if self.server is not None and not self.server.alive():
            self.fail(f"tessera died during this test:\n{self.server.log_tail()}")
        super().tearDown()

    def tmpdir(self):
        """A temporary directory removed after the test."""
        path = tempfile.mkdtemp(prefix="tessera-pyclient-")
        self.addCleanup(shutil.rmtree, path, True)
        return path


def write_random_tree(root, files, min_size=0, max_size=8192, seed=1):
    """Writes `files` files of random content in nested directories under
    `root`; returns their paths relative to root (with '/' separators)."""
    import random

    rng = random.Random(seed)
    names = []
    for i in range(files):
        depth = i % 3
        parts = [f"dir{(i // 7) % 3}", f"sub{i % 2}"][:depth] + [f"file-{i:03d}.bin"]
        rel = "/".join(parts)
        path = os.path.join(root, *parts)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(rng.randbytes(rng.randint(min_size, max_size)))
        names.append(rel)
    return names


def read_tree(root):
    """{relative path: bytes} of every file under root."""
    out = {}
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            with open(path, "rb") as f:
                out[rel] = f.read()
    return out
