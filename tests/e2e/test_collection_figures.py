"""Collection figures carry the types ArangoDB sends: numbers stay numbers."""


def test_collection_figures_send_last_tick_as_a_number(db, http):
    coll = db.create_collection("figures")
    coll.insert({"_key": "a"})
    reply = http.get(f"/_db/{db.name}/_api/collection/figures/figures")
    assert reply.status_code == 200, reply.text
    last_tick = reply.json()["figures"]["lastTick"]
    assert isinstance(last_tick, int) and not isinstance(last_tick, bool), last_tick
