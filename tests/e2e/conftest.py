"""End-to-end fixtures: start the real `quiver` binary on a free port with a temporary data
directory and hand out python-arango clients and raw-HTTP helpers.

The binary comes from $QUIVER_BIN (scripts/test.sh sets it), else target/debug/quiver.
"""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest
import requests
from arango import ArangoClient

REPO = Path(__file__).resolve().parents[2]

# Authentication is on (the server's default); root has the empty password of a first start.
ROOT = ("root", "")
ROOT_AUTHORIZATION = b"Authorization: Basic cm9vdDo="


def with_root_credentials(payload: bytes) -> bytes:
    """Raw HTTP for tests about the transport, not about authentication: adds root's Basic
    credentials after the request line of every pipelined request in `payload` (walking the
    heads and their Content-Length bodies; a request whose head does not end, or that is
    chunked, ends the walk, and bytes that are no request line are left alone)."""
    out = b""
    rest = payload
    while rest:
        line_end = rest.find(b"\r\n")
        head_end = rest.find(b"\r\n\r\n")
        if line_end < 0 or not re.match(rb"[A-Z]+ \S+ HTTP/1\.[01]$", rest[:line_end]):
            break
        out += rest[: line_end + 2] + ROOT_AUTHORIZATION + b"\r\n"
        rest = rest[line_end + 2 :]
        if head_end < 0:
            break
        head = rest[: head_end - line_end - 2]
        length = re.search(rb"(?im)^content-length:\s*(\d+)\s*$", head)
        if re.search(rb"(?im)^transfer-encoding:", head):
            break
        request_end = head_end - line_end - 2 + 4 + (int(length.group(1)) if length else 0)
        out += rest[:request_end]
        rest = rest[request_end:]
    return out + rest


def quiver_bin():
    path = os.environ.get("QUIVER_BIN") or str(REPO / "target" / "debug" / "quiver")
    if not os.path.exists(path):
        raise RuntimeError(f"quiver binary not found at {path}; build it or set QUIVER_BIN")
    return path


class Server:
    """One running quiver process."""

    def __init__(self, data_dir, extra_args=(), env=None):
        self.data_dir = str(data_dir)
        self.extra_args = list(extra_args)
        # Extra environment variables of the process (e.g. ARANGODB_DEFAULT_ROOT_PASSWORD).
        self.env = dict(env or {})
        self.proc = None
        self.port = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self, port=0, timeout=30):
        args = [
            quiver_bin(),
            "serve",
            "--server.endpoint",
            f"tcp://127.0.0.1:{port}",
            "--database.directory",
            self.data_dir,
            "--log.level",
            "warning",
        ] + self.extra_args
        self.proc = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            env={**os.environ, **self.env},
        )
        deadline = time.time() + timeout
        self.startup = []
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            self.startup.append(line)
            if not line:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"quiver exited with {self.proc.returncode}")
                continue
            m = re.search(r"listening on tcp://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        else:
            self.kill()
            raise RuntimeError("quiver did not report its endpoint in time")
        # Drain the remaining output so the pipe never fills up and blocks the server.
        import threading

        self.output = []
        threading.Thread(target=self._drain, daemon=True).start()
        return self

    def _drain(self):
        for line in self.proc.stdout:
            self.output.append(line)

    def stop(self, timeout=20):
        """Clean shutdown via SIGTERM; returns the exit code."""
        if self.proc is None:
            return None
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self.proc = None
        return code

    def kill(self):
        """SIGKILL: no chance to sync or close anything."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def restart(self):
        self.stop()
        return self.start()

    def client(self):
        return ArangoClient(hosts=self.url, request_timeout=30)


@pytest.fixture(scope="session")
def tmp_root():
    root = tempfile.mkdtemp(prefix="quiver-e2e-")
    yield Path(root)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def server(tmp_root):
    srv = Server(tmp_root / "shared").start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def client(server):
    return server.client()


@pytest.fixture(scope="session")
def sys_db(client):
    return client.db("_system", username="root", password="")


@pytest.fixture()
def db(sys_db, client):
    """A fresh database per test, dropped afterwards."""
    name = "t_" + uuid.uuid4().hex[:10]
    sys_db.create_database(name)
    yield client.db(name, username="root", password="")
    sys_db.delete_database(name, ignore_missing=True)


@pytest.fixture()
def http(server):
    """A requests session bound to the shared server: http.get('/_api/version')."""

    class Http:
        def __init__(self):
            self.session = requests.Session()
            self.session.auth = ROOT
            self.base = server.url

        def __getattr__(self, method):
            def call(path, **kw):
                kw.setdefault("timeout", 30)
                return self.session.request(method.upper(), self.base + path, **kw)

            return call

    h = Http()
    yield h
    h.session.close()


def unique(prefix="c"):
    return prefix + "_" + uuid.uuid4().hex[:10]
