//! The index against brute force: matching documents and BM25/TFIDF scores on small corpora
//! computed directly from the documents (tolerance 1e-9, relative), and durability.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use super::*;

/// `identity`, and `words`: lower-cased whitespace-separated tokens at positions 0, 1, ….
struct Words;

impl AnalyzerSource for Words {
    fn tokens(&self, analyzer: &str, input: &str) -> Option<Vec<(String, u32)>> {
        match analyzer {
            "identity" => Some(vec![(input.to_string(), 0)]),
            "words" => Some(
                input
                    .split_whitespace()
                    .enumerate()
                    .map(|(i, w)| (w.to_lowercase(), i as u32))
                    .collect(),
            ),
            _ => None,
        }
    }

    /// `words` has offsets (byte ranges of the whitespace-separated words); `identity` not.
    fn offset_tokens(&self, analyzer: &str, input: &str) -> Option<Vec<crate::Token>> {
        (analyzer == "words").then(|| word_spans(input))
    }
}

/// The words of `input` with their byte ranges, lower-cased, at positions 0, 1, ….
fn word_spans(input: &str) -> Vec<crate::Token> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in input
        .char_indices()
        .chain(std::iter::once((input.len(), ' ')))
    {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                out.push(crate::Token {
                    term: input[s..i].to_lowercase(),
                    position: out.len() as u32,
                    start: s as u32,
                    end: i as u32,
                });
                start = None;
            }
            _ => {}
        }
    }
    out
}

fn link() -> LinkDefinition {
    LinkDefinition::from_json(&json!({
        "includeAllFields": true,
        "fields": {"text": {"analyzers": ["words", "identity"]}}
    }))
    .unwrap()
}

const CORPUS: &[&str] = &[
    "the quick brown fox jumps over the lazy dog",
    "quick quick quick",
    "a brown dog",
    "the fox",
    "lazy afternoon with a lazy brown cat and a dog",
    "nothing to see here",
];

fn build(dir: &std::path::Path) -> ViewIndex {
    let (index, opened) = ViewIndex::open(dir).unwrap();
    assert_eq!(opened, Opened::Created);
    for (i, text) in CORPUS.iter().enumerate() {
        let doc = json!({"_key": format!("k{i}"), "text": text, "n": i, "even": i % 2 == 0});
        index
            .put(
                7,
                &format!("k{i}"),
                1,
                document_terms(&doc, &link(), &Words),
                &doc,
            )
            .unwrap();
    }
    index.commit("{\"covered\":1}").unwrap();
    index
}

fn keys(index: &ViewIndex, q: SearchQuery) -> BTreeSet<String> {
    index
        .search(&q, None, &[], &Words)
        .unwrap()
        .into_iter()
        .map(|h| h.key)
        .collect()
}

fn set(ks: &[usize]) -> BTreeSet<String> {
    ks.iter().map(|i| format!("k{i}")).collect()
}

fn term(path: &str, analyzer: &str, value: SearchValue) -> SearchQuery {
    SearchQuery::Term {
        path: path.into(),
        analyzer: analyzer.into(),
        value,
    }
}

fn word(w: &str) -> SearchQuery {
    term("text", "words", SearchValue::String(w.into()))
}

/// BM25 or TFIDF of `query_words` for every document of CORPUS holding any of them,
/// straight from the texts.
fn brute_force(scorer: &Scorer, query_words: &[&str]) -> BTreeMap<String, f64> {
    let all: Vec<usize> = (0..CORPUS.len()).collect();
    brute_force_over(&all, scorer, query_words)
}

/// The same over the documents `live` of CORPUS (key `k<i>`).
fn brute_force_over(
    live: &[usize],
    scorer: &Scorer,
    query_words: &[&str],
) -> BTreeMap<String, f64> {
    let docs: Vec<(usize, Vec<String>)> = live
        .iter()
        .map(|&i| {
            (
                i,
                CORPUS[i]
                    .split_whitespace()
                    .map(str::to_lowercase)
                    .collect(),
            )
        })
        .collect();
    let n = docs.len() as f64;
    let avg = docs.iter().map(|(_, d)| d.len()).sum::<usize>() as f64 / n;
    let mut out = BTreeMap::new();
    for (i, doc) in &docs {
        let mut score = 0.0;
        let mut any = false;
        for w in query_words {
            let tf = doc.iter().filter(|t| t == w).count() as f64;
            if tf == 0.0 {
                continue;
            }
            any = true;
            let df = docs
                .iter()
                .filter(|(_, d)| d.iter().any(|t| t == w))
                .count() as f64;
            let len = doc.len() as f64;
            score += match scorer {
                Scorer::Bm25 { k, b } => {
                    let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                    idf * (k + 1.0) * tf / (tf + k * (1.0 - b + b * len / avg))
                }
                Scorer::Tfidf { with_norms } => {
                    let idf = 1.0 + (n / (df + 1.0)).ln();
                    tf.sqrt() * idf * if *with_norms { 1.0 / len.sqrt() } else { 1.0 }
                }
            };
        }
        if any {
            out.insert(format!("k{i}"), score);
        }
    }
    out
}

#[test]
fn scores_match_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let index = build(dir.path());
    let scorers = [
        Scorer::BM25_DEFAULT,
        Scorer::Bm25 { k: 2.0, b: 0.0 },
        Scorer::Bm25 { k: 0.5, b: 1.0 },
        Scorer::Tfidf { with_norms: false },
        Scorer::Tfidf { with_norms: true },
    ];
    for words in [&["quick"][..], &["lazy", "dog"], &["the", "fox", "brown"]] {
        let query = SearchQuery::Or(words.iter().map(|w| word(w)).collect());
        let hits = index.search(&query, None, &scorers, &Words).unwrap();
        for (i, scorer) in scorers.iter().enumerate() {
            let expected = brute_force(scorer, words);
            let got: BTreeMap<String, f64> =
                hits.iter().map(|h| (h.key.clone(), h.scores[i])).collect();
            assert_eq!(
                got.keys().collect::<Vec<_>>(),
                expected.keys().collect::<Vec<_>>(),
                "{words:?}"
            );
            for (key, want) in &expected {
                let have = got[key];
                assert!(
                    (have - want).abs() <= 1e-9 * want.abs().max(1.0),
                    "{scorer:?} {words:?} {key}: {have} vs {want}"
                );
            }
        }
    }
    // BOOST multiplies a term's contribution.
    let boosted = SearchQuery::Boost(Box::new(word("quick")), 2.5);
    let plain = index
        .search(&word("quick"), None, &scorers[..1], &Words)
        .unwrap();
    let twice = index.search(&boosted, None, &scorers[..1], &Words).unwrap();
    for (a, b) in plain.iter().zip(&twice) {
        assert!((a.scores[0] * 2.5 - b.scores[0]).abs() < 1e-9);
    }
}

/// Asserts that the BM25 and TFIDF scores of `words` are those of the documents `live`.
fn assert_scores_over(index: &ViewIndex, live: &[usize], words: &[&str]) {
    let scorers = [Scorer::BM25_DEFAULT, Scorer::Tfidf { with_norms: true }];
    let query = SearchQuery::Or(words.iter().map(|w| word(w)).collect());
    let hits = index.search(&query, None, &scorers, &Words).unwrap();
    for (i, scorer) in scorers.iter().enumerate() {
        let expected = brute_force_over(live, scorer, words);
        let got: BTreeMap<String, f64> =
            hits.iter().map(|h| (h.key.clone(), h.scores[i])).collect();
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>(),
            "{words:?} over {live:?}"
        );
        for (key, want) in &expected {
            let have = got[key];
            assert!(
                (have - want).abs() <= 1e-9 * want.abs().max(1.0),
                "{scorer:?} {words:?} {key} over {live:?}: {have} vs {want}"
            );
        }
    }
}

#[test]
fn scores_stay_exact_across_segments_and_removals() {
    // Two segments (no merges); the field statistics are cached per segment and deletion
    // state, so a removal in either segment must change N, the mean length and df at once.
    let dir = tempfile::tempdir().unwrap();
    let (index, _) = ViewIndex::open(dir.path()).unwrap();
    index.set_consolidation(Consolidation::Off);
    for (i, text) in CORPUS.iter().enumerate() {
        let doc = json!({"_key": format!("k{i}"), "text": text});
        index
            .put(
                7,
                &format!("k{i}"),
                1,
                document_terms(&doc, &link(), &Words),
                &doc,
            )
            .unwrap();
        if i == 2 {
            index.commit("{}").unwrap();
        }
    }
    index.commit("{}").unwrap();
    let mut live: Vec<usize> = (0..CORPUS.len()).collect();
    assert_scores_over(&index, &live, &["lazy", "dog"]);
    assert_scores_over(&index, &live, &["quick", "fox"]);
    for removed in [0, 4] {
        index.remove(7, &format!("k{removed}"));
        index.commit("{}").unwrap();
        live.retain(|i| *i != removed);
        assert_scores_over(&index, &live, &["lazy", "dog"]);
        assert_scores_over(&index, &live, &["quick", "fox"]);
    }
}

#[test]
fn conditions_match_as_arangosearch() {
    let dir = tempfile::tempdir().unwrap();
    let index = build(dir.path());
    assert_eq!(keys(&index, word("fox")), set(&[0, 3]));
    // identity and words terms are kept apart
    assert_eq!(
        keys(
            &index,
            term("text", "identity", SearchValue::String("the fox".into()))
        ),
        set(&[3])
    );
    assert!(keys(
        &index,
        term("text", "identity", SearchValue::String("fox".into()))
    )
    .is_empty());
    assert_eq!(
        keys(&index, term("n", "identity", SearchValue::Number(2.0))),
        set(&[2])
    );
    assert_eq!(
        keys(&index, term("even", "identity", SearchValue::Bool(true))),
        set(&[0, 2, 4])
    );
    let range = SearchQuery::Range {
        path: "n".into(),
        analyzer: "identity".into(),
        lower: Some((SearchValue::Number(1.0), false)),
        upper: Some((SearchValue::Number(4.0), true)),
    };
    assert_eq!(keys(&index, range), set(&[2, 3, 4]));
    let open_range = SearchQuery::Range {
        path: "n".into(),
        analyzer: "identity".into(),
        lower: Some((SearchValue::Number(4.0), true)),
        upper: None,
    };
    assert_eq!(keys(&index, open_range), set(&[4, 5]));
    assert_eq!(
        keys(
            &index,
            SearchQuery::And(vec![word("brown"), SearchQuery::Not(Box::new(word("cat")))])
        ),
        set(&[0, 2])
    );
    assert_eq!(
        keys(
            &index,
            SearchQuery::MinMatch(vec![word("lazy"), word("dog"), word("brown")], 3)
        ),
        set(&[0, 4])
    );
    let phrase = |parts: Vec<(i64, &str)>| SearchQuery::Phrase {
        path: "text".into(),
        analyzer: "words".into(),
        parts: parts
            .into_iter()
            .map(|(skip, text)| PhrasePart {
                skip,
                token: PhraseToken::Text(text.into()),
            })
            .collect(),
    };
    assert_eq!(keys(&index, phrase(vec![(0, "quick brown")])), set(&[0]));
    assert_eq!(keys(&index, phrase(vec![(0, "brown quick")])), set(&[]));
    assert_eq!(
        keys(&index, phrase(vec![(0, "quick"), (1, "fox")])),
        set(&[0])
    );
    assert_eq!(keys(&index, phrase(vec![(0, "lazy"), (2, "a")])), set(&[4]));
    let exists = |kind| SearchQuery::Exists {
        path: "text".into(),
        kind,
    };
    assert_eq!(keys(&index, exists(ExistsKind::Any)).len(), CORPUS.len());
    assert_eq!(
        keys(&index, exists(ExistsKind::Type("number".into()))),
        set(&[])
    );
    assert_eq!(
        keys(&index, exists(ExistsKind::Analyzer("words".into()))).len(),
        6
    );
    let prefix = SearchQuery::Prefix {
        path: "text".into(),
        analyzer: "words".into(),
        prefix: "la".into(),
    };
    assert_eq!(keys(&index, prefix), set(&[0, 4]));
    let like = SearchQuery::Like {
        path: "text".into(),
        analyzer: "identity".into(),
        pattern: "%brown _og".into(),
    };
    assert_eq!(keys(&index, like), set(&[2]));
    let fuzzy = SearchQuery::Levenshtein {
        path: "text".into(),
        analyzer: "words".into(),
        target: "quack".into(),
        distance: 1,
        transpositions: true,
        max_terms: 0,
        prefix: String::new(),
    };
    assert_eq!(keys(&index, fuzzy), set(&[0, 1]));
    // With a prefix the distance applies to the rest; maxTerms keeps the closest terms.
    let fuzzy = |target: &str, distance, max_terms, prefix: &str| SearchQuery::Levenshtein {
        path: "text".into(),
        analyzer: "words".into(),
        target: target.into(),
        distance,
        transpositions: false,
        max_terms,
        prefix: prefix.into(),
    };
    assert_eq!(keys(&index, fuzzy("ack", 1, 64, "qu")), set(&[0, 1]));
    assert_eq!(keys(&index, fuzzy("ack", 1, 64, "br")), set(&[]));
    assert_eq!(keys(&index, fuzzy("ick", 0, 64, "qu")), set(&[0, 1]));
    // "dog" is 0 edits from "dog", "fox" 3: one term kept is "dog" alone.
    assert_eq!(keys(&index, fuzzy("dog", 3, 1, "")), set(&[0, 2, 4]));
    assert!(keys(&index, fuzzy("dog", 3, 0, "")).len() > 3);
    assert!(index
        .search(&SearchQuery::All, Some(&[8]), &[], &Words)
        .unwrap()
        .is_empty());
}

#[test]
fn updates_removals_and_reopening() {
    let dir = tempfile::tempdir().unwrap();
    {
        let index = build(dir.path());
        index
            .put(
                7,
                "k1",
                2,
                document_terms(&json!({"text": "slow"}), &link(), &Words),
                &Value::Null,
            )
            .unwrap();
        index.remove(7, "k3");
        index
            .put(
                9,
                "other",
                3,
                document_terms(&json!({"text": "fox"}), &link(), &Words),
                &Value::Null,
            )
            .unwrap();
        // Not visible before the commit.
        assert_eq!(keys(&index, word("slow")), set(&[]));
        index.commit("{\"covered\":2}").unwrap();
        assert_eq!(keys(&index, word("slow")), set(&[1]));
        assert_eq!(keys(&index, word("quick")), set(&[0]));
        assert_eq!(
            keys(&index, word("fox")),
            ["k0", "other"].map(String::from).into()
        );
        index.remove_collection(9);
        index.commit("{\"covered\":3}").unwrap();
    }
    let (index, opened) = ViewIndex::open(dir.path()).unwrap();
    assert_eq!(opened, Opened::Existing(Some("{\"covered\":3}".into())));
    assert_eq!(keys(&index, word("fox")), set(&[0]));
    assert_eq!(index.num_docs(), CORPUS.len() as u64 - 1);
    // The reopened index reports what it holds of each collection, with the revisions.
    let mut held = Vec::new();
    index
        .for_each_identity(7, |key, rev| {
            held.push((key.to_string(), rev));
            Ok(())
        })
        .unwrap();
    held.sort();
    let mut expected: Vec<(String, u64)> = (0..CORPUS.len())
        .filter(|i| *i != 3)
        .map(|i| (format!("k{i}"), if i == 1 { 2 } else { 1 }))
        .collect();
    expected.sort();
    assert_eq!(held, expected);
    let mut other = 0;
    index
        .for_each_identity(9, |_, _| {
            other += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!(other, 0);
}

#[test]
fn a_broken_directory_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    drop(build(dir.path()));
    std::fs::write(dir.path().join("meta.json"), b"{not json").unwrap();
    let (index, opened) = ViewIndex::open(dir.path()).unwrap();
    assert_eq!(opened, Opened::Created);
    assert_eq!(index.num_docs(), 0);
}

#[test]
fn an_index_without_its_dictionary_format_is_rebuilt() {
    for format in [None, Some("fst\n"), Some("")] {
        let dir = tempfile::tempdir().unwrap();
        {
            let index = build(dir.path());
            index.commit("{\"covered\":1}").unwrap();
            assert_eq!(index.num_docs(), CORPUS.len() as u64);
        }
        let marker = dir.path().join("term-dictionary");
        // An index this build wrote reopens with its documents.
        assert_eq!(std::fs::read_to_string(&marker).unwrap(), "sstable\n");
        let (index, opened) = ViewIndex::open(dir.path()).unwrap();
        assert_eq!(opened, Opened::Existing(Some("{\"covered\":1}".into())));
        assert_eq!(index.num_docs(), CORPUS.len() as u64);
        drop(index);
        // One written with another dictionary (or before the file existed) is not opened.
        match format {
            None => std::fs::remove_file(&marker).unwrap(),
            Some(f) => std::fs::write(&marker, f).unwrap(),
        }
        let (index, opened) = ViewIndex::open(dir.path()).unwrap();
        assert_eq!(opened, Opened::Created, "format {format:?}");
        assert_eq!(index.num_docs(), 0);
        assert_eq!(std::fs::read_to_string(&marker).unwrap(), "sstable\n");
    }
}

#[test]
fn values_of_other_types_never_match_strings() {
    let dir = tempfile::tempdir().unwrap();
    let (index, _) = ViewIndex::open(dir.path()).unwrap();
    let link = LinkDefinition::from_json(&json!({"includeAllFields": true})).unwrap();
    for (key, v) in [
        ("a", json!("1")),
        ("b", json!(1)),
        ("c", Value::Null),
        ("d", json!(true)),
    ] {
        index
            .put(
                1,
                key,
                1,
                document_terms(&json!({"v": v}), &link, &Words),
                &Value::Null,
            )
            .unwrap();
    }
    index.commit("{}").unwrap();
    let k = |q| keys(&index, q).into_iter().collect::<Vec<_>>();
    assert_eq!(
        k(term("v", "identity", SearchValue::String("1".into()))),
        ["a"]
    );
    assert_eq!(k(term("v", "identity", SearchValue::Number(1.0))), ["b"]);
    assert_eq!(k(term("v", "identity", SearchValue::Null)), ["c"]);
    assert_eq!(k(term("v", "identity", SearchValue::Bool(true))), ["d"]);
}

/// What one phrase token accepts, straight from the word (the brute-force side).
fn token_accepts(token: &PhraseToken, word: &str) -> bool {
    match token {
        PhraseToken::Text(t) => t.to_lowercase() == word,
        PhraseToken::Terms(terms) => terms.iter().any(|t| t == word),
        PhraseToken::AnalyzedTerms(texts) => texts.iter().any(|t| t.to_lowercase() == word),
        PhraseToken::StartsWith(p) => word.starts_with(p.as_str()),
        PhraseToken::Wildcard(pattern) => {
            let TermMatcher::Like { pattern, .. } = TermMatcher::like("", pattern) else {
                unreachable!()
            };
            like_matches(&pattern, word)
        }
        PhraseToken::Levenshtein {
            target,
            distance,
            transpositions,
            prefix,
            ..
        } => word.strip_prefix(prefix.as_str()).is_some_and(|rest| {
            let (a, b): (Vec<char>, Vec<char>) = (target.chars().collect(), rest.chars().collect());
            edit_distance(&a, &b, *transpositions, *distance as usize).is_some()
        }),
        PhraseToken::InRange {
            low,
            high,
            include_low,
            include_high,
        } => {
            let above = if *include_low {
                word >= low.as_str()
            } else {
                word > low.as_str()
            };
            let below = if *include_high {
                word <= high.as_str()
            } else {
                word < high.as_str()
            };
            above && below
        }
    }
}

/// The CORPUS documents where some start puts every one-word part at its offset.
fn brute_force_phrase(parts: &[PhrasePart]) -> BTreeSet<String> {
    let mut offsets = Vec::new();
    let mut cursor = 0i64;
    for part in parts {
        cursor += part.skip;
        offsets.push(cursor);
        cursor += 1;
    }
    let mut out = BTreeSet::new();
    for (i, text) in CORPUS.iter().enumerate() {
        let words: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
        let hit = (0..words.len() as i64).any(|start| {
            parts.iter().zip(&offsets).all(|(part, offset)| {
                let at = start + offset - offsets[0];
                at >= 0
                    && (at as usize) < words.len()
                    && token_accepts(&part.token, &words[at as usize])
            })
        });
        if hit {
            out.insert(format!("k{i}"));
        }
    }
    out
}

#[test]
fn phrase_object_tokens_match_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let index = build(dir.path());
    let tokens = [
        PhraseToken::StartsWith("qu".into()),
        PhraseToken::Wildcard("b%o_n".into()),
        PhraseToken::Levenshtein {
            target: "foks".into(),
            distance: 2,
            transpositions: true,
            max_terms: 0,
            prefix: String::new(),
        },
        PhraseToken::Levenshtein {
            target: "zy".into(),
            distance: 1,
            transpositions: false,
            max_terms: 0,
            prefix: "la".into(),
        },
        PhraseToken::Terms(vec!["lazy".into(), "quick".into()]),
        PhraseToken::InRange {
            low: "a".into(),
            high: "c".into(),
            include_low: true,
            include_high: false,
        },
        PhraseToken::Text("dog".into()),
        PhraseToken::AnalyzedTerms(vec!["Brown".into(), "CAT".into()]),
    ];
    let phrase = |parts: Vec<PhrasePart>| SearchQuery::Phrase {
        path: "text".into(),
        analyzer: "words".into(),
        parts,
    };
    let mut nonempty = 0;
    for a in &tokens {
        assert_eq!(
            keys(
                &index,
                phrase(vec![PhrasePart {
                    skip: 0,
                    token: a.clone()
                }])
            ),
            brute_force_phrase(&[PhrasePart {
                skip: 0,
                token: a.clone()
            }]),
            "{a:?}"
        );
        for b in &tokens {
            for skip in [-2, -1, 0, 1, 2] {
                let parts = vec![
                    PhrasePart {
                        skip: 0,
                        token: a.clone(),
                    },
                    PhrasePart {
                        skip,
                        token: b.clone(),
                    },
                ];
                let want = brute_force_phrase(&parts);
                nonempty += usize::from(!want.is_empty());
                assert_eq!(keys(&index, phrase(parts)), want, "{a:?} {skip} {b:?}");
            }
            for c in &tokens {
                let parts = vec![
                    PhrasePart {
                        skip: 0,
                        token: a.clone(),
                    },
                    PhrasePart {
                        skip: 0,
                        token: b.clone(),
                    },
                    PhrasePart {
                        skip: 1,
                        token: c.clone(),
                    },
                ];
                let want = brute_force_phrase(&parts);
                nonempty += usize::from(!want.is_empty());
                assert_eq!(keys(&index, phrase(parts)), want, "{a:?} {b:?} 1 {c:?}");
            }
        }
    }
    // The comparison is only worth something if many phrases match.
    assert!(nonempty > 50, "{nonempty}");
    // maxTerms keeps the closest terms: "fox" (1 edit from "fax") before "dog"… (more).
    let closest = |max_terms| {
        phrase(vec![PhrasePart {
            skip: 0,
            token: PhraseToken::Levenshtein {
                target: "fax".into(),
                distance: 3,
                transpositions: true,
                max_terms,
                prefix: String::new(),
            },
        }])
    };
    assert_eq!(keys(&index, closest(1)), set(&[0, 3]));
    assert!(keys(&index, closest(0)).len() > 2);
    // Exact object terms score like the words they are.
    let scorers = [Scorer::BM25_DEFAULT];
    let object = phrase(vec![
        PhrasePart {
            skip: 0,
            token: PhraseToken::Terms(vec!["quick".into()]),
        },
        PhrasePart {
            skip: 0,
            token: PhraseToken::Text("brown".into()),
        },
    ]);
    let hits = index.search(&object, None, &scorers, &Words).unwrap();
    let expected = brute_force(&scorers[0], &["quick", "brown"]);
    assert_eq!(hits.len(), 1);
    assert!((hits[0].scores[0] - expected["k0"]).abs() < 1e-9);
}

#[test]
fn offset_info_matches_brute_force() {
    let words_of = |w: &[&str]| SearchQuery::Or(w.iter().map(|x| word(x)).collect());
    let rules = [OffsetRule::new("text")];
    for query_words in [
        &["lazy"][..],
        &["quick", "dog"],
        &["the", "fox", "brown", "a"],
    ] {
        let query = words_of(query_words);
        for (i, text) in CORPUS.iter().enumerate() {
            let doc = json!({"text": text});
            let got = offset_info(&query, &doc, &rules, &Words).unwrap();
            // Brute force: every occurrence of a query word, ascending, at most 10.
            let mut want = Vec::new();
            let mut at = 0;
            for w in text.split(' ') {
                if query_words.contains(&w) {
                    want.push(json!([at, w.len()]));
                }
                at += w.len() + 1;
            }
            want.truncate(DEFAULT_MAX_OFFSETS);
            let expected = if want.is_empty() {
                json!([])
            } else {
                json!([{"name": ["text"], "offsets": want}])
            };
            assert_eq!(got, expected, "{query_words:?} k{i}");
        }
    }
    // A phrase is one offset from its first to its last token; NOT adds nothing.
    let phrase = SearchQuery::Phrase {
        path: "text".into(),
        analyzer: "words".into(),
        parts: vec![
            PhrasePart {
                skip: 0,
                token: PhraseToken::Text("lazy".into()),
            },
            PhrasePart {
                skip: 0,
                token: PhraseToken::StartsWith("b".into()),
            },
        ],
    };
    let doc = json!({"text": CORPUS[4], "other": ["x lazy", 3, "lazy"]});
    let query = SearchQuery::And(vec![phrase, SearchQuery::Not(Box::new(word("cat")))]);
    assert_eq!(
        offset_info(&query, &doc, &rules, &Words).unwrap(),
        json!([{"name": ["text"], "offsets": [[22, 10]]}])
    );
    // Array elements are named by index; paths the condition does not name give nothing;
    // an analyzer without offsets gives nothing.
    let other = SearchQuery::Term {
        path: "other".into(),
        analyzer: "words".into(),
        value: SearchValue::String("lazy".into()),
    };
    assert_eq!(
        offset_info(
            &other,
            &doc,
            &[OffsetRule::new("other"), OffsetRule::new("text")],
            &Words
        )
        .unwrap(),
        json!([{"name": ["other", 0], "offsets": [[2, 4]]}, {"name": ["other", 2], "offsets": [[0, 4]]}])
    );
    assert_eq!(
        offset_info(&other, &doc, &[OffsetRule::new("other[2]")], &Words).unwrap(),
        json!([{"name": ["other", 2], "offsets": [[0, 4]]}])
    );
    let identity = term("text", "identity", SearchValue::String(CORPUS[4].into()));
    assert_eq!(
        offset_info(&identity, &doc, &rules, &Words).unwrap(),
        json!([])
    );
    // Caps: maxOffsets and the per-kind limits.
    let capped = OffsetRule {
        max_offsets: 1,
        ..OffsetRule::new("text")
    };
    assert_eq!(
        offset_info(&word("lazy"), &doc, &[capped], &Words).unwrap(),
        json!([{"name": ["text"], "offsets": [[0, 4]]}])
    );
    let no_terms = OffsetRule {
        term_limit: 0,
        ..OffsetRule::new("text")
    };
    assert_eq!(
        offset_info(&word("lazy"), &doc, &[no_terms], &Words).unwrap(),
        json!([])
    );
}

/// Whether `cond` (over attributes of the element path `at`) holds for `element`, read
/// straight from the JSON: the reference of nested search.
fn element_holds(cond: &SearchQuery, at: &str, element: &Value) -> bool {
    let attribute = |path: &str| -> Value {
        let name = path
            .strip_prefix(at)
            .and_then(|r| r.strip_prefix('.'))
            .unwrap();
        element.get(name).cloned().unwrap_or(Value::Null)
    };
    match cond {
        SearchQuery::Term {
            path,
            value: SearchValue::Number(n),
            ..
        } => attribute(path).as_f64() == Some(*n),
        SearchQuery::Term {
            path,
            value: SearchValue::String(s),
            ..
        } => attribute(path).as_str() == Some(s.as_str()),
        SearchQuery::Range {
            path,
            lower: Some((SearchValue::Number(n), false)),
            upper: None,
            ..
        } => attribute(path).as_f64().is_some_and(|v| v > *n),
        SearchQuery::And(list) => list.iter().all(|c| element_holds(c, at, element)),
        SearchQuery::Or(list) => list.iter().any(|c| element_holds(c, at, element)),
        SearchQuery::Not(inner) => !element_holds(inner, at, element),
        SearchQuery::Nested { path, count, cond } => {
            let field = path.strip_suffix("[?]").unwrap();
            let items = match attribute(field) {
                Value::Array(items) => items,
                _ => Vec::new(),
            };
            nested_holds(path, *count, cond, &items)
        }
        other => panic!("no reference for {other:?}"),
    }
}

fn nested_holds(path: &str, count: ElementCount, cond: &SearchQuery, items: &[Value]) -> bool {
    let matched = items
        .iter()
        .filter(|e| element_holds(cond, path, e))
        .count();
    count.holds(matched, items.len())
}

#[test]
fn nested_search_matches_brute_force() {
    let link = LinkDefinition::from_json(&json!({"fields": {"d": {"nested": {
        "a": {}, "s": {}, "m": {"nested": {"c": {}}}}}}}))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (index, _) = ViewIndex::open(dir.path()).unwrap();
    // A small linear congruential generator: the documents are the same on every run.
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = |n: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % n
    };
    let mut docs = BTreeMap::new();
    for i in 0..160 {
        let dims: Vec<Value> = (0..next(5))
            .map(|_| {
                let m: Vec<Value> = (0..next(4)).map(|_| json!({"c": next(3)})).collect();
                let s = ["x", "y"][next(2) as usize];
                json!({"a": next(3), "s": s, "m": m})
            })
            .collect();
        let doc = json!({"_key": format!("k{i}"), "d": dims});
        index
            .put(
                7,
                &format!("k{i}"),
                1,
                document_terms(&doc, &link, &Words),
                &doc,
            )
            .unwrap();
        docs.insert(format!("k{i}"), doc);
        if i == 80 {
            index.commit("{}").unwrap();
        }
    }
    for i in (0..160).step_by(7) {
        index.remove(7, &format!("k{i}"));
        docs.remove(&format!("k{i}"));
    }
    index.commit("{}").unwrap();
    let num = |path: &str, n: f64| term(path, "identity", SearchValue::Number(n));
    let text = |path: &str, s: &str| term(path, "identity", SearchValue::String(s.into()));
    let gt = |path: &str, n: f64| SearchQuery::Range {
        path: path.into(),
        analyzer: "identity".into(),
        lower: Some((SearchValue::Number(n), false)),
        upper: None,
    };
    let inner = |count, cond| SearchQuery::Nested {
        path: "d[?].m[?]".into(),
        count,
        cond: Box::new(cond),
    };
    let between = |min, max| ElementCount::Between { min, max };
    let conditions = [
        SearchQuery::And(vec![num("d[?].a", 1.0), text("d[?].s", "x")]),
        SearchQuery::Or(vec![num("d[?].a", 2.0), text("d[?].s", "y")]),
        SearchQuery::Not(Box::new(text("d[?].s", "x"))),
        gt("d[?].a", 0.0),
        SearchQuery::And(vec![
            text("d[?].s", "y"),
            inner(between(1, None), num("d[?].m[?].c", 2.0)),
        ]),
        inner(ElementCount::All, gt("d[?].m[?].c", 0.0)),
        inner(
            between(2, Some(2)),
            SearchQuery::Not(Box::new(num("d[?].m[?].c", 1.0))),
        ),
    ];
    let counts = [
        between(1, None),
        ElementCount::All,
        between(0, Some(0)),
        between(2, None),
        between(1, Some(2)),
    ];
    for cond in &conditions {
        for count in counts {
            let query = SearchQuery::Nested {
                path: "d[?]".into(),
                count,
                cond: Box::new(cond.clone()),
            };
            let expected: BTreeSet<String> = docs
                .iter()
                .filter(|(_, doc)| nested_holds("d[?]", count, cond, doc["d"].as_array().unwrap()))
                .map(|(k, _)| k.clone())
                .collect();
            assert_eq!(keys(&index, query.clone()), expected, "{query:?}");
        }
    }
}

#[test]
fn prefixes_match_whole_values_of_their_own_field_only() {
    let dir = tempfile::tempdir().unwrap();
    let (index, _) = ViewIndex::open(dir.path()).unwrap();
    let link = LinkDefinition::from_json(&json!({"includeAllFields": true})).unwrap();
    let values = [
        ("a", json!({"s": "c++ code", "t": "c++"})),
        ("b", json!({"s": "c.b", "t": "x"})),
        ("c", json!({"s": "line\nbreak", "t": "c"})),
        ("d", json!({"s": "c", "u": "c++"})),
        ("e", json!({"s": "ĉ accent"})),
    ];
    for (key, doc) in &values {
        index
            .put(1, key, 1, document_terms(doc, &link, &Words), doc)
            .unwrap();
    }
    index.commit("{}").unwrap();
    let prefix = |path: &str, p: &str| {
        let q = SearchQuery::Prefix {
            path: path.into(),
            analyzer: "identity".into(),
            prefix: p.into(),
        };
        keys(&index, q)
    };
    let named = |ks: &[&str]| -> BTreeSet<String> { ks.iter().map(|k| k.to_string()).collect() };
    // Regex metacharacters are plain characters; a value equal to the prefix matches.
    assert_eq!(prefix("s", "c++"), named(&["a"]));
    assert_eq!(prefix("s", "c."), named(&["b"]));
    assert_eq!(prefix("s", "c"), named(&["a", "b", "d"]));
    // Past a line break too (a regex's `.` stops there).
    assert_eq!(prefix("s", "line"), named(&["c"]));
    assert_eq!(prefix("s", "ĉ"), named(&["e"]));
    // The empty prefix: every string value of the field.
    assert_eq!(prefix("s", ""), named(&["a", "b", "c", "d", "e"]));
    // Another field's values never match, nor does a prefix no value has.
    assert_eq!(prefix("t", "c"), named(&["a", "c"]));
    assert_eq!(prefix("u", "c+"), named(&["d"]));
    assert_eq!(prefix("s", "zz"), named(&[]));
    assert_eq!(prefix("nosuch", "c"), named(&[]));
}
