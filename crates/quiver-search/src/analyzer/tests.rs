//! Token streams against ArangoDB's documented examples (the analyzer documentation and the
//! `TOKENS()` examples, with the outputs ArangoDB printed), plus validation rules.

use quiver_errors::ErrorCode;
use serde_json::{json, Value};

use super::{Analyzer, AnalyzerDefinition, Feature};

fn analyzer(kind: &str, properties: Value) -> Analyzer {
    Analyzer::from_definition(&AnalyzerDefinition {
        name: "_system::test".into(),
        kind: kind.into(),
        properties,
        features: vec![],
    })
    .unwrap_or_else(|e| panic!("{kind} must build: {}", e.message))
}

fn terms(analyzer: &Analyzer, input: &str) -> Vec<String> {
    analyzer.tokens(input).into_iter().map(|t| t.term).collect()
}

fn rejection(kind: &str, properties: Value) -> quiver_errors::Error {
    Analyzer::from_definition(&AnalyzerDefinition {
        name: "_system::test".into(),
        kind: kind.into(),
        properties,
        features: vec![],
    })
    .expect_err("must be rejected")
}

#[test]
fn identity_returns_the_input_unaltered() {
    let a = Analyzer::builtin("identity").unwrap();
    assert_eq!(
        terms(&a, "UPPER lower dïäcríticš"),
        ["UPPER lower dïäcríticš"]
    );
    assert_eq!(a.features(), [Feature::Frequency, Feature::Norm]);
}

#[test]
fn delimiter_splits_but_keeps_quoted_fields() {
    let a = analyzer("delimiter", json!({"delimiter": ","}));
    assert_eq!(
        terms(&a, r#"foo,bar,baz,"bar,baz""#),
        ["foo", "bar", "baz", "bar,baz"]
    );
    let hyphen = analyzer("delimiter", json!({"delimiter": "-"}));
    assert_eq!(
        terms(&hyphen, "some-delimited-words"),
        ["some", "delimited", "words"]
    );
}

#[test]
fn delimiter_with_a_character_sequence() {
    let a = analyzer("delimiter", json!({"delimiter": "-> "}));
    assert_eq!(
        terms(&a, "some-> hand-picked-> words"),
        ["some", "hand-picked", "words"]
    );
}

#[test]
fn delimiter_quoting_rules() {
    let a = analyzer("delimiter", json!({"delimiter": ","}));
    // `""` inside a quoted field is a quote; empty fields are tokens; a malformed quoted
    // field is kept as is.
    assert_eq!(terms(&a, r#""a""b",,c"#), [r#"a"b"#, "", "c"]);
    assert_eq!(terms(&a, r#""ab"x,c"#), [r#""ab"x"#, "c"]);
    let tokens = a.tokens("ab,cd");
    assert_eq!(
        (tokens[1].start, tokens[1].end, tokens[1].position),
        (3, 5, 1)
    );
}

#[test]
fn multi_delimiter_splits_at_every_delimiter() {
    let a = analyzer("multi_delimiter", json!({"delimiters": [",", ";", "||"]}));
    assert_eq!(
        terms(&a, "differently,delimited;words||one|token"),
        ["differently", "delimited", "words", "one|token"]
    );
    let no_quotes = analyzer("multi_delimiter", json!({"delimiters": [","]}));
    assert_eq!(
        terms(&no_quotes, r#"foo,bar,baz,"bar,baz""#),
        ["foo", "bar", "baz", "\"bar", "baz\""]
    );
    assert_eq!(terms(&no_quotes, ",,a,,"), ["a"]);
    let err = rejection("multi_delimiter", json!({"delimiters": ["|", "||"]}));
    assert_eq!(err.code, ErrorCode::BadParameter);
}

#[test]
fn stem_applies_snowball_to_the_whole_input() {
    let a = analyzer("stem", json!({"locale": "en"}));
    assert_eq!(terms(&a, "databases"), ["databas"]);
}

#[test]
fn norm_converts_case_and_removes_accents() {
    let upper = analyzer("norm", json!({"locale": "en", "case": "upper"}));
    assert_eq!(
        terms(&upper, "UPPER lower dïäcríticš"),
        ["UPPER LOWER DÏÄCRÍTICŠ"]
    );
    let accent = analyzer("norm", json!({"locale": "en", "accent": false}));
    assert_eq!(
        terms(&accent, "UPPER lower dïäcríticš"),
        ["UPPER lower diacritics"]
    );
    let both = analyzer(
        "norm",
        json!({"locale": "en", "accent": false, "case": "lower"}),
    );
    assert_eq!(
        terms(&both, "UPPER lower dïäcríticš"),
        ["upper lower diacritics"]
    );
    assert_eq!(
        accent.definition().properties,
        json!({"locale": "en", "case": "none", "accent": false})
    );
}

#[test]
fn ngram_trigrams() {
    let a = analyzer(
        "ngram",
        json!({"min": 3, "max": 3, "preserveOriginal": false, "streamType": "utf8"}),
    );
    assert_eq!(terms(&a, "foobar"), ["foo", "oob", "oba", "bar"]);
}

#[test]
fn ngram_bigrams_with_markers_and_original() {
    let a = analyzer(
        "ngram",
        json!({"min": 2, "max": 2, "preserveOriginal": true, "startMarker": "^",
               "endMarker": "$", "streamType": "utf8"}),
    );
    assert_eq!(
        terms(&a, "foobar"),
        ["^fo", "^foobar", "foobar$", "oo", "ob", "ba", "ar$"]
    );
}

#[test]
fn ngram_documented_ranges() {
    let a = analyzer(
        "ngram",
        json!({"min": 4, "max": 5, "preserveOriginal": true}),
    );
    assert_eq!(
        terms(&a, "foobar"),
        ["foob", "fooba", "foobar", "ooba", "oobar", "obar"]
    );
    let no_original = analyzer(
        "ngram",
        json!({"min": 4, "max": 5, "preserveOriginal": false}),
    );
    assert!(terms(&no_original, "foo").is_empty());
    let err = rejection(
        "ngram",
        json!({"min": -1, "max": 4, "preserveOriginal": false}),
    );
    assert_eq!(err.code, ErrorCode::BadParameter);
    assert!(err.message.starts_with(
        "Failure initializing an arangosearch analyzer instance for name '_system::test' type \
         'ngram'."
    ));
}

#[test]
fn ngram_binary_stream_refuses_split_characters_in_tokens_function() {
    let a = analyzer(
        "ngram",
        json!({"min": 1, "max": 1, "preserveOriginal": false}),
    );
    assert!(a.try_tokens("é").is_err());
    assert!(a.tokens("é").is_empty());
    assert_eq!(terms(&a, "ab"), ["a", "b"]);
}

#[test]
fn text_en_stems() {
    let a = Analyzer::builtin("text_en").unwrap();
    assert_eq!(
        terms(&a, "Crazy fast NoSQL-database!"),
        ["crazi", "fast", "nosql", "databas"]
    );
    assert_eq!(
        a.features(),
        [Feature::Frequency, Feature::Position, Feature::Norm]
    );
}

#[test]
fn text_without_stemming() {
    let a = analyzer(
        "text",
        json!({"locale": "en", "case": "lower", "accent": false, "stemming": false,
               "stopwords": []}),
    );
    assert_eq!(
        terms(&a, "Crazy fast NoSQL-database!"),
        ["crazy", "fast", "nosql", "database"]
    );
}

#[test]
fn text_custom_stopwords() {
    let a = analyzer(
        "text",
        json!({"locale": "en", "stopwords": ["a", "example"]}),
    );
    assert_eq!(
        terms(&a, "UPPER & lower, a Stemming Example."),
        ["upper", "lower", "stem"]
    );
    assert_eq!(
        a.definition().properties,
        json!({"locale": "en", "case": "lower", "stopwords": ["a", "example"],
               "accent": false, "stemming": true})
    );
}

#[test]
fn text_edge_ngrams() {
    let a = analyzer(
        "text",
        json!({"edgeNgram": {"min": 3, "max": 8, "preserveOriginal": true}, "locale": "en",
               "case": "lower", "accent": false, "stemming": false, "stopwords": ["the"]}),
    );
    assert_eq!(
        terms(
            &a,
            "The quick brown fox jumps over the dogWithAVeryLongName"
        ),
        [
            "qui",
            "quic",
            "quick",
            "bro",
            "brow",
            "brown",
            "fox",
            "jum",
            "jump",
            "jumps",
            "ove",
            "over",
            "dog",
            "dogw",
            "dogwi",
            "dogwit",
            "dogwith",
            "dogwitha",
            "dogwithaverylongname"
        ]
    );
}

#[test]
fn text_refuses_stopwords_path() {
    let err = rejection("text", json!({"locale": "en", "stopwordsPath": "/tmp"}));
    assert_eq!(err.code, ErrorCode::BadParameter);
}

#[test]
fn stopwords_hex() {
    let a = analyzer(
        "stopwords",
        json!({"stopwords": ["616e64", "746865"], "hex": true}),
    );
    let kept: Vec<String> = "the fox and the dog and a theater"
        .split(' ')
        .flat_map(|w| terms(&a, w))
        .collect();
    assert_eq!(kept, ["fox", "dog", "a", "theater"]);
    assert_eq!(
        rejection("stopwords", json!({"stopwords": ["zz"], "hex": true})).code,
        ErrorCode::BadParameter
    );
}

#[test]
fn pipeline_norm_then_stopwords() {
    let a = analyzer(
        "pipeline",
        json!({"pipeline": [
            {"type": "norm", "properties": {"locale": "en", "accent": false, "case": "lower"}},
            {"type": "stopwords", "properties": {"stopwords": ["and", "the"], "hex": false}}
        ]}),
    );
    let kept: Vec<String> = "The fox AND the dog äñḏ a ţhéäter"
        .split(' ')
        .flat_map(|w| terms(&a, w))
        .collect();
    assert_eq!(kept, ["fox", "dog", "a", "theater"]);
}

#[test]
fn pipeline_upper_bigrams() {
    let a = analyzer(
        "pipeline",
        json!({"pipeline": [
            {"type": "norm", "properties": {"locale": "en", "case": "upper"}},
            {"type": "ngram", "properties": {"min": 2, "max": 2, "preserveOriginal": false,
                                            "streamType": "utf8"}}
        ]}),
    );
    assert_eq!(
        terms(&a, "Quick brown foX"),
        ["QU", "UI", "IC", "CK", "K ", " B", "BR", "RO", "OW", "WN", "N ", " F", "FO", "OX"]
    );
}

#[test]
fn pipeline_delimiters_then_stem() {
    let a = analyzer(
        "pipeline",
        json!({"pipeline": [
            {"type": "delimiter", "properties": {"delimiter": ","}},
            {"type": "delimiter", "properties": {"delimiter": ";"}},
            {"type": "stem", "properties": {"locale": "en"}}
        ]}),
    );
    assert_eq!(
        terms(&a, "delimited,stemmable;words"),
        ["delimit", "stemmabl", "word"]
    );
    let tokens = a.tokens("delimited,stemmable;words");
    let positions: Vec<u32> = tokens.iter().map(|t| t.position).collect();
    assert_eq!(positions, [0, 1, 2]);
    assert_eq!((tokens[2].start, tokens[2].end), (20, 25));
}

#[test]
fn pipeline_refuses_geo_members() {
    let err = rejection(
        "pipeline",
        json!({"pipeline": [{"type": "geojson", "properties": {}}]}),
    );
    assert_eq!(err.code, ErrorCode::BadParameter);
}

#[test]
fn segmentation_break_modes() {
    let input = "Test\twith An_EMAIL-address+123@example.org\n蝴蝶。\u{2028}бутерброд";
    let all = analyzer("segmentation", json!({"break": "all"}));
    assert_eq!(
        terms(&all, input),
        [
            "test",
            "\t",
            "with",
            " ",
            "an_email",
            "-",
            "address",
            "+",
            "123",
            "@",
            "example.org",
            "\n",
            "蝴",
            "蝶",
            "。",
            "\u{2028}",
            "бутерброд"
        ]
    );
    let alpha = analyzer("segmentation", json!({"break": "alpha"}));
    assert_eq!(
        terms(&alpha, input),
        [
            "test",
            "with",
            "an_email",
            "address",
            "123",
            "example.org",
            "蝴",
            "蝶",
            "бутерброд"
        ]
    );
    let graphic = analyzer("segmentation", json!({"break": "graphic"}));
    assert_eq!(
        terms(&graphic, input),
        [
            "test",
            "with",
            "an_email",
            "-",
            "address",
            "+",
            "123",
            "@",
            "example.org",
            "\n",
            "蝴",
            "蝶",
            "。",
            "бутерброд"
        ]
    );
}

#[test]
fn wildcard_frames_tokens_with_markers() {
    let a = analyzer("wildcard", json!({"ngramSize": 3}));
    assert_eq!(
        terms(&a, "graph"),
        ["\u{FFFD}gr", "gra", "rap", "aph", "ph\u{FFFD}", "h\u{FFFD}"]
    );
    let lowered = analyzer(
        "wildcard",
        json!({"ngramSize": 3, "analyzer": {"type": "norm",
               "properties": {"locale": "en", "accent": false, "case": "lower"}}}),
    );
    assert_eq!(terms(&lowered, "Fö")[0], "\u{FFFD}fo");
    assert_eq!(
        rejection("wildcard", json!({"ngramSize": 1})).code,
        ErrorCode::BadParameter
    );
}

#[test]
fn geo_definitions_are_normalized() {
    let a = analyzer("geojson", json!({}));
    assert_eq!(
        a.definition().properties,
        json!({"type": "shape", "options": {"maxCells": 20, "minLevel": 4, "maxLevel": 23},
               "legacy": false})
    );
    assert!(a.is_geo());
    let p = analyzer(
        "geopoint",
        json!({"latitude": ["lat"], "longitude": ["lng"]}),
    );
    assert_eq!(p.definition().properties["latitude"], json!(["lat"]));
    assert_eq!(
        rejection("geopoint", json!({"latitude": ["lat"]})).code,
        ErrorCode::BadParameter
    );
    assert_eq!(
        rejection(
            "geojson",
            json!({"options": {"minLevel": 10, "maxLevel": 5}})
        )
        .code,
        ErrorCode::BadParameter
    );
}

#[test]
fn feature_dependencies() {
    let def = |features: Vec<Feature>| AnalyzerDefinition {
        name: "x".into(),
        kind: "identity".into(),
        properties: json!({}),
        features,
    };
    let err = Analyzer::from_definition(&def(vec![Feature::Position])).unwrap_err();
    assert_eq!(err.code, ErrorCode::BadParameter);
    let err =
        Analyzer::from_definition(&def(vec![Feature::Frequency, Feature::Offset])).unwrap_err();
    assert_eq!(err.code, ErrorCode::BadParameter);
    let ok = Analyzer::from_definition(&def(vec![
        Feature::Norm,
        Feature::Offset,
        Feature::Position,
        Feature::Frequency,
    ]))
    .unwrap();
    assert_eq!(
        ok.features(),
        [
            Feature::Frequency,
            Feature::Position,
            Feature::Offset,
            Feature::Norm
        ]
    );
}

#[test]
fn unknown_and_unsupported_types() {
    assert_eq!(
        rejection("nonsense", json!({})).code,
        ErrorCode::NotImplemented
    );
    assert_eq!(
        rejection("aql", json!({"queryString": "RETURN 1"})).code,
        ErrorCode::NotImplemented
    );
    assert_eq!(
        rejection("geo_s2", json!({})).code,
        ErrorCode::OnlyEnterprise
    );
}

#[test]
fn builtins_match_arangodb() {
    for name in super::BUILTIN_NAMES {
        let a = Analyzer::builtin(name).expect("builtin");
        assert_eq!(a.definition().name, *name);
    }
    assert!(Analyzer::builtin("text_xx").is_none());
    let de = Analyzer::builtin("text_de").unwrap();
    assert_eq!(
        de.definition().to_json(),
        json!({"name": "text_de", "type": "text",
               "properties": {"locale": "de", "case": "lower", "stopwords": [],
                              "accent": false, "stemming": true},
               "features": ["frequency", "position", "norm"]})
    );
}

#[test]
fn properties_may_be_a_json_string() {
    let a = analyzer("delimiter", Value::String(r#"{"delimiter":";"}"#.into()));
    assert_eq!(terms(&a, "a;b"), ["a", "b"]);
}

#[test]
fn minhash_signatures_estimate_jaccard() {
    let segment =
        json!({"type": "segmentation", "properties": {"break": "alpha", "case": "lower"}});
    let small = analyzer("minhash", json!({"analyzer": segment, "numHashes": 5}));
    // The documentation's analyzer: five hex tokens at positions 0..4, normalized properties.
    let tokens = small.tokens("The quick brown fox jumps over the lazy dog.");
    assert_eq!(tokens.len(), 5);
    assert!(tokens
        .iter()
        .enumerate()
        .all(|(i, t)| t.position == i as u32
            && t.term.len() == 16
            && t.term.chars().all(|c| c.is_ascii_hexdigit())));
    assert_eq!(
        small.definition().properties,
        json!({"analyzer": {"type": "segmentation", "properties":
            {"break": "alpha", "case": "lower"}}, "numHashes": 5})
    );
    assert!(terms(&small, "").is_empty());
    // The signature depends on the token set only.
    assert_eq!(terms(&small, "b a a"), terms(&small, "A B"));
    // With 400 hashes the share of equal positions is within 0.1 of the true Jaccard
    // similarity of the word sets (error about 1/sqrt(400) = 0.05), for many pairs.
    let wide = analyzer("minhash", json!({"analyzer": segment, "numHashes": 400}));
    let words: Vec<String> = (0..60).map(|i| format!("w{i}")).collect();
    for (a, b, shift) in [
        (0, 30, 10),
        (0, 40, 0),
        (5, 25, 15),
        (0, 60, 30),
        (0, 20, 19),
    ] {
        let left: Vec<&str> = words[a..b].iter().map(String::as_str).collect();
        let right: Vec<&str> = words[a + shift..b + shift.min(60 - b)]
            .iter()
            .map(String::as_str)
            .collect();
        let set = |v: &[&str]| {
            v.iter()
                .map(|w| w.to_string())
                .collect::<std::collections::BTreeSet<_>>()
        };
        let (l, r) = (set(&left), set(&right));
        let actual = l.intersection(&r).count() as f64 / l.union(&r).count() as f64;
        let (sl, sr) = (
            terms(&wide, &left.join(" ")),
            terms(&wide, &right.join(" ")),
        );
        let equal = sl.iter().zip(&sr).filter(|(x, y)| x == y).count() as f64;
        let estimate = equal / 400.0;
        assert!(
            (estimate - actual).abs() < 0.1,
            "{a} {b} {shift}: {estimate} vs {actual}"
        );
    }
    assert_eq!(
        rejection("minhash", json!({"analyzer": segment})).code,
        ErrorCode::BadParameter
    );
    assert_eq!(
        rejection("minhash", json!({"analyzer": segment, "numHashes": 0})).code,
        ErrorCode::BadParameter
    );
    assert_eq!(
        rejection("minhash", json!({"numHashes": 3})).code,
        ErrorCode::BadParameter
    );
}
