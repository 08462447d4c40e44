"""kill -9 crash test: concurrent clients write with waitForSync, the server is SIGKILLed at a
random moment, restarted, and every acknowledged write must be there, intact.

Bounded: a fixed number of iterations with short write phases (well under a minute)."""
import random
import threading
import time

import requests

from conftest import ROOT, Server

ITERATIONS = 8
WRITERS = 4


def writer(url, tag, acked, stop):
    """Inserts, updates and removes with waitForSync. `acked[key]` is the set of states the
    key may be found in after a crash: a request that was sent but not answered may or may
    not have taken effect, so it widens the set until it is acknowledged."""
    session = requests.Session()
    session.auth = ROOT
    i = 0
    while not stop.is_set():
        key = f"{tag}_{i}"
        try:
            r = session.post(
                f"{url}/_api/document/crash?waitForSync=true",
                json={"_key": key, "tag": tag, "i": i, "pad": "x" * (i % 200)},
                timeout=5,
            )
        except requests.RequestException:
            return
        if r.status_code == 201:
            acked[key] = ({"present"}, i)
        elif r.status_code >= 500:
            return
        # Every fifth document is updated, every seventh removed, once acknowledged.
        try:
            if i % 5 == 0 and r.status_code == 201:
                acked[key] = ({"present", "updated"}, i)
                u = session.patch(
                    f"{url}/_api/document/crash/{key}?waitForSync=true",
                    json={"updated": True},
                    timeout=5,
                )
                if u.status_code == 201:
                    acked[key] = ({"updated"}, i)
            if i % 7 == 0 and r.status_code == 201:
                states, _ = acked[key]
                acked[key] = (states | {"removed"}, i)
                d = session.delete(f"{url}/_api/document/crash/{key}?waitForSync=true", timeout=5)
                if d.status_code == 200:
                    acked[key] = ({"removed"}, i)
        except requests.RequestException:
            return
        i += 1


def test_kill_minus_nine_keeps_acknowledged_writes(tmp_root):
    rng = random.Random(1234)
    srv = Server(tmp_root / "crash").start()
    try:
        r = requests.post(f"{srv.url}/_api/collection", json={"name": "crash"}, auth=ROOT, timeout=10)
        assert r.status_code == 200
        acked = {}
        started = time.time()
        for iteration in range(ITERATIONS):
            stop = threading.Event()
            threads = [
                threading.Thread(target=writer, args=(srv.url, f"it{iteration}w{w}", acked, stop))
                for w in range(WRITERS)
            ]
            for t in threads:
                t.start()
            time.sleep(rng.uniform(0.2, 1.2))
            srv.kill()
            stop.set()
            for t in threads:
                t.join(timeout=10)
            srv.start()

            session = requests.Session()
            session.auth = ROOT
            keys = list(acked.items())
            # Check everything acknowledged so far, across all previous crashes.
            for key, (states, i) in keys:
                r = session.get(f"{srv.url}/_api/document/crash/{key}", timeout=10)
                if r.status_code == 404:
                    assert "removed" in states, (iteration, key, states, r.text)
                    acked[key] = ({"removed"}, i)
                    continue
                assert r.status_code == 200, (iteration, key, states, r.text)
                doc = r.json()
                assert doc["i"] == i and doc["pad"] == "x" * (i % 200), doc
                found = "updated" if doc.get("updated") is True else "present"
                assert found in states, (iteration, key, states, doc)
                # What was found is now durable: later checks expect exactly that.
                acked[key] = ({found}, i)
            count = session.get(f"{srv.url}/_api/collection/crash/count", timeout=10).json()["count"]
            alive = sum(1 for s, _ in acked.values() if "removed" not in s)
            # Unacknowledged writes may or may not have survived; acknowledged ones must have.
            assert count >= alive
        assert len(acked) > ITERATIONS, "the writers acknowledged almost nothing"
        assert time.time() - started < 90
    finally:
        srv.stop()
