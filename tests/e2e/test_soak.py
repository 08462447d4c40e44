"""The bounded CI slice of the soak (bench/reliability/soak.py): 20 seconds of the steady mixed
load against the real binary; every answer must be one the operation expects, the server must
stay up, and its resident memory and descriptors must be recorded every second."""

import csv
import os
import subprocess
import sys
from pathlib import Path

from conftest import quiver_bin

REPO = Path(__file__).resolve().parents[2]


def test_a_short_soak_runs_clean(tmp_path):
    env = {**os.environ, "QUIVER_BIN": quiver_bin()}
    run = subprocess.run(
        [sys.executable, str(REPO / "bench/reliability/soak.py"), "--minutes", "0.34",
         "--clients", "3", "--out", str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=180,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "errors 0, server alive True" in run.stdout, run.stdout
    rows = list(csv.DictReader(open(tmp_path / "soak.csv")))
    assert len(rows) >= 18, len(rows)
    assert all(float(r["rss_mib"]) > 0 and int(r["fds"]) > 0 for r in rows)
    assert sum(int(r["requests"]) for r in rows) > 200
