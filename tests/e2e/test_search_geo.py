"""Geo functions in SEARCH through python-arango against the real binary: geojson and
geopoint analyzers, a view linking them, GEO_DISTANCE / GEO_IN_RANGE / GEO_CONTAINS /
GEO_INTERSECTS with ANALYZER(), the same answers as FILTER, and the error without a geo
analyzer."""
import pytest
from arango.exceptions import AQLQueryExecuteError

from conftest import unique

SYNC = "OPTIONS {waitForSync: true}"

CITIES = {
    "berlin": (52.5163, 13.3777),
    "cologne": (50.9322, 6.94),
    "paris": (48.8566, 2.3522),
    "nyc": (40.78, -73.97),
    "suva": (-18.1416, 178.4419),
    "apia": (-13.8333, -171.7667),
}


def keys(db, query, **bind):
    return sorted(db.aql.execute(query, bind_vars=bind))


def test_geo_search_with_geojson_and_geopoint_analyzers(db):
    assert db.create_analyzer("geo_json", "geojson", {"type": "shape"}, [])
    assert db.create_analyzer("geo_pt", "geopoint", {"latitude": ["lat"], "longitude": ["lng"]}, [])
    coll = db.create_collection(unique("places"))
    coll.insert_many(
        [
            {
                "_key": k,
                "location": {"type": "Point", "coordinates": [lng, lat]},
                "pos": {"lat": lat, "lng": lng},
                "name": k,
            }
            for k, (lat, lng) in CITIES.items()
        ]
        + [
            {
                "_key": "germany_box",
                "location": {
                    "type": "Polygon",
                    "coordinates": [[[6, 47], [15, 47], [15, 55], [6, 55], [6, 47]]],
                },
            }
        ]
    )
    db.create_arangosearch_view(
        "geo_v",
        properties={
            "links": {
                coll.name: {
                    "fields": {
                        "location": {"analyzers": ["geo_json"]},
                        "pos": {"analyzers": ["geo_pt"]},
                        "name": {},
                    }
                }
            }
        },
    )
    near_berlin = keys(
        db,
        f"FOR d IN geo_v SEARCH ANALYZER(GEO_DISTANCE(d.location, [13.4, 52.5]) < 500000, "
        f"'geo_json') {SYNC} RETURN d._key",
    )
    # Berlin and Cologne (~477 km), and the box whose centroid is in Germany.
    assert near_berlin == ["berlin", "cologne", "germany_box"]
    assert near_berlin == keys(
        db,
        "FOR d IN @@c FILTER GEO_DISTANCE(d.location, [13.4, 52.5]) < 500000 RETURN d._key",
        **{"@c": coll.name},
    )
    ring = keys(
        db,
        f"FOR d IN geo_v SEARCH ANALYZER(GEO_IN_RANGE(d.pos, [13.4, 52.5], 100000, 1000000), "
        f"'geo_pt') {SYNC} RETURN d._key",
    )
    assert ring == ["cologne", "paris"]
    box = {"type": "Polygon", "coordinates": [[[5, 45], [16, 45], [16, 56], [5, 56], [5, 45]]]}
    inside = keys(
        db,
        f"FOR d IN geo_v SEARCH ANALYZER(GEO_CONTAINS(@box, d.location), 'geo_json') {SYNC} "
        f"RETURN d._key",
        box=box,
    )
    assert inside == ["berlin", "cologne", "germany_box"]
    # A box across the antimeridian holds Suva and Apia.
    pacific = {
        "type": "Polygon",
        "coordinates": [[[170, -25], [-165, -25], [-165, -10], [170, -10], [170, -25]]],
    }
    across = keys(
        db,
        f"FOR d IN geo_v SEARCH ANALYZER(GEO_INTERSECTS(d.location, @box), 'geo_json') {SYNC} "
        f"RETURN d._key",
        box=pacific,
    )
    assert across == ["apia", "suva"]
    covering = keys(
        db,
        f"FOR d IN geo_v SEARCH ANALYZER(GEO_CONTAINS(d.location, [10, 50]), 'geo_json') {SYNC} "
        f"RETURN d._key",
    )
    assert covering == ["germany_box"]
    # Combined with other conditions.
    named = keys(
        db,
        f"FOR d IN geo_v SEARCH ANALYZER(GEO_DISTANCE(d.pos, [2.35, 48.85]) <= 1000000, "
        f"'geo_pt') AND d.name != 'paris' {SYNC} RETURN d._key",
    )
    assert named == ["berlin", "cologne"]

    with pytest.raises(AQLQueryExecuteError) as err:
        keys(db, "FOR d IN geo_v SEARCH GEO_DISTANCE(d.location, [0, 0]) < 10 RETURN d")
    assert err.value.error_code == 10
