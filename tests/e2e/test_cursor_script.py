"""Runs the AQL engineers' python-arango cursor script (crates/quiver-aql/tests/python/) against
the real binary, so its checks — multi-batch results, count, fullCount, stream, deletion,
expiry, NEW/OLD, errors, warnings, allowRetry, explain — are part of the suite CI runs.
"""
import os
import subprocess
import sys

from conftest import REPO, Server


def test_cursor_script_passes(tmp_root):
    # Its own server: the script creates and drops a collection in _system and sleeps through
    # a cursor's ttl, which must not interfere with the shared server's tests.
    srv = Server(tmp_root / "cursor-script").start()
    try:
        script = REPO / "crates" / "quiver-aql" / "tests" / "python" / "cursor_test.py"
        env = dict(os.environ, QUIVER_URL=srv.url)
        result = subprocess.run(
            [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert "ok   count" in result.stdout
    finally:
        srv.stop()
