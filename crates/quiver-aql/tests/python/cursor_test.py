"""Cursor API through the real binary with python-arango (unchanged driver).

Run against a started server:  QUIVER_URL=http://127.0.0.1:8529 python3 cursor_test.py
Exits non-zero on the first failed check. Needs `pip install python-arango`.
"""
import os
import sys
import time

from arango import ArangoClient
from arango.exceptions import AQLQueryExecuteError, CursorNextError

URL = os.environ.get("QUIVER_URL", "http://127.0.0.1:8529")
db = ArangoClient(hosts=URL).db("_system", username=os.environ.get("QUIVER_USER", "root"),
                                password=os.environ.get("QUIVER_PASSWORD", ""))
NAME = "py_cursor_test"
if db.has_collection(NAME):
    db.delete_collection(NAME)
col = db.create_collection(NAME)
col.insert_many([{"_key": str(i), "v": i} for i in range(2500)])


def check(name, condition, detail=""):
    if not condition:
        print(f"FAIL {name}: {detail}")
        sys.exit(1)
    print(f"ok   {name}")


cur = db.aql.execute(f"FOR d IN {NAME} SORT d.v RETURN d.v", batch_size=1000, count=True)
check("count", cur.count() == 2500, cur.count())
check("multi-batch results", list(cur) == list(range(2500)))

cur = db.aql.execute(f"FOR d IN {NAME} SORT d.v LIMIT 10, 5 RETURN d.v", full_count=True)
stats = cur.statistics()
check("fullCount results", list(cur) == [10, 11, 12, 13, 14])
check("fullCount", stats.get("fullCount", stats.get("full_count")) == 2500, stats)

cur = db.aql.execute(f"FOR d IN {NAME} RETURN d._key", batch_size=100, stream=True)
check("stream", sum(1 for _ in cur) == 2500)

cur = db.aql.execute("FOR i IN 1..300 RETURN i", batch_size=100)
next(cur)
cur.close()
try:
    cur.fetch()
    check("deleted cursor is gone", False, "fetch succeeded")
except CursorNextError as e:
    check("deleted cursor is gone", e.error_code == 1600, e.error_code)

cur = db.aql.execute("FOR i IN 1..300 RETURN i", batch_size=100, ttl=1)
time.sleep(2.5)
try:
    cur.fetch()
    check("expired cursor is gone", False, "fetch succeeded")
except CursorNextError as e:
    check("expired cursor is gone", e.error_code == 1600, e.error_code)

cur = db.aql.execute(
    f"FOR d IN {NAME} FILTER d.v < 3 UPDATE d WITH {{w: d.v * 2}} IN {NAME} RETURN {{old: OLD.w, new: NEW.w}}")
res = sorted(cur, key=lambda r: r["new"])
check("NEW/OLD", res == [{"old": None, "new": 0}, {"old": None, "new": 2}, {"old": None, "new": 4}], res)
check("writesExecuted", cur.statistics()["modified"] == 3, cur.statistics())

cur = db.aql.execute(f"INSERT {{_key: 'x', a: 1}} INTO {NAME} RETURN NEW")
check("insert RETURN NEW", list(cur)[0]["a"] == 1)

try:
    db.aql.execute(f"FOR d IN {NAME} RETURN")
    check("parse error", False, "no error")
except AQLQueryExecuteError as e:
    check("parse error", e.error_code == 1501 and "position" in e.error_message, e.error_message)

cur = db.aql.execute("RETURN 1/0")
check("warning", list(cur) == [None] and cur.warnings()[0]["code"] == 1562, cur.warnings())

cur = db.aql.execute("FOR i IN 1..10 RETURN i", batch_size=3, allow_retry=True)
check("allowRetry", list(cur) == list(range(1, 11)))

plan = db.aql.explain(f"FOR d IN {NAME} FILTER d._key == '5' RETURN d")
check("explain primary lookup", plan["nodes"][1]["type"] == "IndexNode", plan["nodes"])

db.delete_collection(NAME)
print("all cursor checks passed")
