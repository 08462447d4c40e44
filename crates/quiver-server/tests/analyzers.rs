//! Handler tests (no socket) for `/_api/analyzer` and AQL `TOKENS()` over stored analyzers.

use std::sync::Arc;

use http::Method;
use quiver_core::{Core, CoreOptions};
use quiver_server::{handle, Request, Response, ServerConfig, ServerState};
use serde_json::{json, Value};

struct Fixture {
    state: Arc<ServerState>,
    _dir: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let config = ServerConfig {
        data_dir: dir.path().to_path_buf(),
        async_queue_capacity: 4,
        async_workers: 1,
        auth: quiver_server::auth::AuthConfig::disabled(),
        ..ServerConfig::default()
    };
    Fixture {
        state: ServerState::new(config, core).unwrap(),
        _dir: dir,
    }
}

impl Fixture {
    fn call(&self, method: Method, target: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = Request::build(method, target);
        if let Some(b) = body {
            req = req.with_body(serde_json::to_vec(&b).unwrap());
        }
        let r: Response = handle(&self.state, req).settle_blocking();
        (r.status.as_u16(), r.body_json().unwrap_or(Value::Null))
    }

    fn query(&self, db: &str, query: &str) -> (u16, Value) {
        self.call(
            Method::POST,
            &format!("/_db/{db}/_api/cursor"),
            Some(json!({ "query": query })),
        )
    }
}

#[test]
fn analyzer_lifecycle() {
    let f = fixture();
    let csv = json!({"name": "csv", "type": "delimiter", "properties": {"delimiter": ","},
                     "features": ["frequency", "norm", "position"]});
    let (status, body) = f.call(Method::POST, "/_api/analyzer", Some(csv.clone()));
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body,
        json!({"name": "_system::csv", "type": "delimiter", "properties": {"delimiter": ","},
               "features": ["frequency", "position", "norm"]})
    );
    assert_eq!(f.call(Method::POST, "/_api/analyzer", Some(csv)).0, 200);
    let (status, body) = f.call(
        Method::POST,
        "/_api/analyzer",
        Some(json!({"name": "csv", "type": "delimiter", "properties": {"delimiter": ";"}})),
    );
    assert_eq!((status, body["errorNum"].clone()), (400, json!(10)));

    let (status, body) = f.call(Method::GET, "/_api/analyzer/csv", None);
    assert_eq!(status, 200);
    assert_eq!(
        (body["error"].clone(), body["code"].clone()),
        (json!(false), json!(200))
    );
    assert_eq!(body["name"], "_system::csv");

    let (status, body) = f.call(Method::GET, "/_api/analyzer", None);
    assert_eq!(status, 200);
    let names: Vec<&str> = body["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"text_en") && names.contains(&"identity"));
    assert!(names.contains(&"_system::csv"));

    let (status, body) = f.query("_system", "RETURN TOKENS('a,b,\"c,d\"', 'csv')");
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["result"], json!([["a", "b", "c,d"]]));

    let (status, body) = f.call(Method::DELETE, "/_api/analyzer/text_en", None);
    assert_eq!((status, body["errorNum"].clone()), (403, json!(11)));
    let (status, body) = f.call(Method::DELETE, "/_api/analyzer/nope", None);
    assert_eq!((status, body["errorNum"].clone()), (404, json!(1202)));
    let (status, body) = f.call(Method::DELETE, "/_api/analyzer/csv?force=true", None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["name"], "_system::csv");
    let (status, body) = f.call(Method::GET, "/_api/analyzer/csv", None);
    assert_eq!((status, body["errorNum"].clone()), (404, json!(1202)));
}

#[test]
fn per_database_visibility() {
    let f = fixture();
    assert_eq!(
        f.call(
            Method::POST,
            "/_api/database",
            Some(json!({"name": "shop"}))
        )
        .0,
        201
    );
    let global = json!({"name": "global", "type": "norm", "properties": {"locale": "en",
                        "case": "upper"}});
    assert_eq!(f.call(Method::POST, "/_api/analyzer", Some(global)).0, 201);
    let local = json!({"name": "local", "type": "identity"});
    let (status, body) = f.call(Method::POST, "/_db/shop/_api/analyzer", Some(local));
    assert_eq!((status, body["name"].clone()), (201, json!("shop::local")));

    // `_system` analyzers are readable and usable from other databases, not creatable there.
    assert_eq!(
        f.call(Method::GET, "/_db/shop/_api/analyzer/::global", None)
            .0,
        200
    );
    assert_eq!(
        f.call(Method::GET, "/_db/shop/_api/analyzer/_system::global", None)
            .0,
        200
    );
    let (_, body) = f.query("shop", "RETURN TOKENS('abc', '::global')");
    assert_eq!(body["result"], json!([["ABC"]]));
    let (status, body) = f.call(
        Method::POST,
        "/_db/shop/_api/analyzer",
        Some(json!({"name": "_system::x", "type": "identity"})),
    );
    assert_eq!((status, body["errorNum"].clone()), (403, json!(11)));
    // Other databases' analyzers are not reachable.
    let (status, body) = f.call(Method::GET, "/_api/analyzer/shop::local", None);
    assert_eq!((status, body["errorNum"].clone()), (403, json!(11)));
    let (status, body) = f.query("_system", "RETURN TOKENS('a', 'shop::local')");
    assert_eq!((status, body["errorNum"].clone()), (400, json!(10)));
    let (_, body) = f.call(Method::GET, "/_db/shop/_api/analyzer", None);
    let names: Vec<&str> = body["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"shop::local") && names.contains(&"_system::global"));
}

#[test]
fn extended_names_that_are_no_keys_are_stored() {
    let f = fixture();
    let (status, body) = f.call(
        Method::POST,
        "/_api/analyzer",
        Some(json!({"name": "spaced name", "type": "identity"})),
    );
    if f.state.core.naming() == quiver_core::NamingConvention::Extended {
        assert_eq!(status, 201, "{body}");
        assert_eq!(
            f.call(Method::GET, "/_api/analyzer/spaced%20name", None).0,
            200
        );
        assert_eq!(
            f.call(Method::DELETE, "/_api/analyzer/spaced%20name", None)
                .0,
            200
        );
    } else {
        assert_eq!((status, body["errorNum"].clone()), (400, json!(10)));
    }
}

#[test]
fn bad_definitions_get_arangodb_errors() {
    let f = fixture();
    let cases = [
        (json!({}), 400, 600),
        (json!({"type": "identity"}), 400, 10),
        (json!({"name": "9lives", "type": "identity"}), 400, 10),
        (json!({"name": "a:b", "type": "identity"}), 400, 10),
        (json!({"name": "x", "type": "nonsense"}), 501, 9),
        (
            json!({"name": "x", "type": "ngram", "properties": {"min": 5, "max": 2,
                "preserveOriginal": false}}),
            400,
            10,
        ),
        (
            json!({"name": "x", "type": "identity", "features": ["position"]}),
            400,
            10,
        ),
        (
            json!({"name": "x", "type": "identity", "features": ["bogus"]}),
            400,
            10,
        ),
        (
            json!({"name": "x", "type": "collation", "properties": {}}),
            400,
            10,
        ),
    ];
    for (body, status, num) in cases {
        let (got, answer) = f.call(Method::POST, "/_api/analyzer", Some(body.clone()));
        assert_eq!(
            (got, answer["errorNum"].clone()),
            (status, json!(num)),
            "{body}"
        );
    }
}
