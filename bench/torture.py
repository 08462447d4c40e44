"""kill -9 torture: cycles of concurrent mixed writes, SIGKILL at a random moment, restart, and
a check of the whole database against the clients' own log of what was acknowledged.

Each cycle starts the real binary on one data directory, runs several writer threads (single
inserts, updates, replaces and removes with and without waitForSync, multi-document writes,
stream transactions that commit or abort, /_api/import in the documents and array formats) and
one DDL thread (collection create/drop, index create, collection compaction), kills the server
with SIGKILL after a random delay, restarts it and checks:

- nothing acknowledged is lost: every write acknowledged with waitForSync, and every write
  acknowledged before some later waitForSync write was sent, is found (or a later state of
  the same document is found);
- nothing unacknowledged is half-applied: a stream transaction whose commit was in flight is
  found entirely or not at all, an aborted one never; a multi-document write or an import is
  checked document by document; no document or collection the clients never wrote exists;
- indexes agree with the documents: the persistent index on `v` returns exactly what a full
  scan returns, the primary index finds every scanned key, and count() equals the scan.

Acknowledged writes without waitForSync that are not covered by a later sync may be lost by
the rules above; how many of them survived anyway is reported (`unsynced_acked_lost`).

Every operation is appended to a client-side log (`--log`, JSON lines: sent, acknowledged,
failed, in flight at the kill). Exits 1 on the first cycle with a violation, printing it.

    CARGO_INCREMENTAL=0 cargo build --bin quiver
    QUIVER_BIN=target/debug/quiver .venv/bin/python bench/torture.py --cycles 1000
"""
import argparse
import itertools
import json
import pathlib
import random
import shutil
import sys
import tempfile
import threading
import time

import requests

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "e2e"))
from conftest import ROOT, Server  # noqa: E402

DOCS = "docs"
INDEX = "by_v"
TIMEOUT = 30
# Bounds of what one cycle may do, so a cycle's log and check stay small.
MAX_OPS_PER_THREAD = 400
MAX_DDL_COLLECTIONS = 6
# Writers remove documents once they own this many, so the database stays small over 1,000 cycles.
MAX_LIVE_PER_WRITER = 1500


class Version:
    """One state a document (or a DDL collection) may be in: `state` is its user attributes
    (None when absent). `acked` is the log clock at the acknowledgement, None while in flight."""

    __slots__ = ("state", "sent", "acked", "sync", "group")

    def __init__(self, state, sent, sync, group=None, acked=None):
        self.state = state
        self.sent = sent
        self.acked = acked
        self.sync = sync
        self.group = group


class Log:
    """The clients' log: a logical clock, the versions of every key, and the JSON-lines file."""

    def __init__(self, path):
        self.lock = threading.Lock()
        self.clock = itertools.count(1)
        self.docs = {}  # key -> [Version]; index 0 is the state the last check found
        self.colls = {}  # DDL collection name -> [Version]; state "present", "indexed" or None
        self.groups = {}  # transaction id -> (keys, acked or None)
        self.sync_sent = []  # log clock of each acknowledged waitForSync write at its sending
        self.owned = {}  # writer id -> its keys (a writer only ever touches its own)
        self.file = open(path, "a", buffering=1)
        self.counts = {}

    def tick(self):
        with self.lock:
            return next(self.clock)

    def write(self, **entry):
        with self.lock:
            self.file.write(json.dumps(entry) + "\n")

    def count(self, what, n=1):
        with self.lock:
            self.counts[what] = self.counts.get(what, 0) + n


def merged(state, patch):
    out = dict(state or {})
    out.update(patch)
    return out


class Writer:
    """One client thread. It owns its keys (prefix `w<id>_`), so the versions of a key form one
    chain; it stops at the first transport error (the server is gone: that request is in flight)."""

    def __init__(self, url, log, wid, rng, counter):
        self.url = url
        self.log = log
        self.wid = wid
        self.rng = rng
        self.counter = counter
        self.session = requests.Session()
        self.session.auth = ROOT

    def n(self):
        return next(self.counter)

    def current(self, key):
        return self.log.docs[key][-1].state

    def live_keys(self):
        return [k for k in self.log.owned.setdefault(self.wid, []) if self.current(k) is not None]

    def new_doc(self, kind):
        n = self.n()
        key = f"w{self.wid}_{n}"
        with self.log.lock:
            self.log.docs[key] = [Version(None, 0, True, acked=0)]
            self.log.owned.setdefault(self.wid, []).append(key)
        return key, {"n": n, "v": n, "kind": kind, "pad": "p" * (n % 97)}

    def request(self, method, path, **kw):
        kw.setdefault("timeout", TIMEOUT)
        return self.session.request(method, self.url + path, **kw)

    def begin(self, kind, keys_states, sync, group=None):
        sent = self.log.tick()
        versions = []
        for key, state in keys_states:
            v = Version(state, sent, sync, group)
            self.log.docs[key].append(v)
            versions.append(v)
        self.log.write(op=kind, phase="sent", clock=sent, sync=sync, keys=[k for k, _ in keys_states])
        return sent, versions

    def acked(self, kind, sent, versions, sync):
        clock = self.log.tick()
        for v in versions:
            v.acked = clock
        if sync:
            with self.log.lock:
                self.log.sync_sent.append(sent)
        self.log.write(op=kind, phase="acked", clock=clock, sent=sent)
        self.log.count(kind)

    def failed(self, kind, key, version, response):
        """An answered error: the write did not happen, its version goes."""
        self.log.docs[key].remove(version)
        self.log.write(op=kind, phase="failed", key=key, status=response.status_code, body=response.text[:200])
        self.log.count(kind + "_refused")

    def run(self, stop):
        try:
            for _ in range(MAX_OPS_PER_THREAD):
                if stop.is_set():
                    return
                self.step()
        except requests.RequestException as e:
            self.log.write(op="transport_error", writer=self.wid, error=str(e)[:200])

    def step(self):
        live = self.live_keys()
        choice = self.rng.random()
        sync = self.rng.random() < 0.4
        if len(live) > MAX_LIVE_PER_WRITER:
            self.single_remove(self.rng.choice(live), sync)
        elif choice < 0.3 or len(live) < 3:
            self.single_insert(sync)
        elif choice < 0.45:
            self.single_change(self.rng.choice(live), self.rng.choice(["update", "replace"]), sync)
        elif choice < 0.55:
            self.single_remove(self.rng.choice(live), sync)
        elif choice < 0.7:
            self.multi(live, sync)
        elif choice < 0.85:
            self.transaction(live, sync, commit=self.rng.random() < 0.75)
        else:
            self.import_(sync, self.rng.choice(["documents", "array"]))

    def single_insert(self, sync):
        key, state = self.new_doc("insert")
        sent, (v,) = self.begin("insert", [(key, state)], sync)
        r = self.request("POST", f"/_api/document/{DOCS}?waitForSync={str(sync).lower()}", json={"_key": key, **state})
        if r.status_code in (201, 202):
            self.acked("insert", sent, [v], sync)
        else:
            self.failed("insert", key, v, r)

    def single_change(self, key, how, sync):
        n = self.n()
        if how == "update":
            patch = {"n": n, "v": n, "u": n}
            state = merged(self.current(key), patch)
            method = "PATCH"
        else:
            patch = {"n": n, "v": n, "kind": "replace", "pad": "r" * (n % 89)}
            state = dict(patch)
            method = "PUT"
        sent, (v,) = self.begin(how, [(key, state)], sync)
        r = self.request(method, f"/_api/document/{DOCS}/{key}?waitForSync={str(sync).lower()}", json=patch)
        if r.status_code in (201, 202):
            self.acked(how, sent, [v], sync)
        else:
            self.failed(how, key, v, r)

    def single_remove(self, key, sync):
        sent, (v,) = self.begin("remove", [(key, None)], sync)
        r = self.request("DELETE", f"/_api/document/{DOCS}/{key}?waitForSync={str(sync).lower()}")
        if r.status_code in (200, 202):
            self.acked("remove", sent, [v], sync)
        else:
            self.failed("remove", key, v, r)

    def multi(self, live, sync):
        """A multi-document insert or update: each document succeeds or fails on its own."""
        if self.rng.random() < 0.5:
            docs = [self.new_doc("multi") for _ in range(self.rng.randint(2, 20))]
            body = [{"_key": k, **s} for k, s in docs]
            method = "POST"
        else:
            keys = self.rng.sample(live, min(len(live), self.rng.randint(2, 10)))
            docs, body = [], []
            for k in keys:
                n = self.n()
                patch = {"n": n, "v": n, "m": n}
                docs.append((k, merged(self.current(k), patch)))
                body.append({"_key": k, **patch})
            method = "PATCH"
        kind = "multi_" + method.lower()
        sent, versions = self.begin(kind, docs, sync)
        r = self.request(method, f"/_api/document/{DOCS}?waitForSync={str(sync).lower()}", json=body)
        if r.status_code not in (201, 202):
            for (k, _), v in zip(docs, versions):
                self.failed(kind, k, v, r)
            return
        ok = []
        for (k, _), v, item in zip(docs, versions, r.json()):
            if item.get("error"):
                self.log.docs[k].remove(v)
                self.log.count(kind + "_item_refused")
            else:
                ok.append(v)
        self.acked(kind, sent, ok, sync)

    def transaction(self, live, sync, commit):
        """A stream transaction of inserts and updates; only its commit makes versions."""
        r = self.request(
            "POST",
            "/_api/transaction/begin",
            json={"collections": {"write": [DOCS]}, "waitForSync": sync},
        )
        if r.status_code != 201:
            self.log.count("trx_begin_refused")
            return
        tid = r.json()["result"]["id"]
        headers = {"x-arango-trx-id": tid}
        writes = []
        for _ in range(self.rng.randint(2, 8)):
            if live and self.rng.random() < 0.4:
                key = self.rng.choice(live)
                if any(k == key for k, _ in writes):
                    continue
                n = self.n()
                patch = {"n": n, "v": n, "t": n}
                state = merged(self.current(key), patch)
                r = self.request("PATCH", f"/_api/document/{DOCS}/{key}", json=patch, headers=headers)
            else:
                key, state = self.new_doc("trx")
                r = self.request("POST", f"/_api/document/{DOCS}", json={"_key": key, **state}, headers=headers)
            if r.status_code not in (201, 202):
                self.log.count("trx_write_refused")
                commit = False
                break
            writes.append((key, state))
        if not commit or not writes:
            sent = self.log.tick()
            self.log.write(op="trx_abort", phase="sent", clock=sent, trx=tid, keys=[k for k, _ in writes])
            r = self.request("DELETE", f"/_api/transaction/{tid}")
            self.log.write(op="trx_abort", phase="answered", status=r.status_code, trx=tid)
            self.log.count("trx_abort")
            return
        sent, versions = self.begin("trx_commit", writes, sync, group=tid)
        with self.log.lock:
            self.log.groups[tid] = [k for k, _ in writes]
        r = self.request("PUT", f"/_api/transaction/{tid}")
        if r.status_code == 200:
            self.acked("trx_commit", sent, versions, sync)
        else:
            for (k, _), v in zip(writes, versions):
                self.failed("trx_commit", k, v, r)

    def import_(self, sync, fmt):
        docs = [self.new_doc("import") for _ in range(self.rng.randint(5, 40))]
        rows = [{"_key": k, **s} for k, s in docs]
        body = "\n".join(json.dumps(d) for d in rows) if fmt == "documents" else json.dumps(rows)
        kind = "import_" + fmt
        sent, versions = self.begin(kind, docs, sync)
        r = self.request(
            "POST",
            f"/_api/import?collection={DOCS}&type={fmt}&details=true&waitForSync={str(sync).lower()}",
            data=body,
        )
        if r.status_code == 201 and r.json().get("created") == len(rows) and r.json().get("errors") == 0:
            self.acked(kind, sent, versions, sync)
        else:
            for (k, _), v in zip(docs, versions):
                self.failed(kind, k, v, r)


class Ddl:
    """Creates and drops collections, adds an index, compacts `docs`; its collections are named
    `ddl_<cycle>_<i>` and their states are "present", "indexed" (with the index) or None."""

    def __init__(self, url, log, cycle, rng):
        self.url = url
        self.log = log
        self.cycle = cycle
        self.rng = rng
        self.session = requests.Session()
        self.session.auth = ROOT

    def request(self, method, path, **kw):
        kw.setdefault("timeout", TIMEOUT)
        return self.session.request(method, self.url + path, **kw)

    def change(self, kind, name, state, call, ok):
        sent = self.log.tick()
        v = Version(state, sent, False)
        self.log.colls[name].append(v)
        self.log.write(op=kind, phase="sent", clock=sent, collection=name)
        r = call()
        if r.status_code in ok:
            v.acked = self.log.tick()
            self.log.write(op=kind, phase="acked", clock=v.acked, collection=name)
            self.log.count(kind)
        else:
            self.log.colls[name].remove(v)
            self.log.write(op=kind, phase="failed", collection=name, status=r.status_code)
            self.log.count(kind + "_refused")

    def run(self, stop):
        try:
            for i in range(MAX_DDL_COLLECTIONS):
                if stop.is_set():
                    return
                name = f"ddl_{self.cycle}_{i}"
                self.log.colls[name] = [Version(None, 0, True, acked=0)]
                self.change("create", name, "present",
                            lambda: self.request("POST", "/_api/collection", json={"name": name}), (200,))
                if self.log.colls[name][-1].state is None or stop.is_set():
                    continue
                self.change("index", name, "indexed", lambda: self.request(
                    "POST", f"/_api/index?collection={name}",
                    json={"type": "persistent", "fields": ["x"], "name": "by_x"}), (200, 201))
                if self.rng.random() < 0.5:
                    self.change("drop", name, None,
                                lambda: self.request("DELETE", f"/_api/collection/{name}"), (200,))
                if self.rng.random() < 0.3:
                    r = self.request("PUT", f"/_api/collection/{DOCS}/compact")
                    self.log.count("compact" if r.status_code == 200 else "compact_refused")
                stop.wait(self.rng.uniform(0.0, 0.3))
        except requests.RequestException as e:
            self.log.write(op="transport_error", writer="ddl", error=str(e)[:200])


class Check:
    """Compares what the restarted server holds with the log; returns a list of violations."""

    def __init__(self, url, log):
        self.url = url
        self.log = log
        self.session = requests.Session()
        self.session.auth = ROOT
        self.problems = []
        self.unsynced_lost = 0

    def query(self, text, bind=None):
        r = self.session.post(self.url + "/_api/cursor",
                              json={"query": text, "bindVars": bind or {}, "batchSize": 5000}, timeout=120)
        assert r.status_code == 201, r.text
        body = r.json()
        out = list(body["result"])
        while body.get("hasMore"):
            r = self.session.post(self.url + f"/_api/cursor/{body['id']}", timeout=120)
            assert r.status_code == 200, r.text
            body = r.json()
            out.extend(body["result"])
        return out

    def required(self, v, last_sync_sent):
        return v.acked is not None and (v.sync or v.acked < last_sync_sent)

    def match(self, name, versions, found, last_sync_sent):
        """Index of the version equal to `found` at or after the last one that must be there."""
        floor = max(i for i, v in enumerate(versions) if i == 0 or self.required(v, last_sync_sent))
        for i in range(len(versions) - 1, floor - 1, -1):
            if versions[i].state == found:
                return i
        earlier = [i for i, v in enumerate(versions[:floor]) if v.state == found]
        what = "an acknowledged write is lost" if earlier or found is None else "a state no client wrote"
        self.problems.append(f"{name}: {what}: found {found!r}, must be at least version {floor} of "
                             f"{[(v.state, v.acked, v.sync) for v in versions]}")
        return None

    def run(self):
        log = self.log
        last_sync_sent = max(log.sync_sent, default=0)
        scanned = {d["_key"]: d for d in self.query(f"FOR d IN {DOCS} RETURN d")}
        chosen = {}
        for key, versions in log.docs.items():
            doc = scanned.get(key)
            found = None if doc is None else {k: v for k, v in doc.items() if not k.startswith("_")}
            i = self.match(key, versions, found, last_sync_sent)
            chosen[key] = i
            if i is not None:
                for v in versions[i + 1:]:
                    if v.acked is not None and not self.required(v, last_sync_sent):
                        self.unsynced_lost += 1
        for key in scanned.keys() - log.docs.keys():
            self.problems.append(f"{key}: a document no client wrote")
        for tid, keys in log.groups.items():
            applied = {k for k in keys if chosen.get(k) is not None
                       and any(v.group == tid for v in log.docs[k][1:chosen[k] + 1])}
            if applied and applied != set(keys):
                self.problems.append(f"transaction {tid} half-applied: {sorted(applied)} of {sorted(keys)}")
        count = self.session.get(self.url + f"/_api/collection/{DOCS}/count", timeout=60).json()["count"]
        if count != len(scanned):
            self.problems.append(f"count() says {count}, a full scan finds {len(scanned)}")
        by_index = self.query(
            f"FOR d IN {DOCS} OPTIONS {{indexHint: @i, forceIndexHint: true}} FILTER d.v >= 0 RETURN [d._key, d.v]",
            {"i": INDEX})
        if sorted(map(tuple, by_index)) != sorted((k, d.get("v")) for k, d in scanned.items()):
            self.problems.append(f"the index {INDEX} returns {len(by_index)} documents, a full scan {len(scanned)}")
        keys = list(scanned)
        by_key = self.query(f"FOR k IN @keys FOR d IN {DOCS} FILTER d._key == k RETURN d._key", {"keys": keys})
        if sorted(by_key) != sorted(keys):
            self.problems.append(f"the primary index finds {len(by_key)} of {len(keys)} scanned keys")
        self.check_collections(last_sync_sent)
        self.collapse(chosen, scanned)
        return self.problems

    def check_collections(self, last_sync_sent):
        r = self.session.get(self.url + "/_api/collection?excludeSystem=true", timeout=60)
        names = {c["name"] for c in r.json()["result"]}
        for name in sorted(n for n in names if n.startswith("ddl_") and n not in self.log.colls):
            self.problems.append(f"collection {name}: no client created it")
        for name, versions in self.log.colls.items():
            found = None
            if name in names:
                idx = self.session.get(self.url + f"/_api/index?collection={name}", timeout=60).json()
                found = "indexed" if any(i.get("name") == "by_x" for i in idx["indexes"]) else "present"
            i = self.match(f"collection {name}", versions, found, last_sync_sent)
            self.log.colls[name] = [Version(found, 0, True, acked=0)] if i is not None else versions

    def collapse(self, chosen, scanned):
        """What was found is what the next cycle starts from."""
        for key, i in chosen.items():
            if i is not None:
                doc = scanned.get(key)
                state = None if doc is None else {k: v for k, v in doc.items() if not k.startswith("_")}
                self.log.docs[key] = [Version(state, 0, True, acked=0)]
        for wid, keys in self.log.owned.items():
            self.log.owned[wid] = [k for k in keys if self.log.docs[k][-1].state is not None]
        for key in [k for k, vs in self.log.docs.items() if len(vs) == 1 and vs[0].state is None]:
            del self.log.docs[key]
        self.log.groups.clear()
        self.log.sync_sent.clear()


def setup(url):
    s = requests.Session()
    s.auth = ROOT
    r = s.post(url + "/_api/collection", json={"name": DOCS, "waitForSync": False}, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    r = s.post(url + f"/_api/index?collection={DOCS}",
               json={"type": "persistent", "fields": ["v"], "name": INDEX}, timeout=TIMEOUT)
    assert r.status_code in (200, 201), r.text
    # The collection and its index exist durably before the first kill.
    r = s.post(url + f"/_api/document/{DOCS}?waitForSync=true", json={"_key": "seed", "n": 0, "v": 0}, timeout=TIMEOUT)
    assert r.status_code == 201, r.text


def torture(cycles, writers, seed, data_dir, log_path, min_kill, max_kill, extra_args=(), out=print):
    """Runs `cycles` kill -9 cycles; returns a summary dict (`problems` empty when all held)."""
    rng = random.Random(seed)
    log = Log(log_path)
    log.docs["seed"] = [Version({"n": 0, "v": 0}, 0, True, acked=0)]
    counter = itertools.count(1)
    srv = Server(data_dir, extra_args=extra_args).start()
    setup(srv.url)
    started = time.time()
    summary = {"cycles": 0, "seed": seed, "problems": [], "unsynced_acked_lost": 0}
    try:
        for cycle in range(cycles):
            stop = threading.Event()
            actors = [Writer(srv.url, log, w, random.Random(rng.random()), counter) for w in range(writers)]
            actors.append(Ddl(srv.url, log, cycle, random.Random(rng.random())))
            threads = [threading.Thread(target=a.run, args=(stop,)) for a in actors]
            for t in threads:
                t.start()
            time.sleep(rng.uniform(min_kill, max_kill))
            killed_at = log.tick()
            srv.kill()
            log.write(op="kill", clock=killed_at, cycle=cycle)
            stop.set()
            for t in threads:
                t.join(timeout=TIMEOUT + 5)
                assert not t.is_alive(), "a client thread did not stop"
            in_flight = sum(1 for vs in log.docs.values() for v in vs if v.acked is None)
            srv.start()
            check = Check(srv.url, log)
            problems = check.run()
            summary["cycles"] += 1
            summary["unsynced_acked_lost"] += check.unsynced_lost
            summary["documents"] = sum(1 for vs in log.docs.values() if vs[-1].state is not None)
            log.write(op="checked", cycle=cycle, problems=problems, in_flight=in_flight)
            if problems:
                summary["problems"] = [f"cycle {cycle}: {p}" for p in problems[:20]]
                break
            if cycle % 10 == 9 or cycle == cycles - 1:
                out(f"cycle {cycle + 1}/{cycles}: {summary['documents']} documents, "
                    f"{in_flight} writes in flight at the last kill, {time.time() - started:.0f} s")
    finally:
        srv.stop()
        log.file.close()
    summary["seconds"] = round(time.time() - started, 1)
    summary["operations"] = dict(sorted(log.counts.items()))
    return summary


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cycles", type=int, default=1000)
    p.add_argument("--writers", type=int, default=4)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--min-kill", type=float, default=0.2, help="earliest kill after a cycle starts (s)")
    p.add_argument("--max-kill", type=float, default=1.5, help="latest kill after a cycle starts (s)")
    p.add_argument("--dir", help="data directory (default: a temporary one, removed at the end)")
    p.add_argument("--log", help="client-side operation log (default: ops.jsonl next to the data)")
    a = p.parse_args()
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    root = pathlib.Path(a.dir or tempfile.mkdtemp(prefix="quiver-torture-"))
    log_path = a.log or str(root / "ops.jsonl")
    root.mkdir(parents=True, exist_ok=True)
    summary = torture(a.cycles, a.writers, seed, root / "data", log_path, a.min_kill, a.max_kill)
    print(json.dumps(summary, indent=1))
    if summary["problems"]:
        print(f"data directory and log kept in {root}", file=sys.stderr)
        sys.exit(1)
    if not a.dir:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
