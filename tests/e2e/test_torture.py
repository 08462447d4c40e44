"""A bounded slice of the kill -9 torture of bench/torture.py: 20 cycles of concurrent mixed
writes (single and multi-document, stream transactions, imports, DDL, compaction), SIGKILL at a
random moment, restart, and the whole database checked against the clients' log."""
import importlib.util
import random
import time

from conftest import REPO

spec = importlib.util.spec_from_file_location("torture", REPO / "bench" / "torture.py")
torture = importlib.util.module_from_spec(spec)
spec.loader.exec_module(torture)

CYCLES = 20


def test_kill_minus_nine_cycles_lose_nothing_acknowledged(tmp_root):
    seed = random.randrange(1 << 30)
    started = time.time()
    summary = torture.torture(
        CYCLES, 3, seed, tmp_root / "torture" / "data", str(tmp_root / "torture-ops.jsonl"), 0.2, 0.8,
        out=lambda line: None,
    )
    assert summary["problems"] == [], (seed, summary)
    assert summary["cycles"] == CYCLES
    ops = summary["operations"]
    # The clients did write between the kills, in every shape.
    for kind in ("insert", "multi_post", "trx_commit", "import_documents", "create"):
        assert ops.get(kind, 0) > 0, (kind, ops)
    # A guard against a hang, not a benchmark (247 s measured on the 2-core machine at load
    # average 20; most of a cycle is the debug binary's restart).
    assert time.time() - started < 600, summary["seconds"]


def test_the_check_finds_a_lost_write_and_a_stray_document(tmp_root):
    """The checker can fail: a document removed and one added behind the log's back are found."""
    log = torture.Log(str(tmp_root / "check-ops.jsonl"))
    srv = torture.Server(tmp_root / "check" / "data").start()
    try:
        torture.setup(srv.url)
        log.docs["seed"] = [torture.Version({"n": 0, "v": 0}, 0, True, acked=0)]
        assert torture.Check(srv.url, log).run() == []
        s = torture.requests.Session()
        s.auth = torture.ROOT
        assert s.delete(f"{srv.url}/_api/document/docs/seed").status_code in (200, 202)
        r = s.post(f"{srv.url}/_api/document/docs", json={"_key": "stray", "n": -1, "v": -1})
        assert r.status_code in (201, 202)
        problems = torture.Check(srv.url, log).run()
        assert any(p.startswith("seed: an acknowledged write is lost") for p in problems), problems
        assert any(p.startswith("stray: a document no client wrote") for p in problems), problems
    finally:
        srv.stop()
        log.file.close()
