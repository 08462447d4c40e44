#!/usr/bin/env python3
"""Full-text search, side by side: QuiverDB's arangosearch view (text_en analyzer, AQL over
HTTP) against PostgreSQL's full-text search (a stored tsvector column with a GIN index, over
loopback TCP) and SQLite FTS5 (porter tokenizer, in process), on the same documents and the
same queries, in one run.

Corpus: the lines of the text files under /usr/share/doc (plain and gzip-compressed:
changelogs, copyright files, READMEs; HTML, images, PDFs and binary files skipped) that hold
at least three words of two or more letters, stripped, exact duplicates dropped, walked in
sorted path order; the first `--docs` of them are the documents.

Measured:
- indexing, each system by its own bulk path from a file written before the timing starts
  (the same documents): QuiverDB loads the JSON lines file with its bulk import tool (`quiver
  import --type jsonl --threads 2`, arangoimport's default of two requests in flight) into a
  collection linked to the view and waits until the view has committed them (`SEARCH …
  OPTIONS {waitForSync: true}`); PostgreSQL reads a tab-separated file with a server-side
  `COPY … FROM '<file>' WITH (FREEZE)` into a table created in the same transaction whose
  tsvector column is generated, then builds the GIN index and analyzes; FTS5 reads the same
  file and inserts into a contentless table in one transaction.
- size on disk of the index: the view's directory once the merges the load started are done
  (and the committed segments' size when it became searchable), the GIN index (and the
  tsvector column's share of the table), the FTS5 database file.
- latency per query (median of every repetition of every query of a kind): term (count of
  matches), phrase (count), prefix (count), BM25 top-10 (keys of the ten best).
- writes with and without a linked view: the same file imported by the same tool into a
  collection without a view and one linked to a view; the rate the tool sees, and the rate
  until the view has caught up.

Run with bench/search.sh (it builds the release binary and a venv with psycopg).
"""

import argparse
import glob
import gzip
import json
import os
import re
import shutil
import socket
import sqlite3
import http.client
import statistics
import subprocess
import sys
import tempfile
import time

WORD = re.compile(r"[A-Za-z]{2,}")
SKIPPED_SUFFIXES = (".html", ".htm", ".png", ".jpg", ".gif", ".svg", ".pdf", ".js", ".css",
                    ".bz2", ".xz", ".zip", ".ico", ".woff", ".ttf")

# The queries: words that are no English stop words (PostgreSQL's english configuration drops
# those, text_en keeps them) and prefixes that no stemmer shortens.
TERMS = ["license", "kernel", "memory", "python", "warranty", "network", "unicode", "timeout",
         "compression", "deprecated", "thread", "socket", "parser", "manual", "signal",
         "cache", "upstream", "security", "crash", "translation"]
PHRASES = ["free software", "bug fix", "new upstream release", "general public license",
           "memory leak", "command line", "standards version", "man page", "error message",
           "source code", "file system", "security fix", "debian policy",
           "regular expression", "thread safe", "buffer overflow", "configuration file",
           "test suite", "build system", "character set"]
PREFIXES = ["comp", "net", "secur", "conf", "unic", "thr", "mem", "deb", "inst", "lib",
            "crypt", "sock", "pyth", "kern", "tim", "mult", "auth", "grap", "xml", "ut"]
RANKED = ["memory leak", "kernel module", "security fix", "python library", "network timeout",
          "unicode string", "thread pool", "configuration file", "compression library",
          "signal handler", "license warranty", "upstream release", "crash report",
          "translation update", "socket error", "cache size", "parser bug",
          "manual page", "deprecated function", "build failure"]


def corpus(n):
    docs, seen = [], set()
    for root, dirs, files in os.walk("/usr/share/doc"):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            if os.path.islink(path) or name.endswith(SKIPPED_SUFFIXES):
                continue
            try:
                data = gzip.open(path).read() if name.endswith(".gz") else open(path, "rb").read()
            except (OSError, EOFError):
                continue
            if b"\0" in data[:4096]:
                continue
            for line in data.decode("utf-8", "replace").splitlines():
                line = line.strip()
                if len(WORD.findall(line)) >= 3 and line not in seen:
                    seen.add(line)
                    docs.append(line)
                    if len(docs) == n:
                        return docs
    return docs


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def du(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


def committed_view_bytes(views):
    """Bytes of the segments the views' last commits list (their `meta.json`), and the number
    of those segments: the index as committed, without the files of a merge in flight or of
    merged segments not yet deleted."""
    total = segments = 0
    for meta in glob.glob(f"{views}/*/*/meta.json"):
        directory = os.path.dirname(meta)
        with open(meta) as f:
            ids = [s["segment_id"].replace("-", "") for s in json.load(f)["segments"]]
        segments += len(ids)
        total += os.path.getsize(meta)
        for name in os.listdir(directory):
            if name.split(".")[0] in ids:
                total += os.path.getsize(os.path.join(directory, name))
    return total, segments


def settled_view_bytes(views, quiet=3, limit=120):
    """Waits until the views' directories stop changing (merges done and their inputs deleted:
    the same files and sizes for `quiet` looks a second apart, at most `limit` seconds) and
    returns their bytes on disk and the seconds waited."""
    def state():
        return sorted((os.path.join(root, name), os.path.getsize(os.path.join(root, name)))
                      for root, _, names in os.walk(views) for name in names)
    t0 = time.perf_counter()
    last, same = state(), 0
    while same < quiet and time.perf_counter() - t0 < limit:
        time.sleep(1)
        now = state()
        same = same + 1 if now == last else 0
        last = now
    return du(views), time.perf_counter() - t0


def cpu_seconds(pid):
    """utime + stime of process `pid` (every thread), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 of the line; fields[0] here is field 3.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def write_corpus_files(docs, directory):
    """The documents as the two bulk formats, written before any timing: JSON lines
    (`{"_key": "<i>", "text": …}`, for `quiver import`) and PostgreSQL's COPY text format
    (`<i>\\t<text>`, also read by the FTS5 load). Both readable by user postgres."""
    jsonl, tsv = f"{directory}/docs.jsonl", f"{directory}/docs.tsv"
    with open(jsonl, "w") as out:
        for i, text in enumerate(docs):
            out.write(json.dumps({"_key": str(i), "text": text}))
            out.write("\n")
    with open(tsv, "w") as out:
        for i, text in enumerate(docs):
            out.write(f"{i}\t{copy_escape(text)}\n")
    for path in (jsonl, tsv):
        os.chmod(path, 0o644)
    return jsonl, tsv


COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
COPY_UNESCAPES = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}


def copy_escape(text):
    return text.translate(COPY_ESCAPES)


def copy_unescape(text):
    if "\\" not in text:
        return text
    return re.sub(r"\\(.)", lambda m: COPY_UNESCAPES[m.group(1)], text)


def read_tsv(path):
    """(id, text) of each line of a COPY text file written by `write_corpus_files`."""
    with open(path) as f:
        for line in f:
            i, text = line.rstrip("\n").split("\t", 1)
            yield int(i), copy_unescape(text)


class Quiver:
    def __init__(self, binary, data_dir, port=0):
        self.binary = binary
        self.data_dir = data_dir
        self.port = port or free_port()
        self.conn = None
        self.proc = subprocess.Popen(
            [binary, "serve", "--server.endpoint", f"tcp://127.0.0.1:{self.port}",
             "--database.directory", data_dir, "--server.authentication", "false",
             "--log.level", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                self.call("GET", "/_api/version")
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("quiver did not start")

    def call(self, method, path, body=None, raw=None):
        """One request on a kept-alive connection (as the drivers keep theirs, and as the
        PostgreSQL side keeps its libpq connection); a dropped connection is opened again once."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=3600)
            try:
                self.conn.request(method, path, body=data,
                                  headers={"content-type": "application/json"})
                resp = self.conn.getresponse()
                payload = resp.read()
                break
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt == 1:
                    raise
        if resp.status >= 400:
            raise RuntimeError(f"{method} {path}: {resp.status} {payload[:300]!r}")
        return json.loads(payload or b"null")

    def query(self, aql, bind=None):
        res = self.call("POST", "/_api/cursor", {"query": aql, "bindVars": bind or {},
                                                 "batchSize": 1000})
        if res.get("hasMore"):
            raise RuntimeError(f"more than one batch: {aql}")
        return res["result"]

    def cpu_seconds(self):
        return cpu_seconds(self.proc.pid)

    def import_file(self, collection, path, threads):
        """`quiver import` of a JSON lines file (the binary under test is also the tool), with
        its default request size (8 MiB, as arangoimport's) and `threads` requests in flight."""
        out = subprocess.run(
            [self.binary, "import", "--server.endpoint", f"tcp://127.0.0.1:{self.port}",
             "--server.authentication", "false", "--file", path, "--type", "jsonl",
             "--collection", collection, "--threads", str(threads), "--progress", "false"],
            capture_output=True, text=True)
        created = re.search(r"created: (\d+)", out.stderr + out.stdout)
        errors = re.search(r"warnings/errors: (\d+)", out.stderr + out.stdout)
        if out.returncode != 0 or not created or not errors or errors.group(1) != "0":
            raise RuntimeError(f"quiver import: {out.returncode} {out.stderr[-500:]!r}")
        return int(created.group(1))

    def import_docs(self, collection, docs, batch):
        for start in range(0, len(docs), batch):
            lines = "\n".join(json.dumps({"_key": str(i), "text": docs[i]})
                              for i in range(start, min(len(docs), start + batch)))
            res = self.call("POST", f"/_api/import?collection={collection}&type=documents",
                            raw=lines.encode())
            if res.get("errors"):
                raise RuntimeError(f"import: {res}")

    def insert_docs(self, collection, docs, batch):
        for start in range(0, len(docs), batch):
            body = [{"_key": str(i), "text": docs[i]}
                    for i in range(start, min(len(docs), start + batch))]
            res = self.call("POST", f"/_api/document?collection={collection}&silent=true",
                            body)
            if res:
                raise RuntimeError(f"insert: {str(res)[:300]}")

    def wait_view(self, view):
        # A waitForSync search gives up after a minute (error 4) while the indexer still works
        # through a large backlog: ask again, for at most an hour.
        for _ in range(60):
            try:
                return self.count_view(view)
            except RuntimeError as err:
                if "timed out waiting for the view" not in str(err):
                    raise
        raise RuntimeError(f"view {view} did not catch up within an hour")

    def count_view(self, view):
        return self.query(f"FOR d IN {view} SEARCH EXISTS(d.text) OPTIONS {{waitForSync: true}} "
                          "COLLECT WITH COUNT INTO n RETURN n")[0]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=120)


VIEW_LINK = {"fields": {"text": {"analyzers": ["text_en"]}}}

QUIVER_QUERIES = {
    "term": ("FOR d IN v SEARCH ANALYZER(d.text IN TOKENS(@q, 'text_en'), 'text_en') "
             "COLLECT WITH COUNT INTO n RETURN n"),
    "phrase": "FOR d IN v SEARCH PHRASE(d.text, @q, 'text_en') COLLECT WITH COUNT INTO n RETURN n",
    "prefix": ("FOR d IN v SEARCH ANALYZER(STARTS_WITH(d.text, @q), 'text_en') "
               "COLLECT WITH COUNT INTO n RETURN n"),
    "bm25": ("FOR d IN v SEARCH ANALYZER(d.text IN TOKENS(@q, 'text_en'), 'text_en') "
             "SORT BM25(d) DESC LIMIT 10 RETURN d._key"),
    # The first ten matches, unranked: what an application that lists hits page by page asks.
    "term top 10": ("FOR d IN v SEARCH ANALYZER(d.text IN TOKENS(@q, 'text_en'), 'text_en') "
                    "LIMIT 10 RETURN d._key"),
    "phrase top 10": "FOR d IN v SEARCH PHRASE(d.text, @q, 'text_en') LIMIT 10 RETURN d._key",
    "prefix top 10": ("FOR d IN v SEARCH ANALYZER(STARTS_WITH(d.text, @q), 'text_en') "
                      "LIMIT 10 RETURN d._key"),
}

PG_QUERIES = {
    "term": "SELECT count(*) FROM docs WHERE tsv @@ plainto_tsquery('english', %s)",
    "phrase": "SELECT count(*) FROM docs WHERE tsv @@ phraseto_tsquery('english', %s)",
    # The tsvector holds stemmed lexemes; the prefix is matched against them as written, as
    # STARTS_WITH and FTS5 do.
    "prefix": "SELECT count(*) FROM docs WHERE tsv @@ to_tsquery('simple', %s || ':*')",
    "bm25": ("SELECT id FROM docs, to_tsquery('english', %s) q WHERE tsv @@ q "
             "ORDER BY ts_rank(tsv, q) DESC LIMIT 10"),
    "term top 10": "SELECT id FROM docs WHERE tsv @@ plainto_tsquery('english', %s) LIMIT 10",
    "phrase top 10": "SELECT id FROM docs WHERE tsv @@ phraseto_tsquery('english', %s) LIMIT 10",
    "prefix top 10": "SELECT id FROM docs WHERE tsv @@ to_tsquery('simple', %s || ':*') LIMIT 10",
}

FTS_QUERIES = {
    "term": "SELECT count(*) FROM t WHERE t MATCH ?",
    "phrase": "SELECT count(*) FROM t WHERE t MATCH ?",
    "prefix": "SELECT count(*) FROM t WHERE t MATCH ?",
    "bm25": "SELECT rowid FROM t WHERE t MATCH ? ORDER BY rank LIMIT 10",
    "term top 10": "SELECT rowid FROM t WHERE t MATCH ? LIMIT 10",
    "phrase top 10": "SELECT rowid FROM t WHERE t MATCH ? LIMIT 10",
    "prefix top 10": "SELECT rowid FROM t WHERE t MATCH ? LIMIT 10",
}


def fts_argument(kind, q):
    kind = kind.removesuffix(" top 10")
    if kind == "prefix":
        return q + "*"
    if kind == "bm25":
        return " OR ".join(f'"{w}"' for w in q.split())
    return f'"{q}"'


def pg_argument(kind, q):
    kind = kind.removesuffix(" top 10")
    return " | ".join(q.split()) if kind == "bm25" else q


class Postgres:
    def __init__(self, shared_buffers_mib, mem_mib, port=0):
        self.pg_bin = sorted((os.path.join("/usr/lib/postgresql", v, "bin")
                              for v in os.listdir("/usr/lib/postgresql")),
                             key=lambda p: int(p.split("/")[-2]))[-1]
        self.dir = tempfile.mkdtemp(prefix="search-bench-pg.")
        shutil.chown(self.dir, "postgres")
        self.port = port or free_port()
        as_pg = ["runuser", "-u", "postgres", "--"]
        self.as_pg = as_pg
        subprocess.run(as_pg + [f"{self.pg_bin}/initdb", "-D", f"{self.dir}/data", "-U",
                                "postgres", "-A", "trust"], check=True,
                       stdout=subprocess.DEVNULL)
        # Production sizing for this machine: a quarter of memory as shared buffers, room for
        # the GIN build in maintenance_work_mem (2 GB: the build of a million lines' GIN
        # index stays in memory, as a tuned bulk load would have it), WAL room for the load.
        with open(f"{self.dir}/data/postgresql.conf", "a") as conf:
            conf.write(f"""
listen_addresses = '127.0.0.1'
port = {self.port}
unix_socket_directories = '{self.dir}'
shared_buffers = {shared_buffers_mib}MB
effective_cache_size = {mem_mib // 2}MB
work_mem = 64MB
maintenance_work_mem = 2GB
max_wal_size = 8GB
checkpoint_timeout = 30min
max_parallel_workers_per_gather = 2
""")
        subprocess.run(as_pg + [f"{self.pg_bin}/pg_ctl", "-D", f"{self.dir}/data", "-l",
                                f"{self.dir}/server.log", "-w", "start"], check=True,
                       stdout=subprocess.DEVNULL)
        import psycopg  # only this comparison needs it (bench/view_restart.py imports this file)

        self.conn = psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres",
                                    autocommit=True)

    def load(self, tsv_path):
        """PostgreSQL's fastest bulk path: the table created and filled by a server-side COPY
        of the file in one transaction (FREEZE: the rows are written frozen, no later vacuum
        pass rewrites them), then the GIN index built over the loaded table, then ANALYZE.
        Returns the seconds of the three steps."""
        cur = self.conn.cursor()
        steps = []
        t = time.perf_counter()
        with self.conn.transaction():
            cur.execute("CREATE TABLE docs (id integer PRIMARY KEY, body text NOT NULL, "
                        "tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) "
                        "STORED)")
            cur.execute(f"COPY docs (id, body) FROM '{tsv_path}' WITH (FREEZE)")
        steps.append(time.perf_counter() - t)
        t = time.perf_counter()
        cur.execute("CREATE INDEX docs_tsv ON docs USING gin (tsv)")
        steps.append(time.perf_counter() - t)
        t = time.perf_counter()
        cur.execute("ANALYZE docs")
        steps.append(time.perf_counter() - t)
        return steps

    def sizes(self):
        cur = self.conn.cursor()
        cur.execute("SELECT pg_relation_size('docs_tsv'), pg_table_size('docs'), "
                    "(SELECT sum(pg_column_size(tsv)) FROM docs)")
        gin, table, tsv = cur.fetchone()
        return int(gin), int(table), int(tsv)

    def stop(self):
        self.conn.close()
        subprocess.run(self.as_pg + [f"{self.pg_bin}/pg_ctl", "-D", f"{self.dir}/data", "-m",
                                     "fast", "-w", "stop"], stdout=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)


def timed(f):
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5, help="timed runs of each query")
    ap.add_argument("--import-threads", type=int, default=2,
                    help="requests in flight of `quiver import` (arangoimport's default: 2)")
    ap.add_argument("--port", type=int, default=0,
                    help="QuiverDB's port (PostgreSQL's is the next one); default: any free port")
    ap.add_argument("--skip-writes", action="store_true",
                    help="leave out the with/without view write comparisons")
    ap.add_argument("--small-batch", type=int, default=100,
                    help="documents per request of the small-batch write comparison")
    ap.add_argument("--small-docs", type=int, default=50_000,
                    help="documents written in the small-batch write comparison")
    args = ap.parse_args()

    t0 = time.perf_counter()
    docs = corpus(args.docs)
    chars = sum(map(len, docs))
    print(f"# corpus: {len(docs):,} lines of /usr/share/doc, {chars / len(docs):.0f} characters "
          f"on average, {chars / 2**20:.0f} MiB ({time.perf_counter() - t0:.0f} s to read)",
          flush=True)
    if len(docs) < args.docs:
        print(f"# only {len(docs):,} distinct lines found", flush=True)
    mem_mib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    load = lambda: " ".join(open("/proc/loadavg").read().split()[:3])
    results = {"docs": len(docs)}

    tmp = tempfile.mkdtemp(prefix="search-bench-")
    os.chmod(tmp, 0o755)  # PostgreSQL (user postgres) reads the COPY file from here
    t0 = time.perf_counter()
    jsonl, tsv = write_corpus_files(docs, tmp)
    print(f"# files: {jsonl} ({os.path.getsize(jsonl) / 2**20:.0f} MiB), {tsv} "
          f"({os.path.getsize(tsv) / 2**20:.0f} MiB), {time.perf_counter() - t0:.0f} s to write "
          "(before any timing)", flush=True)
    quiver = pg = fts = None
    try:
        # QuiverDB: writes without a view, then the indexed collection, both by `quiver import`.
        quiver = Quiver(args.binary, f"{tmp}/quiver", args.port)
        threads = args.import_threads
        if not args.skip_writes:
            quiver.call("POST", "/_api/collection", {"name": "plain"})
            print(f"# quiver: import without a view (load average {load()})", flush=True)
            c0 = quiver.cpu_seconds()
            results["plain_import_s"], _ = timed(lambda: quiver.import_file("plain", jsonl, threads))
            results["plain_import_cpu_s"] = quiver.cpu_seconds() - c0
            quiver.call("DELETE", "/_api/collection/plain")
        quiver.call("POST", "/_api/collection", {"name": "docs"})
        quiver.call("POST", "/_api/view", {"name": "v", "type": "arangosearch",
                                           "links": {"docs": VIEW_LINK}})
        print(f"# quiver: import into the linked collection (load average {load()})", flush=True)
        c0 = quiver.cpu_seconds()
        results["quiver_import_s"], created = timed(
            lambda: quiver.import_file("docs", jsonl, threads))
        if created != len(docs):
            raise RuntimeError(f"quiver import created {created} documents, not {len(docs)}")
        results["quiver_sync_s"], indexed = timed(lambda: quiver.wait_view("v"))
        results["quiver_index_cpu_s"] = quiver.cpu_seconds() - c0
        if indexed != len(docs):
            raise RuntimeError(f"the view holds {indexed} documents, not {len(docs)}")
        results["quiver_index_s"] = results["quiver_import_s"] + results["quiver_sync_s"]
        # The size once the merges a load starts have finished: a look a moment after the
        # index became searchable can find a merged segment written beside its inputs
        # (until 2026-11-28 this was `du` 2 s after searchable, which read 70-76 MiB for
        # an index of 40 MiB).
        results["quiver_searchable_bytes"], results["quiver_searchable_segments"] = \
            committed_view_bytes(f"{tmp}/quiver/views")
        c0 = quiver.cpu_seconds()
        results["quiver_bytes"], results["quiver_merge_wait_s"] = \
            settled_view_bytes(f"{tmp}/quiver/views")
        results["quiver_merge_cpu_s"] = quiver.cpu_seconds() - c0
        results["quiver_segments"] = committed_view_bytes(f"{tmp}/quiver/views")[1]
        if not args.skip_writes:
            # Small batches through the document API, again without and with a view.
            small = docs[:args.small_docs]
            print(f"# quiver: {args.small_batch}-document writes without and with a view "
                  f"(load average {load()})", flush=True)
            quiver.call("POST", "/_api/collection", {"name": "plain_small"})
            results["small_plain_s"], _ = timed(
                lambda: quiver.insert_docs("plain_small", small, args.small_batch))
            quiver.call("POST", "/_api/collection", {"name": "linked_small"})
            quiver.call("POST", "/_api/view", {"name": "w", "type": "arangosearch",
                                               "links": {"linked_small": VIEW_LINK}})
            results["small_linked_s"], _ = timed(
                lambda: quiver.insert_docs("linked_small", small, args.small_batch))
            results["small_sync_s"], indexed = timed(lambda: quiver.wait_view("w"))
            if indexed != len(small):
                raise RuntimeError(f"view w holds {indexed} documents, not {len(small)}")
            results["small_docs"] = len(small)
            for path in ("/_api/view/w", "/_api/collection/linked_small",
                         "/_api/collection/plain_small"):
                quiver.call("DELETE", path)

        # PostgreSQL.
        print(f"# postgresql: COPY + GIN (load average {load()})", flush=True)
        pg = Postgres(mem_mib // 4, mem_mib, args.port + 1 if args.port else 0)
        results["pg_index_s"], steps = timed(lambda: pg.load(tsv))
        results["pg_copy_s"], results["pg_gin_s"], results["pg_analyze_s"] = steps
        results["pg_gin_bytes"], results["pg_table_bytes"], results["pg_tsv_bytes"] = pg.sizes()

        # SQLite FTS5, contentless (the file is the index and the document sizes).
        print(f"# fts5: insert (load average {load()})", flush=True)
        fts = sqlite3.connect(f"{tmp}/fts.db")
        fts.execute("PRAGMA journal_mode=WAL")
        fts.execute("CREATE VIRTUAL TABLE t USING fts5(body, content='', "
                    "tokenize='porter unicode61')")

        def fts_load():
            with fts:
                fts.executemany("INSERT INTO t (rowid, body) VALUES (?, ?)", read_tsv(tsv))
            fts.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        results["fts_index_s"], _ = timed(fts_load)
        results["fts_bytes"] = os.path.getsize(f"{tmp}/fts.db")

        # Queries, interleaved: each query on the three systems before the next.
        print(f"# queries, {args.repeat} runs each after one warm-up (load average {load()})",
              flush=True)
        base = []
        for _ in range(50):
            t = time.perf_counter()
            quiver.query("RETURN @q", {"q": "x"})
            base.append(time.perf_counter() - t)
        results["quiver_round_trip_ms"] = statistics.median(base) * 1e3
        base = []
        cur = pg.conn.cursor()
        for _ in range(50):
            t = time.perf_counter()
            cur.execute("SELECT %s", ("x",))
            cur.fetchall()
            base.append(time.perf_counter() - t)
        results["pg_round_trip_ms"] = statistics.median(base) * 1e3

        kinds = {"term": TERMS, "phrase": PHRASES, "prefix": PREFIXES, "bm25": RANKED,
                 "term top 10": TERMS, "phrase top 10": PHRASES, "prefix top 10": PREFIXES}
        lat = {k: {"quiver": [], "pg": [], "fts": []} for k in kinds}
        counts = {k: {"quiver": 0, "pg": 0, "fts": 0} for k in kinds}
        overlap = []
        for kind, queries in kinds.items():
            for q in queries:
                runs = {
                    "quiver": lambda: quiver.query(QUIVER_QUERIES[kind], {"q": q}),
                    "pg": lambda: (cur.execute(PG_QUERIES[kind], (pg_argument(kind, q),)),
                                   cur.fetchall())[1],
                    "fts": lambda: fts.execute(FTS_QUERIES[kind],
                                               (fts_argument(kind, q),)).fetchall(),
                }
                answers = {}
                for system, run in runs.items():
                    answers[system] = run()
                for _ in range(args.repeat):
                    for system, run in runs.items():
                        t = time.perf_counter()
                        run()
                        lat[kind][system].append(time.perf_counter() - t)
                if kind == "bm25":
                    quiver_top = {int(k) for k in answers["quiver"]}
                    for system in ("pg", "fts"):
                        counts[kind][system] += len(answers[system])
                    counts[kind]["quiver"] += len(quiver_top)
                    overlap.append(len(quiver_top & {r[0] for r in answers["fts"]}))
                elif kind.endswith("top 10"):
                    for system in ("quiver", "pg", "fts"):
                        counts[kind][system] += len(answers[system])
                else:
                    counts[kind]["quiver"] += answers["quiver"][0]
                    counts[kind]["pg"] += answers["pg"][0][0]
                    counts[kind]["fts"] += answers["fts"][0][0]
        results["latency_ms"] = {k: {s: statistics.median(v) * 1e3 for s, v in by.items()}
                                 for k, by in lat.items()}
        results["matches"] = counts
        results["bm25_top10_overlap_with_fts5"] = sum(overlap) / (10 * len(overlap))
        results["load_average_end"] = load()
    finally:
        for system in (quiver, pg):
            if system is not None:
                system.stop()
        if fts is not None:
            fts.close()
        shutil.rmtree(tmp, ignore_errors=True)

    report(results, args)


def report(r, args):
    n = r["docs"]
    mib = lambda b: f"{b / 2**20:.0f} MiB"
    print()
    print(json.dumps(r))
    print()
    print(f"{n:,} documents; load average at the end {r['load_average_end']}")
    print()
    print("| indexing | QuiverDB | PostgreSQL | SQLite FTS5 | QuiverDB / PostgreSQL |")
    print("|---|---|---|---|---|")
    q, p, f = r["quiver_index_s"], r["pg_index_s"], r["fts_index_s"]
    print(f"| seconds to searchable | {q:.1f} | {p:.1f} | {f:.1f} | |")
    print(f"| documents/s | {n / q:,.0f} | {n / p:,.0f} | {n / f:,.0f} | **{p / q:.2f}×** |")
    print(f"| index on disk | {mib(r['quiver_bytes'])} after merges "
          f"({mib(r['quiver_searchable_bytes'])} at searchable) | {mib(r['pg_gin_bytes'])} GIN "
          f"(+ {mib(r['pg_tsv_bytes'])} tsvector column) | {mib(r['fts_bytes'])} | |")
    print()
    print(f"QuiverDB: `quiver import` {r['quiver_import_s']:.1f} s, then the view "
          f"{r['quiver_sync_s']:.1f} s more; server CPU {r['quiver_index_cpu_s']:.1f} s, then "
          f"{r['quiver_merge_cpu_s']:.1f} s more until the merges were done "
          f"({r['quiver_searchable_segments']} segments at searchable, "
          f"{r['quiver_segments']} after). "
          f"PostgreSQL: COPY {r['pg_copy_s']:.1f} s, GIN {r['pg_gin_s']:.1f} s, "
          f"ANALYZE {r['pg_analyze_s']:.1f} s.")
    print()
    print(f"Round trip without a search: QuiverDB (HTTP + AQL) {r['quiver_round_trip_ms']:.2f} ms, "
          f"PostgreSQL (libpq) {r['pg_round_trip_ms']:.2f} ms, FTS5 in process.")
    print()
    print("| query (median ms) | QuiverDB | PostgreSQL | SQLite FTS5 | PostgreSQL / QuiverDB "
          "| matches Q / PG / FTS5 |")
    print("|---|---|---|---|---|---|")
    for kind, by in r["latency_ms"].items():
        c = r["matches"][kind]
        print(f"| {kind} | {by['quiver']:.2f} | {by['pg']:.2f} | {by['fts']:.2f} | "
              f"**{by['pg'] / by['quiver']:.2f}×** | {c['quiver']:,} / {c['pg']:,} / {c['fts']:,} |")
    print(f"\nBM25 top-10 overlap QuiverDB/FTS5: {r['bm25_top10_overlap_with_fts5']:.2f}")
    if "plain_import_s" in r:
        plain, linked, synced = r["plain_import_s"], r["quiver_import_s"], r["quiver_index_s"]
        print()
        print(f"| writes (`quiver import`, {args.import_threads} requests in flight) | seconds "
              "| documents/s | / without a view |")
        print("|---|---|---|---|")
        print(f"| without a view | {plain:.1f} | {n / plain:,.0f} | 100 % |")
        print(f"| with a linked view (acknowledged) | {linked:.1f} | {n / linked:,.0f} | "
              f"**{100 * plain / linked:.0f} %** |")
        print(f"| with a linked view (searchable) | {synced:.1f} | {n / synced:,.0f} | "
              f"{100 * plain / synced:.0f} % |")
    if "small_plain_s" in r:
        m = r["small_docs"]
        plain, linked = r["small_plain_s"], r["small_linked_s"]
        synced = linked + r["small_sync_s"]
        print()
        print(f"| writes ({args.small_batch} documents per POST /_api/document, {m:,} documents) "
              "| seconds | documents/s | / without a view |")
        print("|---|---|---|---|")
        print(f"| without a view | {plain:.1f} | {m / plain:,.0f} | 100 % |")
        print(f"| with a linked view (acknowledged) | {linked:.1f} | {m / linked:,.0f} | "
              f"**{100 * plain / linked:.0f} %** |")
        print(f"| with a linked view (searchable) | {synced:.1f} | {m / synced:,.0f} | "
              f"{100 * plain / synced:.0f} % |")


if __name__ == "__main__":
    sys.exit(main())
