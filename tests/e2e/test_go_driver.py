"""ArangoDB's Go driver (v2, pinned in tests/go-driver/go.mod) against the real binary: runs
`go test ./... -count=1` in tests/go-driver with QUIVER_BIN set, and fails with go's output when
go fails. Each Go test runs over HTTP/1.1 and over HTTP/2 (cleartext, prior knowledge). Without
`go` on PATH this fails: the Go driver tests are part of the suite, never skipped."""
import os
import shutil
import subprocess

from conftest import REPO, quiver_bin

GO_TESTS = REPO / "tests" / "go-driver"


def test_go_driver_suite():
    go = shutil.which("go")
    assert go is not None, (
        "`go` is not on PATH: the Go driver tests (tests/go-driver) need a Go toolchain "
        "(1.25 or later)"
    )
    env = {**os.environ, "QUIVER_BIN": os.path.abspath(quiver_bin())}
    run = subprocess.run(
        [go, "test", "./...", "-count=1", "-timeout", "300s"],
        cwd=GO_TESTS,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, f"go test failed ({run.returncode}):\n{run.stdout}"
