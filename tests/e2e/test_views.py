"""ArangoSearch views through the real binary: /_api/view lifecycle with python-arango and raw
HTTP, links over several collections, SEARCH with ==, PHRASE and BM25, eventual visibility and
waitForSync, restart, kill -9 while indexing, a rolled-back stream transaction, PHRASE object
tokens, OFFSET_INFO and the priority of the indexes' background threads."""
import os
import sys
import time

import pytest
import requests
from arango.exceptions import ViewCreateError, ViewGetError

from conftest import Server, unique

SEARCH_SYNC = "OPTIONS {waitForSync: true}"


def keys(db, query, **bind):
    return sorted(db.aql.execute(query, bind_vars=bind))


def test_link_rights(server, sys_db, db):
    """Creating a link, reading or changing a view's properties and dropping the view need
    read access to every collection it links, as in ArangoDB; write access to the database
    alone is not enough, and the view's name and the list of views stay readable."""
    open_coll = db.create_collection(unique("open"))
    hidden = db.create_collection(unique("hidden"))
    hidden.insert({"_key": "secret", "text": "secret words"})
    db.create_arangosearch_view(
        "vr", properties={"links": {hidden.name: {"includeAllFields": True}}})
    user = unique("u")
    sys_db.create_user(user, "pw")
    try:
        sys_db.update_permission(user, "rw", db.name)
        sys_db.update_permission(user, "rw", db.name, open_coll.name)
        sys_db.update_permission(user, "none", db.name, hidden.name)
        base = f"{server.url}/_db/{db.name}/_api/view"
        auth = (user, "pw")

        def refused(r, message=None):
            assert r.status_code == 403, r.text
            body = r.json()
            assert body["error"] is True and body["errorNum"] == 11, body
            if message:
                assert message in body["errorMessage"], body

        link_all = {"includeAllFields": True}
        refused(requests.post(base, json={"name": "vh", "type": "arangosearch",
                                          "links": {hidden.name: link_all}},
                              auth=auth, timeout=30),
                f"collection '{hidden.name}' not authorized for read access")
        refused(requests.post(base, json={"name": "vh", "type": "search-alias",
                                          "indexes": [{"collection": hidden.name,
                                                       "index": "inv"}]},
                              auth=auth, timeout=30))
        assert sorted(v["name"] for v in db.views()) == ["vr"]

        r = requests.post(base, json={"name": "vo", "type": "arangosearch",
                                      "links": {open_coll.name: link_all}},
                          auth=auth, timeout=30)
        assert r.status_code == 201, r.text
        refused(requests.patch(f"{base}/vo/properties",
                               json={"links": {hidden.name: link_all}}, auth=auth, timeout=30),
                "while validating arangosearch link definition")
        assert list(db.view("vo")["links"]) == [open_coll.name]
        r = requests.get(f"{base}/vo/properties", auth=auth, timeout=30)
        assert r.status_code == 200 and list(r.json()["links"]) == [open_coll.name]

        # The view linked to the hidden collection: named and listed, nothing more.
        assert requests.get(f"{base}/vr", auth=auth, timeout=30).status_code == 200
        r = requests.get(base, auth=auth, timeout=30)
        assert sorted(v["name"] for v in r.json()["result"]) == ["vo", "vr"]
        refused(requests.get(f"{base}/vr/properties", auth=auth, timeout=30))
        refused(requests.put(f"{base}/vr/properties", json={"links": {}}, auth=auth, timeout=30),
                "while updating arangosearch definition")
        refused(requests.delete(f"{base}/vr", auth=auth, timeout=30))
        assert list(db.view("vr")["links"]) == [hidden.name]
        r = requests.post(f"{server.url}/_db/{db.name}/_api/cursor",
                          json={"query": "FOR d IN vr SEARCH d.text == 'secret' "
                                         f"{SEARCH_SYNC} RETURN d"},
                          auth=auth, timeout=30)
        assert r.status_code == 403, r.text
        # Its removal by someone who may read the collection goes on.
        assert db.delete_view("vr")
    finally:
        sys_db.delete_user(user)


def test_view_lifecycle_with_python_arango(db):
    coll = db.create_collection(unique())
    view = db.create_arangosearch_view(
        "v1",
        properties={
            "commitIntervalMsec": 100,
            "links": {coll.name: {"fields": {"text": {"analyzers": ["text_en"]}}}},
        },
    )
    assert view["name"] == "v1"
    assert view["type"] == "arangosearch"
    assert view["commit_interval_msec"] == 100
    assert view["links"][coll.name]["fields"]["text"]["analyzers"] == ["text_en"]
    assert [v["name"] for v in db.views()] == ["v1"]
    got = db.view("v1")
    assert got["links"][coll.name]["includeAllFields"] is False

    updated = db.update_view("v1", {"consolidationIntervalMsec": 0})
    assert updated["consolidation_interval_msec"] == 0
    assert updated["commit_interval_msec"] == 100
    replaced = db.replace_view("v1", {"cleanupIntervalStep": 5})
    assert replaced["cleanup_interval_step"] == 5
    assert replaced["commit_interval_msec"] == 1000
    assert replaced["links"] == {}

    assert db.rename_view("v1", "v2")
    assert [v["name"] for v in db.views()] == ["v2"]
    with pytest.raises(ViewGetError) as err:
        db.view("v1")
    assert err.value.error_code == 1203
    with pytest.raises(ViewCreateError) as err:
        db.create_arangosearch_view("v2")
    assert err.value.error_code == 1207
    with pytest.raises(ViewCreateError) as err:
        db.create_arangosearch_view(coll.name)
    assert err.value.error_code == 1207
    assert db.delete_view("v2")
    assert db.views() == []


def test_view_errors_over_raw_http(http, sys_db):
    base = "/_db/_system/_api/view"
    r = http.post(base, json={"name": "a/b", "type": "arangosearch"})
    assert r.status_code == 400 and r.json()["errorNum"] == 1208
    r = http.post(base, json={"name": "nt", "type": "nosuch"})
    assert r.status_code == 400 and r.json()["errorNum"] == 10
    r = http.post(base, json={"name": "nl", "type": "arangosearch", "links": {"missing": {}}})
    assert r.status_code == 404 and r.json()["errorNum"] == 1203
    r = http.get(base + "/missing/properties")
    assert r.status_code == 404 and r.json()["errorNum"] == 1203
    r = http.delete(base + "/missing")
    assert r.status_code == 404 and r.json()["errorNum"] == 1203
    r = http.post(base, json={"name": "vh", "type": "arangosearch", "commitIntervalMsec": -1})
    assert r.status_code == 400 and r.json()["errorNum"] == 10
    r = http.post(base, json={"name": "vh", "type": "arangosearch"})
    assert r.status_code == 201
    assert r.json()["name"] == "vh"
    r = http.get(base + "/vh")
    assert r.status_code == 200 and r.json()["type"] == "arangosearch"
    # System collections can be linked, but `_system/_users` is no user's to read (ArangoDB's
    # fixed rule): linking it is refused, as ArangoDB refuses it, to root too.
    r = http.patch(base + "/vh/properties", json={"links": {"_users": {"includeAllFields": True}}})
    assert r.status_code == 403 and r.json()["errorNum"] == 11
    r = http.patch(base + "/vh/properties",
                   json={"links": {"_analyzers": {"includeAllFields": True}}})
    assert r.status_code == 200 and list(r.json()["links"]) == ["_analyzers"]
    r = http.delete(base + "/vh")
    assert r.status_code == 200 and r.json()["result"] is True
    r = http.post("/_api/cursor", json={"query": "FOR d IN nosuchview SEARCH d.a == 1 RETURN d"})
    assert r.status_code == 404 and r.json()["errorNum"] == 1203


def test_search_links_over_several_collections(db):
    a = db.create_collection(unique("a"))
    b = db.create_collection(unique("b"))
    a.insert_many(
        [
            {"_key": "1", "text": "The quick brown fox", "n": 1, "tags": ["x", "y"]},
            {"_key": "2", "text": "A lazy brown dog", "n": 2, "tags": ["y"]},
        ]
    )
    b.insert({"_key": "3", "text": "quick quick quick", "n": 3})
    link = {"fields": {"text": {"analyzers": ["text_en", "identity"]}, "n": {}, "tags": {}}}
    db.create_arangosearch_view("docs", properties={"links": {a.name: link, b.name: link}})
    q = f"FOR d IN docs SEARCH ANALYZER(d.text == 'quick', 'text_en') {SEARCH_SYNC} RETURN d._key"
    assert keys(db, q) == ["1", "3"]
    q = f"FOR d IN docs SEARCH PHRASE(d.text, 'brown dog', 'text_en') {SEARCH_SYNC} RETURN d._key"
    assert keys(db, q) == ["2"]
    q = f"FOR d IN docs SEARCH d.n >= 2 {SEARCH_SYNC} RETURN d._key"
    assert keys(db, q) == ["2", "3"]
    q = f"FOR d IN docs SEARCH d.tags == 'y' AND d.n IN 1..1 {SEARCH_SYNC} RETURN d._key"
    assert keys(db, q) == ["1"]
    q = f"FOR d IN docs SEARCH d.text == 'A lazy brown dog' {SEARCH_SYNC} RETURN d._key"
    assert keys(db, q) == ["2"]
    q = (
        f"FOR d IN docs SEARCH ANALYZER(d.text IN ['quick', 'fox'], 'text_en') {SEARCH_SYNC} "
        "SORT BM25(d) DESC RETURN d._key"
    )
    # BM25 as ArangoSearch computes it: the rarer "fox" outweighs "quick" three times in a
    # shorter text.
    assert list(db.aql.execute(q)) == ["1", "3"]
    q = (
        f"FOR d IN docs SEARCH ANALYZER(STARTS_WITH(d.text, 'qui'), 'text_en') "
        f"OPTIONS {{waitForSync: true, collections: ['{b.name}']}} RETURN d._key"
    )
    assert keys(db, q) == ["3"]
    # SEARCH results combine with COLLECT and subqueries like any FOR.
    q = (
        f"FOR d IN docs SEARCH EXISTS(d.n) {SEARCH_SYNC} "
        "COLLECT big = d.n > 1 WITH COUNT INTO c SORT big RETURN [big, c]"
    )
    assert list(db.aql.execute(q)) == [[False, 1], [True, 2]]
    q = (
        f"FOR x IN [1, 3] LET found = (FOR d IN docs SEARCH d.n == x {SEARCH_SYNC} RETURN d._key) "
        "RETURN found"
    )
    assert list(db.aql.execute(q)) == [["1"], ["3"]]
    cursor = db.aql.execute(
        f"FOR d IN docs SEARCH d.n >= 1 {SEARCH_SYNC} LIMIT 1 RETURN d._key", full_count=True
    )
    assert len(list(cursor)) == 1
    assert cursor.statistics()["fullCount"] == 3
    # ... and with traversals: from each found document along its edges.
    edges = db.create_collection(unique("e"), edge=True)
    edges.insert({"_from": f"{a.name}/1", "_to": f"{b.name}/3"})
    q = (
        f"FOR d IN docs SEARCH d.n == 1 {SEARCH_SYNC} "
        f"FOR v IN 1 OUTBOUND d {edges.name} RETURN [d._key, v._key]"
    )
    assert list(db.aql.execute(q)) == [["1", "3"]]
    plan = db.aql.explain("FOR d IN docs SEARCH d.n == 1 RETURN d")
    assert "EnumerateViewNode" in [n["type"] for n in plan["nodes"]]
    # Dropping a linked collection drops its link.
    db.delete_collection(b.name)
    assert list(db.view("docs")["links"]) == [a.name]


def test_eventual_visibility_and_wait_for_sync(db):
    coll = db.create_collection(unique())
    db.create_arangosearch_view(
        "slow",
        properties={"commitIntervalMsec": 60000, "links": {coll.name: {"includeAllFields": True}}},
    )
    coll.insert({"_key": "k", "v": 7})
    q = "FOR d IN slow SEARCH d.v == 7 RETURN d._key"
    # Not committed yet: the view's commit interval is a minute.
    assert list(db.aql.execute(q)) == []
    assert list(db.aql.execute(q.replace("RETURN", SEARCH_SYNC + " RETURN"))) == ["k"]
    coll.delete("k")
    assert list(db.aql.execute(q.replace("RETURN", SEARCH_SYNC + " RETURN"))) == []


def test_rolled_back_stream_transaction_leaves_no_trace(db):
    coll = db.create_collection(unique())
    db.create_arangosearch_view("tv", properties={"links": {coll.name: {"includeAllFields": True}}})
    trx = db.begin_transaction(write=[coll.name])
    trx.collection(coll.name).insert({"_key": "gone", "v": 1})
    trx.abort_transaction()
    coll.insert({"_key": "kept", "v": 1})
    q = f"FOR d IN tv SEARCH d.v == 1 {SEARCH_SYNC} RETURN d._key"
    assert list(db.aql.execute(q)) == ["kept"]


def test_every_kind_of_write_leaves_one_entry_per_document(db):
    # Inserted keys reach the index without a deletion of an earlier version; updates,
    # replaces, overwriting inserts, removals with re-inserts and a truncate must still leave
    # exactly one entry per live document (counted in the index alone, and listed).
    coll = db.create_collection(unique())
    coll.insert_many([{"_key": f"k{i}", "t": "alpha"} for i in range(10)])  # read by the build
    db.create_arangosearch_view(
        "churn", properties={"links": {coll.name: {"includeAllFields": True}}})
    coll.insert_many([{"_key": f"n{i}", "t": "alpha"} for i in range(10)])
    listed = f"FOR d IN churn SEARCH d.t == 'alpha' {SEARCH_SYNC} RETURN d._key"
    expected = {f"k{i}" for i in range(10)} | {f"n{i}" for i in range(10)}
    assert keys(db, listed) == sorted(expected)
    coll.update_many([{"_key": "k1", "t": "beta"}, {"_key": "n1", "t": "beta"}])
    coll.replace({"_key": "n2", "t": "alpha", "v": 2})
    coll.insert({"_key": "n3", "t": "alpha", "v": 3}, overwrite=True)
    coll.insert({"_key": "k3", "t": "alpha", "v": 3}, overwrite=True)
    coll.delete("n4")
    coll.delete("k4")
    coll.insert({"_key": "n4", "t": "alpha"})
    coll.insert({"_key": "k4", "t": "alpha"})
    coll.delete("n5")
    expected -= {"k1", "n1", "n5"}
    assert keys(db, listed) == sorted(expected)
    assert _search_count(db, "churn", "d.t == 'alpha'") == len(expected)
    assert _search_count(db, "churn", "d.t == 'beta'") == 2
    coll.truncate()
    coll.insert({"_key": "n0", "t": "alpha"})
    assert keys(db, listed) == ["n0"]
    assert _search_count(db, "churn", "d.t == 'alpha'") == 1


def _search_count(db, view, doc_filter):
    q = f"FOR d IN {view} SEARCH {doc_filter} {SEARCH_SYNC} COLLECT WITH COUNT INTO n RETURN n"
    return list(db.aql.execute(q))[0]


def test_view_survives_restart_and_kill(tmp_root):
    srv = Server(tmp_root / unique("views")).start()
    try:
        db = srv.client().db("_system", username="root", password="")
        coll = db.create_collection("texts")
        db.create_arangosearch_view(
            "tv", properties={"links": {"texts": {"fields": {"text": {"analyzers": ["text_en"]}}}}}
        )
        coll.insert_many([{"_key": str(i), "text": f"word{i % 10} common"} for i in range(500)])
        assert _search_count(db, "tv", "ANALYZER(d.text == 'common', 'text_en')") == 500
        srv.restart()
        db = srv.client().db("_system", username="root", password="")
        assert _search_count(db, "tv", "ANALYZER(d.text == 'common', 'text_en')") == 500
        assert _search_count(db, "tv", "ANALYZER(d.text == 'word3', 'text_en')") == 50
        # Writes in flight when the process dies: after restart the view matches its collection.
        coll = db.collection("texts")
        coll.insert_many([{"_key": f"x{i}", "text": "later common"} for i in range(300)])
        coll.delete_many([{"_key": str(i)} for i in range(100)])
        srv.kill()
        srv.start()
        db = srv.client().db("_system", username="root", password="")
        expected = db.collection("texts").count()
        assert expected == 700
        deadline = time.time() + 30
        while time.time() < deadline:
            if _search_count(db, "tv", "ANALYZER(d.text == 'common', 'text_en')") == expected:
                break
            time.sleep(0.2)
        assert _search_count(db, "tv", "ANALYZER(d.text == 'common', 'text_en')") == expected
        assert _search_count(db, "tv", "ANALYZER(d.text == 'later', 'text_en')") == 300
    finally:
        srv.stop()


def test_restart_catches_the_view_up_instead_of_rebuilding(tmp_root):
    srv = Server(tmp_root / unique("views"), extra_args=["--log.level", "views=info"]).start()
    try:
        db = srv.client().db("_system", username="root", password="")
        coll = db.create_collection("texts")
        db.create_arangosearch_view(
            "tv", properties={"links": {"texts": {"fields": {"text": {"analyzers": ["text_en"]},
                                                             "n": {}}}}}
        )
        n = 20_000
        for start in range(0, n, 5_000):
            coll.insert_many([{"_key": str(i), "text": f"word{i % 10} common t{i % 97}", "n": i}
                              for i in range(start, start + 5_000)])
        queries = [
            f"FOR d IN tv SEARCH ANALYZER(d.text == 'common', 'text_en') {SEARCH_SYNC} "
            "COLLECT WITH COUNT INTO c RETURN c",
            f"FOR d IN tv SEARCH ANALYZER(d.text == 'word3', 'text_en') {SEARCH_SYNC} "
            "SORT d._key RETURN d._key",
            f"FOR d IN tv SEARCH d.n >= 19990 {SEARCH_SYNC} SORT d.n RETURN d.n",
            f"FOR d IN tv SEARCH ANALYZER(PHRASE(d.text, 'common t5'), 'text_en') {SEARCH_SYNC} "
            "SORT BM25(d) DESC, d._key LIMIT 20 RETURN d._key",
        ]
        before = [list(db.aql.execute(q)) for q in queries]
        assert before[0] == [n]

        srv.restart()
        db = srv.client().db("_system", username="root", password="")
        assert [list(db.aql.execute(q)) for q in queries] == before
        log = "".join(srv.startup + srv.output)
        assert "view '_system/tv': caught up 0 documents (0 removed)" in log, log
        assert "rebuilt from" not in log, log

        # Writes the view may not have committed when the process is killed: the restarted
        # view catches up with them (re-feeding only what changed) and matches the collection.
        coll = db.collection("texts")
        coll.insert_many([{"_key": f"x{i}", "text": "later common", "n": -1} for i in range(300)])
        coll.delete_many([{"_key": str(i)} for i in range(100)])
        coll.update_many([{"_key": str(i), "text": "zebra"} for i in range(100, 150)])
        srv.kill()
        srv.start()
        db = srv.client().db("_system", username="root", password="")
        assert list(db.aql.execute(queries[0])) == [n + 300 - 150]
        later = f"FOR d IN tv SEARCH ANALYZER(d.text == 'later', 'text_en') {SEARCH_SYNC} " \
                "COLLECT WITH COUNT INTO c RETURN c"
        assert list(db.aql.execute(later)) == [300]
        changed = f"FOR d IN tv SEARCH ANALYZER(d.text == 'zebra', 'text_en') {SEARCH_SYNC} " \
                  "SORT d._key RETURN d._key"
        assert list(db.aql.execute(changed)) == sorted(str(i) for i in range(100, 150))
        log = "".join(srv.startup + srv.output)
        assert "view '_system/tv': caught up" in log, log
        assert "rebuilt from" not in log, log
    finally:
        srv.stop()


def test_custom_analyzers_in_links_and_in_use_needs_force(db):
    """A link may name a custom analyzer of the view's database or of _system; the view indexes
    with it, and dropping an analyzer a view uses needs force."""
    from arango.exceptions import AnalyzerDeleteError

    coll = db.create_collection(unique("csvdocs"))
    name = unique("csv")
    db.create_analyzer(name, "delimiter", {"delimiter": ","}, ["frequency", "norm", "position"])
    coll.insert_many([{"_key": "a", "tags": "red,green"}, {"_key": "b", "tags": "blue"}])
    view = unique("tagview")
    db.create_arangosearch_view(
        view, properties={"links": {coll.name: {"fields": {"tags": {"analyzers": [name]}}}}})
    q = (f"FOR d IN {view} SEARCH ANALYZER(d.tags == 'green', '{name}') {SEARCH_SYNC} "
         "RETURN d._key")
    assert list(db.aql.execute(q)) == ["a"]
    # Written after the view exists: indexed with the custom analyzer too.
    coll.insert({"_key": "c", "tags": "green,blue"})
    q = (f"FOR d IN {view} SEARCH ANALYZER(d.tags == 'blue', '{name}') {SEARCH_SYNC} "
         "SORT d._key RETURN d._key")
    assert list(db.aql.execute(q)) == ["b", "c"]
    with pytest.raises(AnalyzerDeleteError) as err:
        db.delete_analyzer(name)
    assert err.value.http_code == 409 and err.value.error_code == 1200
    db.delete_view(view)
    assert db.delete_analyzer(name)


def test_ngram_match_in_search_and_as_a_filter(db):
    """NGRAM_MATCH with a bigram analyzer: inside SEARCH through the view, and as a FILTER over
    the collection, the same documents match (longest common bigram subsequence of at least
    ceil(threshold * n) of the target's n bigrams)."""
    coll = db.create_collection(unique("ngramdocs"))
    analyzer = unique("bigram")
    db.create_analyzer(analyzer, "ngram", {"min": 2, "max": 2, "preserveOriginal": False},
                       ["frequency", "norm", "position"])
    coll.insert_many([{"_key": k, "text": t} for k, t in
                      [("a", "quick"), ("b", "quack"), ("c", "kciuq"), ("d", "quickly")]])
    view = unique("ngramview")
    db.create_arangosearch_view(
        view, properties={"links": {coll.name: {"fields": {"text": {"analyzers": [analyzer]}}}}})
    searched = keys(db, f"FOR d IN {view} SEARCH NGRAM_MATCH(d.text, 'quick', 0.7, @a) "
                    f"{SEARCH_SYNC} RETURN d._key", a=analyzer)
    # "quick": qu ui ic ck, 3 needed; "quack" shares qu, ck only; "kciuq" none in order.
    assert searched == ["a", "d"]
    filtered = keys(db, f"FOR d IN {coll.name} FILTER NGRAM_MATCH(d.text, 'quick', 0.7, @a) "
                    "RETURN d._key", a=analyzer)
    assert filtered == searched
    assert keys(db, f"FOR d IN {view} SEARCH NGRAM_MATCH(d.text, 'quick', 0.5, @a) "
                f"{SEARCH_SYNC} RETURN d._key", a=analyzer) == ["a", "b", "d"]
    db.delete_view(view)
    db.delete_analyzer(analyzer)


def test_phrase_object_tokens(db):
    """PHRASE with ArangoDB's object tokens (not analyzed) and the array form, where an array
    inside the array is a set of analyzed alternatives: the documentation's example."""
    coll = db.create_collection(unique("phrasedocs"))
    coll.insert_many([
        {"_key": "fox", "title": "The quick brown fox jumps over the lazy dog"},
        {"_key": "cat", "title": "The quick brown cat runs through the garden"},
    ])
    view = unique("phraseview")
    db.create_arangosearch_view(
        view, properties={"links": {coll.name: {"fields": {"title": {"analyzers": ["text_en"]}}}}})

    def search(condition):
        return keys(db, f"FOR d IN {view} SEARCH {condition} {SEARCH_SYNC} RETURN d._key")

    objects = ("PHRASE(d.title, {STARTS_WITH: ['qui']}, 0, {WILDCARD: ['b%o_n']}, 0, "
               "{LEVENSHTEIN_MATCH: ['foks', 2]}, 0, {TERMS: ['jump', 'run']}, 0, "
               "{IN_RANGE: ['over', 'through', true, false]}, 'text_en')")
    assert search(objects) == ["fox"]
    array = ("PHRASE(d.title, [{STARTS_WITH: 'qui'}, 0, {WILDCARD: 'b%o_n'}, 0, "
             "{LEVENSHTEIN_MATCH: ['foks', 2]}, 0, ['jumps', 'runs'], 0, "
             "{IN_RANGE: ['over', 'through', true, false]}], 'text_en')")
    assert search(array) == ["fox"]
    # Object tokens skip the analyzer: the stemmed index holds "jump", not "jumps".
    assert search("PHRASE(d.title, 'fox', 0, {TERMS: ['jumps', 'runs']}, 'text_en')") == []
    assert search("PHRASE(d.title, 'brown', 0, {TERMS: ['fox', 'cat']}, 1, 'over', "
                  "'text_en')") == ["fox"]
    assert search("PHRASE(d.title, [{TERM: 'quick'}, 1, {STARTS_WITH: 'ca'}], 'text_en')") \
        == ["cat"]
    with pytest.raises(Exception) as err:
        search("PHRASE(d.title, {NOSUCH: 'x'}, 'text_en')")
    assert err.value.error_code == 10
    db.delete_view(view)


def test_offset_info_for_search_highlighting(db):
    """OFFSET_INFO with a text analyzer that has the offset feature: the documentation's food
    example, byte offsets and lengths of terms, a phrase and a prefix, named by path."""
    analyzer = unique("text_en_offset")
    db.create_analyzer(analyzer, "text", {"locale": "en", "stopwords": []},
                       ["frequency", "norm", "position", "offset"])
    coll = db.create_collection(unique("food"))
    coll.insert_many([
        {"_key": "avocado", "description": {"en": "The avocado is a medium-sized, evergreen tree, native to the Americas."}},
        {"_key": "carrot", "description": {"en": "The carrot is a root vegetable, typically orange in color, native to Europe and Southwestern Asia."}},
        {"_key": "chili", "description": {"en": "Chili peppers are varieties of the berry-fruit of plants from the genus Capsicum, cultivated for their pungency."}},
        {"_key": "tomato", "description": {"en": "The tomato is the edible berry of the tomato plant."}},
    ])
    view = unique("food_view")
    db.create_arangosearch_view(view, properties={"links": {coll.name: {"fields": {
        "description": {"fields": {"en": {"analyzers": [analyzer]}}}}}}})
    query = f"""FOR doc IN {view} SEARCH ANALYZER(
          doc.description.en IN TOKENS('avocado tomato', @a) OR
          PHRASE(doc.description.en, 'cultivated', 2, 'pungency') OR
          STARTS_WITH(doc.description.en, 'cap'), @a) {SEARCH_SYNC}
        SORT doc._key
        FOR info IN OFFSET_INFO(doc, ['description.en'])
          RETURN [doc._key, info.name, info.offsets[* RETURN
            SUBSTRING_BYTES(VALUE(doc, info.name), CURRENT[0], CURRENT[1])], info.offsets]"""
    rows = list(db.aql.execute(query, bind_vars={"a": analyzer}))
    assert rows == [
        ["avocado", ["description", "en"], ["avocado"], [[4, 7]]],
        ["chili", ["description", "en"], ["Capsicum", "cultivated for their pungency"],
         [[72, 8], [82, 29]]],
        ["tomato", ["description", "en"], ["tomato", "tomato"], [[4, 6], [38, 6]]],
    ]
    db.delete_view(view)
    db.delete_analyzer(analyzer)


def test_minhash_analyzer_and_minhash_match(db):
    """A minhash analyzer (the documentation's minhash5) and MINHASH_MATCH in SEARCH: the
    documents sharing at least ceil(threshold * n) signature tokens with the target, as
    counted from TOKENS() over the collection."""
    analyzer = unique("minhash5")
    created = db.create_analyzer(
        analyzer, "minhash",
        {"analyzer": {"type": "segmentation", "properties": {"break": "alpha", "case": "lower"}},
         "numHashes": 5}, [])
    assert created["type"] == "minhash"
    assert created["properties"]["numHashes"] == 5
    signature = list(db.aql.execute("RETURN TOKENS('The quick brown fox jumps over the lazy dog.', @a)",
                                    bind_vars={"a": analyzer}))[0]
    assert len(signature) == 5
    coll = db.create_collection(unique("mhdocs"))
    coll.insert_many([
        {"_key": "a", "text": "The quick brown fox jumps over the lazy dog."},
        {"_key": "b", "text": "The fox jumps over the crazy dog."},
        {"_key": "c", "text": "Lorem ipsum dolor sit amet."},
    ])
    view = unique("mhview")
    db.create_arangosearch_view(
        view, properties={"links": {coll.name: {"fields": {"text": {"analyzers": [analyzer]}}}}})
    target = "the quick brown fox jumps over the lazy dog"
    for threshold in [0.2, 0.6, 1.0]:
        searched = keys(db, f"FOR d IN {view} SEARCH MINHASH_MATCH(d.text, @t, {threshold}, @a) "
                        f"{SEARCH_SYNC} RETURN d._key", t=target, a=analyzer)
        counted = keys(db, f"LET s = TOKENS(@t, @a) FOR d IN {coll.name} "
                       f"FILTER LENGTH(INTERSECTION(TOKENS(d.text, @a), s)) >= CEIL({threshold} * 5) "
                       "RETURN d._key", t=target, a=analyzer)
        assert searched == counted
        assert "a" in searched and "c" not in searched
    db.delete_view(view)
    db.delete_analyzer(analyzer)


def test_nested_search(db):
    """Nested search (the documentation's examples): a view link and an inverted index with
    `nested` fields, the question mark operator with quantifiers and nested levels, each
    against the same condition as a FILTER over the collection; the link reports `nested`."""
    coll = db.create_collection(unique("nesteddocs"))
    coll.insert_many([
        {"_key": "frame", "dimensions": [
            {"part": "frame", "comments": "Slightly damaged at the bottom right corner.",
             "measurements": [{"type": "height", "value": 47}, {"type": "width", "value": 72}]},
            {"part": "canvas",
             "measurements": [{"type": "height", "value": 35}, {"type": "width", "value": 60}]}]},
        {"_key": "small", "dimensions": [{"type": "height", "value": 35},
                                         {"type": "width", "value": 60}]},
        {"_key": "tall", "dimensions": [{"type": "height", "value": 50},
                                        {"type": "height", "value": 45},
                                        {"type": "width", "value": 10}]},
        {"_key": "none"},
    ])
    view = unique("nestedview")
    link = {"fields": {"dimensions": {"nested": {
        "type": {}, "value": {}, "part": {}, "comments": {"analyzers": ["text_en"]},
        "measurements": {"nested": {"type": {}, "value": {}}}}}}}
    created = db.create_arangosearch_view(view, properties={"links": {coll.name: link}})
    nested = created["links"][coll.name]["fields"]["dimensions"]["nested"]
    assert set(nested) == {"type", "value", "part", "comments", "measurements"}
    coll.add_index({"type": "inverted", "name": "invnest", "fields": [
        {"name": "dimensions", "nested": [
            "type", "value", "part", {"name": "comments", "analyzer": "text_en"},
            {"name": "measurements", "nested": ["type", "value"]}]}]})
    alias = unique("nestedalias")
    db.create_view(alias, "search-alias", {"indexes": [{"collection": coll.name,
                                                        "index": "invnest"}]})
    cases = [
        ('d.dimensions[? FILTER CURRENT.type == "height" AND CURRENT.value > 40]', ["tall"]),
        ('d.dimensions.type == "height"', []),
        ('d.dimensions[? 1..2 FILTER CURRENT.type == "height"]', ["small", "tall"]),
        ('d.dimensions[? AT LEAST (2) FILTER CURRENT.type == "height"]', ["tall"]),
        ('d.dimensions[? 1 FILTER CURRENT.type == "height"]', ["small"]),
        ('d.dimensions[? NONE FILTER CURRENT.type == "width"]', ["frame", "none"]),
        ('d.dimensions[? ALL FILTER CURRENT.value >= 10]', ["none", "small", "tall"]),
        ('d.dimensions[? FILTER CURRENT.part == "frame" AND '
         'CURRENT.measurements[? FILTER CURRENT.type == "width" AND CURRENT.value <= 80]]',
         ["frame"]),
        ('d.dimensions[? FILTER CURRENT.part == "canvas" AND '
         'CURRENT.measurements[? FILTER CURRENT.type == "height" AND CURRENT.value > 40]]', []),
    ]
    for cond, expected in cases:
        got = keys(db, f"FOR d IN {view} SEARCH {cond} {SEARCH_SYNC} RETURN d._key")
        assert got == expected, cond
        assert keys(db, f"FOR d IN {alias} SEARCH {cond} {SEARCH_SYNC} RETURN d._key") \
            == expected, cond
        if "d.dimensions.type" not in cond:
            assert keys(db, f"FOR d IN {coll.name} FILTER {cond} RETURN d._key") == expected
    # The analyzer of a nested attribute applies inside the operator (the documentation's query).
    damaged = ('d.dimensions[? FILTER CURRENT.part == "frame" AND ANALYZER(TOKENS("corner '
               'damage", "text_en") ALL == CURRENT.comments, "text_en") AND '
               'CURRENT.measurements[? FILTER CURRENT.type == "width" AND CURRENT.value <= 80]]')
    assert keys(db, f"FOR d IN {view} SEARCH {damaged} {SEARCH_SYNC} RETURN d._key") == ["frame"]
    db.delete_view(alias)
    db.delete_view(view)


def test_primary_sort_and_stored_values_in_the_optimizer(db):
    """A SORT the view's primarySort satisfies leaves the plan (the view node reports
    `primarySort`), attributes in primarySort/storedValues are read from the index
    (`noMaterialization`), and with SORT … LIMIT documents are read after the LIMIT (a
    MaterializeNode); each result equals the unoptimized one."""
    coll = db.create_collection(unique())
    docs = []
    for i in range(300):
        doc = {"_key": f"k{i}", "text": ["lamp", "drum lamp", "pink"][i % 3],
               "title": f"t{i % 17}"}
        if i % 7:
            doc["date"] = [None, True, i % 11, f"d{i % 5}", [i % 2]][i % 5]
        docs.append(doc)
    coll.import_bulk(docs)
    db.create_arangosearch_view(
        "sorted_view",
        properties={
            "primarySort": [{"field": "date", "direction": "desc"}],
            "storedValues": [{"fields": ["title"]}],
            "links": {coll.name: {"fields": {"text": {"analyzers": ["text_en"]}}}},
        },
    )
    search = f"SEARCH ANALYZER(d.text == 'lamp', 'text_en') {SEARCH_SYNC}"

    query = f"FOR d IN sorted_view {search} SORT d.date DESC LIMIT 5, 20 RETURN d"
    plan = db.aql.explain(query)
    types = [n["type"] for n in plan["nodes"]]
    assert "SortNode" not in types
    view_node = next(n for n in plan["nodes"] if n["type"] == "EnumerateViewNode")
    assert view_node["primarySort"] == [{"field": "date", "asc": False}]
    assert view_node["primarySortBuckets"] == 1
    assert "handle-arangosearch-views" in plan["rules"]
    assert "late-document-materialization-arangosearch" in plan["rules"]
    assert types[types.index("LimitNode") + 1] == "MaterializeNode"
    reference = (f"FOR d IN sorted_view {search} SORT NOOPT(d.date) DESC LIMIT 5, 20 "
                 "RETURN d")
    got = list(db.aql.execute(query))
    assert len(got) == 20
    assert got == list(db.aql.execute(reference))

    covered = (f"FOR d IN sorted_view {search} SORT d.date DESC "
               "RETURN {k: d._key, date: d.date, title: d.title}")
    plan = db.aql.explain(covered)
    view_node = next(n for n in plan["nodes"] if n["type"] == "EnumerateViewNode")
    assert view_node["noMaterialization"] is True
    assert "no-document-materialization-arangosearch" in plan["rules"]
    without = list(db.aql.execute(
        covered, optimizer_rules=["-no-document-materialization-arangosearch"]))
    assert list(db.aql.execute(covered)) == without
    assert len(without) == 200

    # The reversed direction is not the primary sort's: the SORT stays.
    reversed_plan = db.aql.explain(f"FOR d IN sorted_view {search} SORT d.date RETURN d")
    assert "SortNode" in [n["type"] for n in reversed_plan["nodes"]]
    db.delete_view("sorted_view")


def _thread_nice_values(pid):
    """The nice values of a process's threads by thread name (from /proc)."""
    found = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                # Field 19 is the nice value; the fields after the name's ")" start at field 3.
                nice = int(f.read().rsplit(")", 1)[1].split()[16])
        except OSError:
            continue
        found.setdefault(name, []).append(nice)
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")
def test_search_threads_run_at_the_background_priority(tmp_root):
    own = os.nice(0)
    wanted = max(own, 15)
    srv = Server(tmp_root / unique("nice"), ["--arangosearch.nice", "15"]).start()
    try:
        db = srv.client().db("_system", username="root", password="")
        coll = db.create_collection("texts")
        db.create_arangosearch_view(
            "nv", properties={"links": {"texts": {"fields": {"text": {"analyzers": ["text_en"]}}}}}
        )
        coll.insert_many([{"_key": str(i), "text": f"word{i} common"} for i in range(100)])
        # A waitForSync search commits the index: tantivy replaces its indexing threads then.
        assert _search_count(db, "nv", "ANALYZER(d.text == 'common', 'text_en')") == 100
        nices = _thread_nice_values(srv.proc.pid)
        background = {
            name: values
            for name, values in nices.items()
            if name.startswith(("quiver-view-", "thrd-tantivy", "merge_thread_", "segment_updater"))
        }
        assert any(name.startswith("quiver-view-") for name in background), nices
        assert any(name.startswith("merge_thread_") for name in background), nices
        assert all(v == wanted for values in background.values() for v in values), background
        http = [v for name, values in nices.items() if name.startswith("quiver-http") for v in values]
        assert http and all(v == own for v in http), nices
    finally:
        srv.stop()


def test_collation_analyzers_follow_the_language_in_range_queries(db):
    """ArangoDB's documented collation example: "å" sorts after "z" in Swedish and after "a"
    in English, so the letters before "c" differ; ranges follow the language too, TOKENS()
    gives one token per input, and the definition reports the locale."""
    en, sv = unique("collation_en"), unique("collation_sv")
    created = db.create_analyzer(en, "collation", {"locale": "en"}, [])
    assert created["type"] == "collation" and created["properties"] == {"locale": "en"}
    db.create_analyzer(sv, "collation", {"locale": "sv.UTF-8"}, [])
    assert db.analyzer(sv)["properties"] == {"locale": "sv"}
    coll = db.create_collection(unique("letters"))
    coll.insert_many([{"_key": k, "text": t} for k, t in
                      [("a", "a"), ("aring", "å"), ("b", "b"), ("z", "z")]])
    view = unique("collview")
    db.create_arangosearch_view(view, properties={
        "links": {coll.name: {"analyzers": [en, sv], "includeAllFields": True}}})
    query = (f"FOR d IN {view} SEARCH ANALYZER(d.text < TOKENS('c', @a)[0], @a) "
             f"{SEARCH_SYNC} RETURN d._key")
    assert keys(db, query, a=en) == ["a", "aring", "b"]
    assert keys(db, query, a=sv) == ["a", "b"]
    between = (f"FOR d IN {view} SEARCH ANALYZER(IN_RANGE(d.text, TOKENS('y', @a)[0], "
               f"TOKENS('ö', @a)[0], true, true), @a) {SEARCH_SYNC} RETURN d._key")
    # Swedish: y < z < å < ä < ö; English sorts "ö" as "o", before "y": an empty range.
    assert keys(db, between, a=sv) == ["aring", "z"]
    assert keys(db, between, a=en) == []
    # One token per input; AQL's own string order is not the key's (ArangoDB: sorting by
    # TOKENS() of a collation analyzer "doesn't produce meaningful results").
    tokens = list(db.aql.execute("RETURN [TOKENS('å', @en), TOKENS('å', @sv), TOKENS('å', @sv)]",
                                 bind_vars={"en": en, "sv": sv}))[0]
    assert [len(t) for t in tokens] == [1, 1, 1]
    assert tokens[1] == tokens[2] != tokens[0]
    db.delete_view(view)
    db.delete_analyzer(en)
    db.delete_analyzer(sv)


def test_aql_analyzers_with_number_and_bool_return_types(db, http):
    """returnType number and bool: results converted as TO_NUMBER / TO_BOOL, indexed as the
    values they are, so that a view finds them by comparing with numbers and booleans
    without ANALYZER(); TOKENS() gives one array per token; only a pipeline's last member
    may make them; keepNull turns null into 0 / false."""
    num, flag, lowered_num, keep = (unique(n) for n in ("num", "flag", "lowernum", "keep"))
    created = db.create_analyzer(num, "aql", {"queryString": "RETURN TO_NUMBER(@param)",
                                              "returnType": "number"}, [])
    assert created["properties"]["returnType"] == "number"
    assert db.analyzer(num)["properties"]["returnType"] == "number"
    db.create_analyzer(flag, "aql", {"queryString": "RETURN LOWER(@param) == 'yes'",
                                     "returnType": "bool"}, [])
    db.create_analyzer(lowered_num, "pipeline", {"pipeline": [
        {"type": "norm", "properties": {"locale": "en", "case": "lower"}},
        {"type": "aql", "properties": {"queryString": "RETURN @param == 'ten' ? 10 : @param",
                                       "returnType": "number"}}]}, [])
    db.create_analyzer(keep, "aql", {"queryString": "RETURN @param == '' ? null : @param",
                                     "returnType": "number"}, [])

    def tokens(text, analyzer):
        return list(db.aql.execute("RETURN TOKENS(@t, @a)", bind_vars={"t": text, "a": analyzer}))[0]
    twelve = tokens("12", num)
    assert len(twelve) == 1 and len(twelve[0]) == 1, twelve
    assert tokens(" 12 ", num) == twelve, "converted as TO_NUMBER: surrounding blanks allowed"
    assert tokens("TEN", lowered_num) != twelve and len(tokens("TEN", lowered_num)) == 1
    assert tokens("yes", flag) == [["1"]] and tokens("no", flag) == [["0"]]
    assert tokens("", keep) == tokens("0", num), "keepNull: null is the empty string, as 0"

    coll = db.create_collection(unique("typed"))
    coll.insert_many([{"_key": "a", "value": "12", "answer": "yes"},
                      {"_key": "b", "value": "7.5", "answer": "no"},
                      {"_key": "c", "value": "x", "answer": "YES"},
                      {"_key": "d", "value": 12, "answer": "maybe"},
                      {"_key": "e", "value": "TEN", "answer": "no"}])
    view = unique("typedview")
    db.create_arangosearch_view(view, properties={"links": {coll.name: {"fields": {
        "value": {"analyzers": [num, lowered_num, "identity"]},
        "answer": {"analyzers": [flag]}}}}})

    def search(condition):
        return keys(db, f"FOR d IN {view} SEARCH {condition} {SEARCH_SYNC} RETURN d._key")
    # "x" and "TEN" are TO_NUMBER 0 under `num` (the pipeline makes "TEN" 10); the
    # document's own number 12 is indexed as ever.
    assert search("d.value == 12") == ["a", "d"]
    assert search("d.value == 0") == ["c", "e"]
    assert search("d.value IN 5..8") == ["b"]
    assert search("d.value > 9") == ["a", "d", "e"]
    assert search("d.value == 10") == ["e"]
    assert search("d.answer == true") == ["a", "c"]
    assert search("d.answer == false") == ["b", "d", "e"]
    # The strings are still there for the string analyzer of the same field.
    assert search("d.value == 'x'") == ["c"]
    db.delete_view(view)

    base = f"/_db/{db.name}/_api/analyzer"
    typed_member = {"type": "aql", "properties": {"queryString": "RETURN 1", "returnType": "bool"}}
    for kind, props in [
            ("pipeline", {"pipeline": [typed_member, {"type": "norm", "properties": {"locale": "en"}}]}),
            ("wildcard", {"ngramSize": 3, "analyzer": typed_member}),
            ("aql", {"queryString": "RETURN 1", "returnType": "object"})]:
        r = http.post(base, json={"name": unique("bad"), "type": kind, "properties": props})
        assert (r.status_code, r.json()["errorNum"]) == (400, 10), (kind, r.text)
    for name in (num, flag, lowered_num, keep):
        db.delete_analyzer(name)


def test_aql_analyzers_as_documented(db, http):
    """ArangoDB's documented aql analyzer examples: soundex and concatenation through TOKENS(),
    a filter with keepNull false and an empty result, positions collapsed or not as PHRASE()
    sees them, and the restrictions checked when the analyzer is created."""
    soundex, concat, filt, drop_ir = (unique(n) for n in ("soundex", "concat", "filter", "dropir"))
    created = db.create_analyzer(soundex, "aql", {"queryString": "RETURN SOUNDEX(@param)"}, [])
    assert created["properties"] == {"queryString": "RETURN SOUNDEX(@param)",
                                     "collapsePositions": False, "keepNull": True,
                                     "batchSize": 1, "memoryLimit": 1048576,
                                     "returnType": "string"}
    db.create_analyzer(concat, "aql", {"queryString":
        "RETURN LOWER(LEFT(@param, 5)) == 'inter' ? CONCAT(@param, 'ism') : CONCAT('inter', @param)"}, [])
    db.create_analyzer(filt, "aql", {"keepNull": False, "queryString":
        "RETURN LOWER(LEFT(@param, 2)) == 'ir' ? null : @param"}, [])
    db.create_analyzer(drop_ir, "aql", {"queryString":
        "FILTER LOWER(LEFT(@param, 2)) != 'ir' RETURN @param"}, [])

    def tokens(text, analyzer):
        return list(db.aql.execute("RETURN TOKENS(@t, @a)", bind_vars={"t": text, "a": analyzer}))[0]
    assert tokens("ArangoDB", soundex) == ["A652"]
    assert tokens("state", concat) == ["interstate"]
    assert tokens("international", concat) == ["internationalism"]
    assert tokens("regular", filt) == ["regular"]
    assert tokens("irregular", filt) == []
    assert tokens("irregular", drop_ir) == []

    coll = db.create_collection(unique("aqlcoll"))
    coll.insert_many([{"_key": "r", "value": "regular"}, {"_key": "i", "value": "irregular"}])
    view = unique("aqlview")
    db.create_arangosearch_view(view, properties={
        "links": {coll.name: {"fields": {"value": {"analyzers": [drop_ir]}}}}})
    assert keys(db, f"FOR d IN {view} SEARCH ANALYZER(d.value IN ['regular', 'irregular'], @a) "
                    f"{SEARCH_SYNC} RETURN d._key", a=drop_ir) == ["r"]
    db.delete_view(view)

    collapsed, uncollapsed = unique("collapsed"), unique("uncollapsed")
    for name, collapse in [(collapsed, True), (uncollapsed, False)]:
        db.create_analyzer(name, "aql", {"collapsePositions": collapse,
                                         "queryString": "FOR d IN SPLIT(@param, '-') RETURN d"},
                           ["frequency", "position"])
    doc_coll = db.create_collection(unique("abcd"))
    doc_coll.insert({"_key": "x", "text": "A-B-C-D"})
    view = unique("phraseview")
    db.create_arangosearch_view(view, properties={
        "links": {doc_coll.name: {"analyzers": [collapsed, uncollapsed], "includeAllFields": True}}})

    def phrase(skip, analyzer):
        return keys(db, f"FOR d IN {view} SEARCH PHRASE(d.text, {{TERM: 'B'}}, {skip}, "
                        f"{{TERM: 'D'}}, @a) {SEARCH_SYNC} RETURN d._key", a=analyzer)
    assert phrase(1, uncollapsed) == ["x"]
    assert phrase(-1, uncollapsed) == []
    assert phrase(1, collapsed) == []
    assert phrase(-1, collapsed) == ["x"]
    db.delete_view(view)

    base = f"/_db/{db.name}/_api/analyzer"
    for query in ["FOR d IN somecollection RETURN d", "RETURN DOCUMENT('a/b')",
                  "RETURN TOKENS(@param, 'text_en')", "RETURN @other", "RETURN (",
                  "INSERT {} INTO c"]:
        r = http.post(base, json={"name": unique("bad"), "type": "aql",
                                  "properties": {"queryString": query}})
        assert (r.status_code, r.json()["errorNum"]) == (400, 10), query
    for props in [{"queryString": "RETURN 1", "batchSize": 0},
                  {"queryString": "RETURN 1", "memoryLimit": 33554433},
                  {"queryString": "RETURN 1", "returnType": "nonsense"}, {}]:
        r = http.post(base, json={"name": unique("bad"), "type": "aql", "properties": props})
        assert (r.status_code, r.json()["errorNum"]) == (400, 10), props
