//! `FOR d IN view SEARCH condition OPTIONS {…}`: the EnumerateViewNode and the planning of
//! SEARCH conditions. A condition is kept as a tree over attribute paths of the view variable
//! whose operands are compiled expressions, turned into the index's `SearchQuery` per input
//! row (operands may read outer variables). Scorer calls (`BM25(d)`, `TFIDF(d)`) on the view
//! variable become variables the node fills with each document's score.

use quiver_errors::{Error, ErrorCode, Result};
use quiver_search::index::{
    ExistsKind, GeoFilter, OffsetRule, PhrasePart, PhraseToken, ScoreOrder, Scorer, SearchQuery,
    SearchValue, StoredColumns,
};
use serde_json::{json, Value};

use super::view_nested::{NestedCount, ELEMENT_MARK};
use super::{NodeKind, Plan, Planner};
use crate::ast::{BinOp, Expr, Quantifier, UnaryOp};
use crate::expr::{CExpr, Slot};

/// The analyzer of conditions outside `ANALYZER()`.
const DEFAULT_ANALYZER: &str = "identity";

/// An EnumerateViewNode.
#[derive(Clone, Debug)]
pub struct ViewNode {
    pub out: Slot,
    pub view: String,
    /// None: every document of the view.
    pub condition: Option<SearchCond>,
    /// `OPTIONS {collections: [...]}`.
    pub collections: Option<Vec<String>>,
    /// `OPTIONS {waitForSync: true}`.
    pub wait_for_sync: bool,
    /// Scorers the query reads, each with the variable its score goes to.
    pub scorers: Vec<(Scorer, Slot)>,
    /// `OFFSET_INFO(d, paths)` calls: the paths with the variable each result goes to.
    pub offset_infos: Vec<(Vec<OffsetRule>, Slot)>,
    /// A `SORT` by scorers of this node followed by `LIMIT` (rule
    /// `arangosearch-constrained-sort`): the node produces only the first rows of that order.
    pub scorers_sort: Option<ScorersSort>,
    /// What of each found document the rows carry (rules
    /// `no-document-materialization-arangosearch`, `late-document-materialization-arangosearch`).
    pub materialize: Materialize,
    pub options: Value,
    /// The view's primary sort and stored fields, read when the loop is planned.
    pub columns: StoredColumns,
    /// The loop gives its rows in the order of the view's primary sort (rule
    /// `handle-arangosearch-views`, which removed the SORT that asked for it).
    pub primary_sort: Option<PrimarySortRead>,
    /// At most this many rows per input row are read, the first in the index's order: a
    /// `LIMIT o, n` (without `fullCount`) follows the loop with nothing between but
    /// calculations, so rows past the first o+n are never asked for (part of rule
    /// `handle-arangosearch-views`; `optimizer/view_loop.rs`, `limited_read`).
    pub first: Option<u64>,
}

/// A view loop reading in the order of its view's primary sort: by how many of its fields
/// (the removed SORT's), and how many rows at most (offset + count of the LIMIT after it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrimarySortRead {
    pub buckets: usize,
    pub limit: Option<u64>,
}

/// What a view loop puts into its variable.
#[derive(Clone, Debug, PartialEq)]
pub enum Materialize {
    /// The document, read from the query's snapshot.
    Document,
    /// `{_key, _id}` only (nothing else of the document is read), after checking that the
    /// snapshot holds the document.
    Identity,
    /// `null`: the variable is never read; the snapshot is only asked whether it holds the
    /// document, or the index counts the rows when it can (`Transaction::count_view`).
    Nothing,
    /// An object of the attributes read, taken from the index's primary sort and stored
    /// values (each name with its position in the hit's values; `_key` and `_id` from the
    /// identity), after checking that the snapshot holds the document: no document is read.
    Values(Vec<ViewValue>),
    /// As `Values`, always with `_key` and `_id`; a MaterializeNode after the LIMIT replaces
    /// the variable by the document (late materialization).
    Late(Vec<ViewValue>),
}

/// One top-level attribute a view loop takes from its index: the name, and its position in
/// the hit's values (None: `_key` or `_id`, from the identity).
#[derive(Clone, Debug, PartialEq)]
pub struct ViewValue {
    pub name: String,
    pub position: Option<usize>,
}

/// The best rows of a view loop by its scores: keys (index into the node's scorers,
/// ascending) and how many rows (offset + count of the LIMIT).
#[derive(Clone, Debug, PartialEq)]
pub struct ScorersSort {
    pub order: ScoreOrder,
    pub limit: u64,
}

/// A comparison in a SEARCH condition.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Compare {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// How the element comparisons of an array comparison combine.
#[derive(Clone, Debug)]
pub enum ArrayQuantifier {
    Any,
    All,
    None,
    AtLeast(CExpr),
}

/// A geo function of a SEARCH condition, on a field indexed by a geo analyzer.
#[derive(Clone, Debug)]
pub enum GeoCall {
    /// `GEO_DISTANCE(field, origin) op distance` (either argument order).
    Distance {
        origin: CExpr,
        op: Compare,
        distance: CExpr,
    },
    /// `GEO_IN_RANGE(field, origin, lower, upper, includeLower = true, includeUpper = true)`.
    InRange {
        origin: CExpr,
        lower: CExpr,
        upper: CExpr,
        include_lower: Option<Box<CExpr>>,
        include_upper: Option<Box<CExpr>>,
    },
    /// `GEO_CONTAINS(region, field)` (`field_contains`: `GEO_CONTAINS(field, region)`).
    Contains { region: CExpr, field_contains: bool },
    /// `GEO_INTERSECTS(region, field)` or `GEO_INTERSECTS(field, region)`.
    Intersects { region: CExpr },
}

impl GeoCall {
    fn visit_vars(&self, f: &mut dyn FnMut(Slot)) {
        match self {
            GeoCall::Distance {
                origin, distance, ..
            } => {
                origin.visit_vars(f);
                distance.visit_vars(f);
            }
            GeoCall::InRange {
                origin,
                lower,
                upper,
                include_lower,
                include_upper,
            } => {
                [origin, lower, upper]
                    .into_iter()
                    .chain(include_lower.as_deref())
                    .chain(include_upper.as_deref())
                    .for_each(|e| e.visit_vars(f));
            }
            GeoCall::Contains { region, .. } | GeoCall::Intersects { region } => {
                region.visit_vars(f)
            }
        }
    }

    /// The index condition for one row.
    fn to_query(
        &self,
        path: &str,
        analyzer: &str,
        eval: &mut dyn FnMut(&CExpr) -> Result<Value>,
    ) -> Result<SearchQuery> {
        let geo = |filter: GeoFilter| SearchQuery::Geo {
            path: path.to_string(),
            analyzer: analyzer.to_string(),
            filter,
        };
        let number = |v: Value, what: &str| {
            v.as_f64()
                .ok_or_else(|| type_error(format!("{what} expects a number")))
        };
        Ok(match self {
            GeoCall::Distance {
                origin,
                op,
                distance,
            } => {
                let origin = eval(origin)?;
                let d = number(eval(distance)?, "GEO_DISTANCE() compared with a distance")?;
                let distance = |lower: Option<(f64, bool)>, upper: Option<(f64, bool)>| {
                    geo(GeoFilter::Distance {
                        origin: origin.clone(),
                        lower,
                        upper,
                    })
                };
                match op {
                    Compare::Eq => distance(Some((d, true)), Some((d, true))),
                    Compare::Lt => distance(None, Some((d, false))),
                    Compare::Le => distance(None, Some((d, true))),
                    Compare::Gt => distance(Some((d, false)), None),
                    Compare::Ge => distance(Some((d, true)), None),
                    Compare::Ne => SearchQuery::Or(vec![
                        distance(None, Some((d, false))),
                        distance(Some((d, false)), None),
                    ]),
                }
            }
            GeoCall::InRange {
                origin,
                lower,
                upper,
                include_lower,
                include_upper,
            } => {
                let flag = |e: &Option<Box<CExpr>>,
                            eval: &mut dyn FnMut(&CExpr) -> Result<Value>|
                 -> Result<bool> {
                    match e {
                        None => Ok(true),
                        Some(e) => match eval(e)? {
                            Value::Bool(b) => Ok(b),
                            _ => Err(type_error(
                                "GEO_IN_RANGE() expects booleans for the inclusion flags".into(),
                            )),
                        },
                    }
                };
                let include_lower = flag(include_lower, eval)?;
                let include_upper = flag(include_upper, eval)?;
                geo(GeoFilter::Distance {
                    origin: eval(origin)?,
                    lower: Some((number(eval(lower)?, "GEO_IN_RANGE()")?, include_lower)),
                    upper: Some((number(eval(upper)?, "GEO_IN_RANGE()")?, include_upper)),
                })
            }
            GeoCall::Contains {
                region,
                field_contains,
            } => {
                let region = eval(region)?;
                geo(if *field_contains {
                    GeoFilter::ContainsRegion(region)
                } else {
                    GeoFilter::RegionContains(region)
                })
            }
            GeoCall::Intersects { region } => geo(GeoFilter::Intersects(eval(region)?)),
        })
    }
}

/// A SEARCH condition with compiled operands.
#[derive(Clone, Debug)]
pub enum SearchCond {
    And(Vec<SearchCond>),
    Or(Vec<SearchCond>),
    Not(Box<SearchCond>),
    Boost(Box<SearchCond>, CExpr),
    MinMatch(Vec<SearchCond>, CExpr),
    Compare {
        path: String,
        analyzer: String,
        op: Compare,
        value: CExpr,
    },
    /// `path IN array` (any element equal).
    In {
        path: String,
        analyzer: String,
        values: CExpr,
    },
    /// `path IN low..high`, `IN_RANGE(path, low, high, includeLow, includeHigh)`.
    InRange {
        path: String,
        analyzer: String,
        low: CExpr,
        high: CExpr,
        include_low: CExpr,
        include_high: CExpr,
    },
    Exists {
        path: String,
        kind: Option<CExpr>,
        analyzer: Option<CExpr>,
        context_analyzer: String,
    },
    Phrase {
        path: String,
        analyzer: String,
        parts: Vec<CExpr>,
    },
    StartsWith {
        path: String,
        analyzer: String,
        prefixes: CExpr,
        min_match: Option<CExpr>,
    },
    Like {
        path: String,
        analyzer: String,
        pattern: CExpr,
    },
    Levenshtein {
        path: String,
        analyzer: String,
        target: CExpr,
        distance: CExpr,
        transpositions: Option<CExpr>,
        max_terms: Option<CExpr>,
        prefix: Option<CExpr>,
    },
    NgramMatch {
        path: String,
        analyzer: String,
        target: CExpr,
        threshold: Option<CExpr>,
    },
    MinHashMatch {
        path: String,
        analyzer: String,
        target: CExpr,
        threshold: Option<CExpr>,
    },
    /// `values ANY|ALL|NONE|AT LEAST (n) op path`: each element compared with the field
    /// (`op` from the field's side; `IN` is `==`), the results combined by the quantifier.
    ArrayCompare {
        quantifier: ArrayQuantifier,
        path: String,
        analyzer: String,
        op: Compare,
        values: CExpr,
    },
    /// A geo function on a field indexed by a geo analyzer (`analyzer`).
    Geo {
        path: String,
        analyzer: String,
        call: GeoCall,
    },
    /// A condition not about the view's documents: true matches all, anything else none.
    Constant(CExpr),
    /// `d.field[? count FILTER cond]` over a nested field (`view_nested.rs`): `path` is the
    /// field's element path (`field[?]`), the paths of `cond` are below it.
    Nested {
        path: String,
        count: NestedCount,
        cond: Box<SearchCond>,
    },
}

fn unsupported(what: &str) -> Error {
    Error::with_message(
        ErrorCode::QueryParse,
        format!("AQL: unsupported SEARCH condition: {what} (while parsing)"),
    )
}

fn type_error(message: String) -> Error {
    Error::with_message(ErrorCode::BadParameter, format!("AQL: {message}"))
}

fn search_value(v: &Value) -> Option<SearchValue> {
    match v {
        Value::String(s) => Some(SearchValue::String(s.clone())),
        Value::Number(n) => n.as_f64().map(SearchValue::Number),
        Value::Bool(b) => Some(SearchValue::Bool(*b)),
        Value::Null => Some(SearchValue::Null),
        _ => None,
    }
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

impl SearchCond {
    /// Calls `f` for every slot an operand reads.
    pub fn visit_vars(&self, f: &mut dyn FnMut(Slot)) {
        match self {
            SearchCond::And(list) | SearchCond::Or(list) => {
                list.iter().for_each(|c| c.visit_vars(f))
            }
            SearchCond::Not(c) => c.visit_vars(f),
            SearchCond::Boost(c, e) => {
                c.visit_vars(f);
                e.visit_vars(f);
            }
            SearchCond::MinMatch(list, e) => {
                list.iter().for_each(|c| c.visit_vars(f));
                e.visit_vars(f);
            }
            SearchCond::Compare { value, .. } => value.visit_vars(f),
            SearchCond::In { values, .. } => values.visit_vars(f),
            SearchCond::InRange {
                low,
                high,
                include_low,
                include_high,
                ..
            } => [low, high, include_low, include_high]
                .iter()
                .for_each(|e| e.visit_vars(f)),
            SearchCond::Exists { kind, analyzer, .. } => kind
                .iter()
                .chain(analyzer.iter())
                .for_each(|e| e.visit_vars(f)),
            SearchCond::Phrase { parts, .. } => parts.iter().for_each(|e| e.visit_vars(f)),
            SearchCond::StartsWith {
                prefixes,
                min_match,
                ..
            } => {
                prefixes.visit_vars(f);
                min_match.iter().for_each(|e| e.visit_vars(f));
            }
            SearchCond::Like { pattern, .. } => pattern.visit_vars(f),
            SearchCond::Levenshtein {
                target,
                distance,
                transpositions,
                max_terms,
                prefix,
                ..
            } => {
                target.visit_vars(f);
                distance.visit_vars(f);
                transpositions
                    .iter()
                    .chain(max_terms.iter())
                    .chain(prefix.iter())
                    .for_each(|e| e.visit_vars(f));
            }
            SearchCond::NgramMatch {
                target, threshold, ..
            }
            | SearchCond::MinHashMatch {
                target, threshold, ..
            } => {
                target.visit_vars(f);
                threshold.iter().for_each(|e| e.visit_vars(f));
            }
            SearchCond::ArrayCompare {
                quantifier, values, ..
            } => {
                values.visit_vars(f);
                if let ArrayQuantifier::AtLeast(n) = quantifier {
                    n.visit_vars(f);
                }
            }
            SearchCond::Geo { call, .. } => call.visit_vars(f),
            SearchCond::Constant(e) => e.visit_vars(f),
            SearchCond::Nested { count, cond, .. } => {
                count.visit_vars(f);
                cond.visit_vars(f);
            }
        }
    }

    /// The index query for one input row; `eval` computes an operand.
    pub fn to_query(&self, eval: &mut dyn FnMut(&CExpr) -> Result<Value>) -> Result<SearchQuery> {
        Ok(match self {
            SearchCond::And(list) => SearchQuery::And(
                list.iter()
                    .map(|c| c.to_query(eval))
                    .collect::<Result<_>>()?,
            ),
            SearchCond::Or(list) => SearchQuery::Or(
                list.iter()
                    .map(|c| c.to_query(eval))
                    .collect::<Result<_>>()?,
            ),
            SearchCond::Not(c) => SearchQuery::Not(Box::new(c.to_query(eval)?)),
            SearchCond::Boost(c, e) => {
                let boost = eval(e)?.as_f64().ok_or_else(|| {
                    type_error("BOOST() expects a number as its second argument".into())
                })?;
                SearchQuery::Boost(Box::new(c.to_query(eval)?), boost)
            }
            SearchCond::MinMatch(list, e) => {
                let min = eval(e)?.as_f64().filter(|n| *n >= 0.0).ok_or_else(|| {
                    type_error("MIN_MATCH() expects a non-negative number last".into())
                })?;
                SearchQuery::MinMatch(
                    list.iter()
                        .map(|c| c.to_query(eval))
                        .collect::<Result<_>>()?,
                    min as usize,
                )
            }
            SearchCond::Compare {
                path,
                analyzer,
                op,
                value,
            } => {
                let v = eval(value)?;
                let Some(value) = search_value(&v) else {
                    // Arrays and objects are never indexed values.
                    return Ok(if *op == Compare::Ne {
                        SearchQuery::All
                    } else {
                        SearchQuery::Nothing
                    });
                };
                let bound = |inclusive: bool| Some((value.clone(), inclusive));
                let range = |lower, upper| SearchQuery::Range {
                    path: path.clone(),
                    analyzer: analyzer.clone(),
                    lower,
                    upper,
                };
                let term = SearchQuery::Term {
                    path: path.clone(),
                    analyzer: analyzer.clone(),
                    value: value.clone(),
                };
                match op {
                    Compare::Eq => term,
                    Compare::Ne => SearchQuery::Not(Box::new(term)),
                    Compare::Lt => range(None, bound(false)),
                    Compare::Le => range(None, bound(true)),
                    Compare::Gt => range(bound(false), None),
                    Compare::Ge => range(bound(true), None),
                }
            }
            SearchCond::In {
                path,
                analyzer,
                values,
            } => match eval(values)? {
                Value::Array(items) => SearchQuery::Or(
                    items
                        .iter()
                        .filter_map(search_value)
                        .map(|value| SearchQuery::Term {
                            path: path.clone(),
                            analyzer: analyzer.clone(),
                            value,
                        })
                        .collect(),
                ),
                _ => SearchQuery::Nothing,
            },
            SearchCond::InRange {
                path,
                analyzer,
                low,
                high,
                include_low,
                include_high,
            } => {
                let (lo, hi) = (eval(low)?, eval(high)?);
                let (il, ih) = (truthy(&eval(include_low)?), truthy(&eval(include_high)?));
                let same_kind = matches!(
                    (&lo, &hi),
                    (Value::Number(_), Value::Number(_)) | (Value::String(_), Value::String(_))
                );
                if !same_kind {
                    return Ok(SearchQuery::Nothing);
                }
                SearchQuery::Range {
                    path: path.clone(),
                    analyzer: analyzer.clone(),
                    lower: search_value(&lo).map(|v| (v, il)),
                    upper: search_value(&hi).map(|v| (v, ih)),
                }
            }
            SearchCond::Exists {
                path,
                kind,
                analyzer,
                context_analyzer,
            } => {
                let kind = match kind {
                    None => ExistsKind::Any,
                    Some(k) => match eval(k)? {
                        Value::String(k) => match k.as_str() {
                            "bool" | "boolean" => ExistsKind::Type("bool".into()),
                            "numeric" => ExistsKind::Type("number".into()),
                            "null" => ExistsKind::Type("null".into()),
                            "string" => ExistsKind::Type("string".into()),
                            "analyzer" => {
                                let name = match analyzer {
                                    Some(a) => {
                                        eval(a)?.as_str().map(str::to_string).ok_or_else(|| {
                                            type_error("EXISTS() expects an analyzer name".into())
                                        })?
                                    }
                                    None => context_analyzer.clone(),
                                };
                                ExistsKind::Analyzer(normalize_analyzer(&name))
                            }
                            other => {
                                return Err(type_error(format!("EXISTS(): invalid type '{other}'")))
                            }
                        },
                        _ => return Err(type_error("EXISTS() expects a string type".into())),
                    },
                };
                SearchQuery::Exists {
                    path: path.clone(),
                    kind,
                }
            }
            SearchCond::Phrase {
                path,
                analyzer,
                parts,
            } => {
                let mut values = Vec::with_capacity(parts.len());
                for part in parts {
                    values.push(eval(part)?);
                }
                let out = phrase_parts(values)?;
                SearchQuery::Phrase {
                    path: path.clone(),
                    analyzer: analyzer.clone(),
                    parts: out,
                }
            }
            SearchCond::StartsWith {
                path,
                analyzer,
                prefixes,
                min_match,
            } => {
                let prefixes: Vec<String> = match eval(prefixes)? {
                    Value::String(s) => vec![s],
                    Value::Array(items) => items
                        .into_iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect(),
                    _ => {
                        return Err(type_error(
                            "STARTS_WITH() expects a string or an array of strings".into(),
                        ))
                    }
                };
                let min = match min_match {
                    Some(e) => eval(e)?.as_f64().unwrap_or(1.0).max(0.0) as usize,
                    None => 1,
                };
                let list = prefixes
                    .into_iter()
                    .map(|prefix| SearchQuery::Prefix {
                        path: path.clone(),
                        analyzer: analyzer.clone(),
                        prefix,
                    })
                    .collect();
                SearchQuery::MinMatch(list, min)
            }
            SearchCond::Like {
                path,
                analyzer,
                pattern,
            } => match eval(pattern)? {
                Value::String(pattern) => SearchQuery::Like {
                    path: path.clone(),
                    analyzer: analyzer.clone(),
                    pattern,
                },
                _ => return Err(type_error("LIKE() expects a string pattern".into())),
            },
            SearchCond::Levenshtein {
                path,
                analyzer,
                target,
                distance,
                transpositions,
                max_terms,
                prefix,
            } => {
                let Value::String(target) = eval(target)? else {
                    return Err(type_error(
                        "LEVENSHTEIN_MATCH() expects a string target".into(),
                    ));
                };
                let distance = eval(distance)?.as_f64().unwrap_or(-1.0);
                let transpositions = match transpositions {
                    Some(e) => truthy(&eval(e)?),
                    None => true,
                };
                let max = if transpositions { 3.0 } else { 4.0 };
                if !(0.0..=max).contains(&distance) || distance.fract() != 0.0 {
                    return Err(type_error(format!(
                        "LEVENSHTEIN_MATCH(): the distance must be an integer in [0, {max}]"
                    )));
                }
                let max_terms = match max_terms {
                    None => DEFAULT_LEVENSHTEIN_MAX_TERMS,
                    Some(e) => match eval(e)? {
                        Value::Null => DEFAULT_LEVENSHTEIN_MAX_TERMS,
                        v => v.as_f64().filter(|n| *n >= 0.0).ok_or_else(|| {
                            type_error("LEVENSHTEIN_MATCH(): maxTerms must be a number".into())
                        })? as usize,
                    },
                };
                let prefix = match prefix {
                    None => String::new(),
                    Some(e) => match eval(e)? {
                        Value::Null => String::new(),
                        Value::String(p) => p,
                        _ => {
                            return Err(type_error(
                                "LEVENSHTEIN_MATCH(): the prefix must be a string".into(),
                            ))
                        }
                    },
                };
                SearchQuery::Levenshtein {
                    path: path.clone(),
                    analyzer: analyzer.clone(),
                    target,
                    distance: distance as u8,
                    transpositions,
                    max_terms,
                    prefix,
                }
            }
            SearchCond::NgramMatch {
                path,
                analyzer,
                target,
                threshold,
            } => {
                let Value::String(target) = eval(target)? else {
                    return Err(type_error("NGRAM_MATCH() expects a string target".into()));
                };
                let threshold = match threshold {
                    Some(e) => eval(e)?.as_f64().unwrap_or(-1.0),
                    None => DEFAULT_NGRAM_THRESHOLD,
                };
                if !(threshold > 0.0 && threshold <= 1.0) {
                    return Err(type_error(
                        "NGRAM_MATCH(): the threshold must be a number in (0, 1]".into(),
                    ));
                }
                SearchQuery::NgramMatch {
                    path: path.clone(),
                    analyzer: analyzer.clone(),
                    target,
                    threshold,
                }
            }
            SearchCond::MinHashMatch {
                path,
                analyzer,
                target,
                threshold,
            } => {
                let Value::String(target) = eval(target)? else {
                    return Err(type_error("MINHASH_MATCH() expects a string target".into()));
                };
                let threshold = match threshold {
                    Some(e) => eval(e)?.as_f64().unwrap_or(-1.0),
                    None => DEFAULT_MINHASH_THRESHOLD,
                };
                if !(threshold > 0.0 && threshold <= 1.0) {
                    return Err(type_error(
                        "MINHASH_MATCH(): the threshold must be a number in (0, 1]".into(),
                    ));
                }
                SearchQuery::MinHashMatch {
                    path: path.clone(),
                    analyzer: analyzer.clone(),
                    target,
                    threshold,
                }
            }
            SearchCond::ArrayCompare {
                quantifier,
                path,
                analyzer,
                op,
                values,
            } => {
                let items = match eval(values)? {
                    Value::Array(items) => items,
                    other => vec![other],
                };
                let mut list = Vec::with_capacity(items.len());
                for item in items {
                    let compare = SearchCond::Compare {
                        path: path.clone(),
                        analyzer: analyzer.clone(),
                        op: *op,
                        value: CExpr::Const(item),
                    };
                    list.push(compare.to_query(eval)?);
                }
                match quantifier {
                    ArrayQuantifier::Any => SearchQuery::Or(list),
                    ArrayQuantifier::All => SearchQuery::And(list),
                    ArrayQuantifier::None => SearchQuery::Not(Box::new(SearchQuery::Or(list))),
                    ArrayQuantifier::AtLeast(n) => {
                        let min = eval(n)?.as_f64().filter(|n| *n >= 0.0).ok_or_else(|| {
                            type_error("AT LEAST expects a non-negative number".into())
                        })?;
                        SearchQuery::MinMatch(list, min as usize)
                    }
                }
            }
            SearchCond::Geo {
                path,
                analyzer,
                call,
            } => call.to_query(path, analyzer, eval)?,
            SearchCond::Constant(e) => {
                if truthy(&eval(e)?) {
                    SearchQuery::All
                } else {
                    SearchQuery::Nothing
                }
            }
            SearchCond::Nested { path, count, cond } => match count.to_count(eval)? {
                Some(count) => SearchQuery::Nested {
                    path: path.clone(),
                    count,
                    cond: Box::new(cond.to_query(eval)?),
                },
                None => SearchQuery::Nothing,
            },
        })
    }
}

/// The parts of `PHRASE(path, part, …)`: strings (analyzed), skip counts, object tokens and
/// arrays of these (an array inside an array is a set of alternatives, analyzed).
fn phrase_parts(values: Vec<Value>) -> Result<Vec<PhrasePart>> {
    let mut flat = Vec::new();
    for value in values {
        match value {
            Value::Array(items) => flat.extend(items.into_iter().map(|v| (v, true))),
            v => flat.push((v, false)),
        }
    }
    let mut out = Vec::new();
    let mut skip = 0i64;
    for (value, in_array) in flat {
        let token =
            match value {
                Value::String(text) => PhraseToken::Text(text),
                Value::Number(n) => {
                    let n = n.as_f64().unwrap_or(f64::NAN);
                    if n.fract() != 0.0 || n.abs() > u32::MAX as f64 {
                        return Err(type_error("PHRASE(): skip counts must be integers".into()));
                    }
                    skip = skip.saturating_add(n as i64);
                    continue;
                }
                Value::Array(items) if in_array => {
                    PhraseToken::AnalyzedTerms(phrase_strings(&Value::Array(items), "TERMS")?)
                }
                Value::Object(object) => phrase_object(object)?,
                _ => return Err(type_error(
                    "PHRASE(): phrase parts must be strings, skip counts, arrays or object tokens"
                        .into(),
                )),
            };
        out.push(PhrasePart { skip, token });
        skip = 0;
    }
    Ok(out)
}

/// A string or an array of strings (an object token's argument).
fn phrase_strings(value: &Value, what: &str) -> Result<Vec<String>> {
    let bad = || type_error(format!("PHRASE(): {what} expects strings"));
    match value {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string).ok_or_else(bad))
            .collect(),
        _ => Err(bad()),
    }
}

/// One string, bare or as the only element of an array (`{TERM: "a"}`, `{TERM: ["a"]}`).
fn phrase_string(value: &Value, what: &str) -> Result<String> {
    match phrase_strings(value, what)?.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(type_error(format!("PHRASE(): {what} expects one string"))),
    }
}

/// ArangoDB's object tokens of PHRASE: `{TERM}`, `{TERMS}`, `{STARTS_WITH}`, `{WILDCARD}`,
/// `{LEVENSHTEIN_MATCH: [target, distance, transpositions, maxTerms, prefix]}`,
/// `{IN_RANGE: [low, high, includeLow, includeHigh]}`; the analyzer is not applied.
fn phrase_object(object: serde_json::Map<String, Value>) -> Result<PhraseToken> {
    let mut entries = object.into_iter();
    let (Some((kind, arg)), None) = (entries.next(), entries.next()) else {
        return Err(type_error(
            "PHRASE(): an object token has exactly one attribute".into(),
        ));
    };
    Ok(match kind.as_str() {
        "TERM" => PhraseToken::Terms(vec![phrase_string(&arg, "TERM")?]),
        "TERMS" => PhraseToken::Terms(phrase_strings(&arg, "TERMS")?),
        "STARTS_WITH" => PhraseToken::StartsWith(phrase_string(&arg, "STARTS_WITH")?),
        "WILDCARD" => PhraseToken::Wildcard(phrase_string(&arg, "WILDCARD")?),
        "LEVENSHTEIN_MATCH" => {
            let args = arg.as_array().map(Vec::as_slice).unwrap_or_default();
            let (Some(Value::String(target)), Some(distance)) = (args.first(), args.get(1))
            else {
                return Err(type_error(
                    "PHRASE(): LEVENSHTEIN_MATCH expects [target, maxDistance, …]".into(),
                ));
            };
            let transpositions = args.get(2).is_none_or(truthy);
            let max = if transpositions { 3.0 } else { 4.0 };
            let distance = distance.as_f64().unwrap_or(-1.0);
            if !(0.0..=max).contains(&distance) || distance.fract() != 0.0 {
                return Err(type_error(format!(
                    "PHRASE(): the LEVENSHTEIN_MATCH distance must be an integer in [0, {max}]"
                )));
            }
            let max_terms = match args.get(3) {
                None | Some(Value::Null) => DEFAULT_LEVENSHTEIN_MAX_TERMS,
                Some(v) => v.as_f64().filter(|n| *n >= 0.0).ok_or_else(|| {
                    type_error("PHRASE(): LEVENSHTEIN_MATCH maxTerms must be a number".into())
                })? as usize,
            };
            let prefix = match args.get(4) {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(p)) => p.clone(),
                Some(_) => {
                    return Err(type_error(
                        "PHRASE(): LEVENSHTEIN_MATCH prefix must be a string".into(),
                    ))
                }
            };
            PhraseToken::Levenshtein {
                target: target.clone(),
                distance: distance as u8,
                transpositions,
                max_terms,
                prefix,
            }
        }
        "IN_RANGE" => match arg.as_array().map(Vec::as_slice) {
            Some([Value::String(low), Value::String(high), include_low, include_high]) => {
                PhraseToken::InRange {
                    low: low.clone(),
                    high: high.clone(),
                    include_low: truthy(include_low),
                    include_high: truthy(include_high),
                }
            }
            _ => {
                return Err(type_error(
                    "PHRASE(): IN_RANGE expects [low, high, includeLow, includeHigh] with string bounds"
                        .into(),
                ))
            }
        },
        other => {
            return Err(type_error(format!(
                "PHRASE(): unknown object token '{other}'"
            )))
        }
    })
}

/// The paths of `OFFSET_INFO(d, paths)`: a string, an array of strings, or rules
/// `{name, options: {maxOffsets, limits: {term, phrase, ngram}}}`.
fn offset_rules(value: &Value) -> Result<Vec<OffsetRule>> {
    let bad = || {
        type_error("OFFSET_INFO() expects a path, an array of paths or an array of rules".into())
    };
    let count = |v: Option<&Value>, default: usize| -> Result<usize> {
        match v {
            None | Some(Value::Null) => Ok(default),
            Some(v) => v
                .as_f64()
                .filter(|n| *n >= 0.0)
                .map(|n| n.min(u32::MAX as f64) as usize)
                .ok_or_else(bad),
        }
    };
    let rule = |v: &Value| -> Result<OffsetRule> {
        match v {
            Value::String(path) => Ok(OffsetRule::new(path)),
            Value::Object(obj) => {
                let Some(Value::String(path)) = obj.get("name") else {
                    return Err(bad());
                };
                let mut rule = OffsetRule::new(path);
                let options = obj.get("options");
                let limits = options.and_then(|o| o.get("limits"));
                rule.max_offsets =
                    count(options.and_then(|o| o.get("maxOffsets")), rule.max_offsets)?;
                rule.term_limit = count(limits.and_then(|l| l.get("term")), rule.term_limit)?;
                rule.phrase_limit = count(limits.and_then(|l| l.get("phrase")), rule.phrase_limit)?;
                rule.ngram_limit = count(limits.and_then(|l| l.get("ngram")), rule.ngram_limit)?;
                Ok(rule)
            }
            _ => Err(bad()),
        }
    };
    match value {
        Value::String(_) => Ok(vec![rule(value)?]),
        Value::Array(items) => items.iter().map(rule).collect(),
        _ => Err(bad()),
    }
}

/// ArangoDB's `maxTerms` of `LEVENSHTEIN_MATCH` when none is given.
const DEFAULT_LEVENSHTEIN_MAX_TERMS: usize = 64;

/// The threshold of `MINHASH_MATCH()` when none is given: every signature token.
const DEFAULT_MINHASH_THRESHOLD: f64 = 1.0;

/// ArangoDB's threshold of `NGRAM_MATCH()` when none is given.
const DEFAULT_NGRAM_THRESHOLD: f64 = 0.7;

/// `::name` is `name` of the current database (links store names the same way).
fn normalize_analyzer(name: &str) -> String {
    name.strip_prefix("::").unwrap_or(name).to_string()
}

/// The scorer a call names, with its constant arguments (`BM25(d, k, b)`, `TFIDF(d, norms)`).
fn scorer_of(name: &str, args: &[Value]) -> Result<Scorer> {
    let num = |i: usize, default: f64| -> Result<f64> {
        match args.get(i) {
            None => Ok(default),
            Some(v) => v.as_f64().ok_or_else(|| {
                type_error(format!("{name}(): argument {} must be a number", i + 2))
            }),
        }
    };
    match name {
        "BM25" => Ok(Scorer::Bm25 {
            k: num(0, 1.2)?,
            b: num(1, 0.75)?,
        }),
        _ => Ok(Scorer::Tfidf {
            with_norms: match args.first() {
                None => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err(type_error("TFIDF(): withNorms must be a boolean".into())),
            },
        }),
    }
}

impl Planner<'_> {
    /// Plans `FOR var IN view [SEARCH cond] [OPTIONS …]`.
    pub(super) fn plan_view(
        &mut self,
        var: &str,
        view: String,
        search: Option<&Expr>,
        options: Option<&Expr>,
        plan: &mut Plan,
    ) -> Result<()> {
        let mut collections = None;
        let mut wait_for_sync = false;
        let mut options_json = json!({});
        if let Some(options) = options {
            let value = self.constant(options, plan, "OPTIONS")?;
            if let Some(obj) = value.as_object() {
                if let Some(list) = obj.get("collections").filter(|v| !v.is_null()) {
                    let Some(items) = list.as_array() else {
                        return Err(type_error(
                            "SEARCH option 'collections' must be an array".into(),
                        ));
                    };
                    let mut names = Vec::with_capacity(items.len());
                    for item in items {
                        let Some(name) = item.as_str() else {
                            return Err(type_error(
                                "SEARCH option 'collections' must name collections".into(),
                            ));
                        };
                        names.push(name.to_string());
                    }
                    collections = Some(names);
                }
                wait_for_sync = obj.get("waitForSync").is_some_and(truthy);
            }
            options_json = value;
        }
        let columns = self.txn.view_stored_columns(&view)?;
        self.mark_loop();
        let out = self.declare(var)?;
        let condition = match search {
            None => None,
            Some(e) => Some(self.search_cond(e, out, DEFAULT_ANALYZER, plan)?),
        };
        self.view_vars.push((out, self.next_id));
        self.node(
            plan,
            NodeKind::EnumerateView(Box::new(ViewNode {
                out,
                view,
                condition,
                collections,
                wait_for_sync,
                scorers: Vec::new(),
                offset_infos: Vec::new(),
                scorers_sort: None,
                materialize: Materialize::Document,
                options: options_json,
                columns,
                primary_sort: None,
                first: None,
            })),
        );
        Ok(())
    }

    /// The attribute path `e` names below the view variable (`d.a.b` → `a.b`, `d.a[1]` →
    /// `a[1]`), None for anything else.
    pub(super) fn view_path(&self, e: &Expr, view: Slot) -> Option<String> {
        match e {
            Expr::Name(n) => (self.lookup_var(n) == Some(view)).then(String::new),
            Expr::Attribute(inner, name) => {
                let base = self.view_path(inner, view)?;
                Some(if base.is_empty() {
                    name.clone()
                } else {
                    format!("{base}.{name}")
                })
            }
            Expr::Index(inner, index) => {
                let base = self.view_path(inner, view)?;
                match &**index {
                    // The element of a nested condition (`view_nested.rs`).
                    Expr::Literal(Value::String(mark))
                        if mark == ELEMENT_MARK && !base.is_empty() =>
                    {
                        Some(format!("{base}{ELEMENT_MARK}"))
                    }
                    Expr::Literal(Value::String(name)) => Some(if base.is_empty() {
                        name.clone()
                    } else {
                        format!("{base}.{name}")
                    }),
                    Expr::Literal(Value::Number(n)) if !base.is_empty() => {
                        n.as_u64().map(|i| format!("{base}[{i}]"))
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    fn field_path(&self, e: &Expr, view: Slot, what: &str) -> Result<String> {
        match self.view_path(e, view) {
            Some(p) if !p.is_empty() => Ok(p),
            _ => Err(unsupported(&format!(
                "the first argument of {what} must be an attribute of the view variable"
            ))),
        }
    }

    fn mentions(&mut self, e: &Expr, view: Slot, plan: &mut Plan) -> Result<(bool, CExpr)> {
        let compiled = self.compile(e, plan)?;
        let mut found = false;
        compiled.visit_vars(&mut |s| found |= s == view);
        Ok((found, compiled))
    }

    pub(super) fn operand(&mut self, e: &Expr, view: Slot, plan: &mut Plan) -> Result<CExpr> {
        let (found, compiled) = self.mentions(e, view, plan)?;
        if found {
            return Err(unsupported("an operand refers to the view variable"));
        }
        Ok(compiled)
    }

    pub(super) fn search_cond(
        &mut self,
        e: &Expr,
        view: Slot,
        analyzer: &str,
        plan: &mut Plan,
    ) -> Result<SearchCond> {
        if let Some(nested) = self.nested_cond(e, view, analyzer, plan)? {
            return Ok(nested);
        }
        match e {
            Expr::Binary(BinOp::And, a, b) => Ok(SearchCond::And(vec![
                self.search_cond(a, view, analyzer, plan)?,
                self.search_cond(b, view, analyzer, plan)?,
            ])),
            Expr::Binary(BinOp::Or, a, b) => Ok(SearchCond::Or(vec![
                self.search_cond(a, view, analyzer, plan)?,
                self.search_cond(b, view, analyzer, plan)?,
            ])),
            Expr::Unary(UnaryOp::Not, a) => Ok(SearchCond::Not(Box::new(
                self.search_cond(a, view, analyzer, plan)?,
            ))),
            Expr::Binary(
                op @ (BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge),
                l,
                r,
            ) => {
                let cmp = |op: BinOp, flipped: bool| match (op, flipped) {
                    (BinOp::Eq, _) => Compare::Eq,
                    (BinOp::Ne, _) => Compare::Ne,
                    (BinOp::Lt, false) | (BinOp::Gt, true) => Compare::Lt,
                    (BinOp::Le, false) | (BinOp::Ge, true) => Compare::Le,
                    (BinOp::Gt, false) | (BinOp::Lt, true) => Compare::Gt,
                    _ => Compare::Ge,
                };
                for (side, other, flipped) in [(l, r, false), (r, l, true)] {
                    if let Some(cond) = self.geo_distance_compare(
                        side,
                        other,
                        cmp(*op, flipped),
                        view,
                        analyzer,
                        plan,
                    )? {
                        return Ok(cond);
                    }
                }
                let (path, value, op) = match (self.view_path(l, view), self.view_path(r, view)) {
                    (Some(p), _) if !p.is_empty() => (p, r, cmp(*op, false)),
                    (_, Some(p)) if !p.is_empty() => (p, l, cmp(*op, true)),
                    _ => return self.constant_cond(e, view, plan),
                };
                Ok(SearchCond::Compare {
                    path,
                    analyzer: analyzer.to_string(),
                    op,
                    value: self.operand(value, view, plan)?,
                })
            }
            Expr::ArrayCompare(_, op, values, field) | Expr::ArrayAtLeast(_, op, values, field)
                if self.view_path(field, view).is_some_and(|p| !p.is_empty()) =>
            {
                let path = self.view_path(field, view).unwrap_or_default();
                // `element op field` seen from the field.
                let op = match op {
                    BinOp::Eq | BinOp::In => Compare::Eq,
                    BinOp::Ne | BinOp::NotIn => Compare::Ne,
                    BinOp::Lt => Compare::Gt,
                    BinOp::Le => Compare::Ge,
                    BinOp::Gt => Compare::Lt,
                    BinOp::Ge => Compare::Le,
                    _ => return self.constant_cond(e, view, plan),
                };
                let quantifier = match e {
                    Expr::ArrayCompare(Quantifier::Any, ..) => ArrayQuantifier::Any,
                    Expr::ArrayCompare(Quantifier::All, ..) => ArrayQuantifier::All,
                    Expr::ArrayCompare(Quantifier::None, ..) => ArrayQuantifier::None,
                    Expr::ArrayAtLeast(n, ..) => {
                        ArrayQuantifier::AtLeast(self.operand(n, view, plan)?)
                    }
                    _ => return self.constant_cond(e, view, plan),
                };
                Ok(SearchCond::ArrayCompare {
                    quantifier,
                    path,
                    analyzer: analyzer.to_string(),
                    op,
                    values: self.operand(values, view, plan)?,
                })
            }
            Expr::Binary(op @ (BinOp::In | BinOp::NotIn), l, r) => {
                let Some(path) = self.view_path(l, view).filter(|p| !p.is_empty()) else {
                    return self.constant_cond(e, view, plan);
                };
                let cond = if let Expr::Range(lo, hi) = &**r {
                    let yes = CExpr::Const(Value::Bool(true));
                    SearchCond::InRange {
                        path,
                        analyzer: analyzer.to_string(),
                        low: self.operand(lo, view, plan)?,
                        high: self.operand(hi, view, plan)?,
                        include_low: yes.clone(),
                        include_high: yes,
                    }
                } else {
                    SearchCond::In {
                        path,
                        analyzer: analyzer.to_string(),
                        values: self.operand(r, view, plan)?,
                    }
                };
                Ok(if *op == BinOp::NotIn {
                    SearchCond::Not(Box::new(cond))
                } else {
                    cond
                })
            }
            Expr::Binary(op @ (BinOp::Like | BinOp::NotLike), l, r) => {
                let Some(path) = self.view_path(l, view).filter(|p| !p.is_empty()) else {
                    return self.constant_cond(e, view, plan);
                };
                let cond = SearchCond::Like {
                    path,
                    analyzer: analyzer.to_string(),
                    pattern: self.operand(r, view, plan)?,
                };
                Ok(if *op == BinOp::NotLike {
                    SearchCond::Not(Box::new(cond))
                } else {
                    cond
                })
            }
            Expr::Call(name, args) => {
                self.search_call(e, &name.to_ascii_uppercase(), args, view, analyzer, plan)
            }
            _ => self.constant_cond(e, view, plan),
        }
    }

    /// The field and the other operand of a geo function whose first two arguments are an
    /// attribute of the view variable and a value (in either order).
    fn geo_operands(
        &mut self,
        args: &[Expr],
        view: Slot,
        plan: &mut Plan,
        what: &str,
    ) -> Result<(String, CExpr)> {
        let is_field = |me: &Self, e: &Expr| me.view_path(e, view).filter(|p| !p.is_empty());
        let (path, other) = match (is_field(self, &args[0]), is_field(self, &args[1])) {
            (Some(path), _) => (path, &args[1]),
            (None, Some(path)) => (path, &args[0]),
            (None, None) => {
                return Err(unsupported(&format!(
                    "one of the first two arguments of {what} must be an attribute of the view \
                     variable"
                )))
            }
        };
        Ok((path, self.operand(other, view, plan)?))
    }

    /// `GEO_DISTANCE(field, origin) op distance` seen from the call (`call` the call,
    /// `distance` the other side of the comparison).
    fn geo_distance_compare(
        &mut self,
        call: &Expr,
        distance: &Expr,
        op: Compare,
        view: Slot,
        analyzer: &str,
        plan: &mut Plan,
    ) -> Result<Option<SearchCond>> {
        let Expr::Call(name, args) = call else {
            return Ok(None);
        };
        if !name.eq_ignore_ascii_case("GEO_DISTANCE") || args.len() != 2 {
            return Ok(None);
        }
        let mentions_view = |me: &Self, e: &Expr| me.view_path(e, view).is_some();
        if !mentions_view(self, &args[0]) && !mentions_view(self, &args[1]) {
            return Ok(None);
        }
        let (path, origin) = self.geo_operands(args, view, plan, "GEO_DISTANCE()")?;
        Ok(Some(SearchCond::Geo {
            path,
            analyzer: analyzer.to_string(),
            call: GeoCall::Distance {
                origin,
                op,
                distance: self.operand(distance, view, plan)?,
            },
        }))
    }

    fn constant_cond(&mut self, e: &Expr, view: Slot, plan: &mut Plan) -> Result<SearchCond> {
        let (found, compiled) = self.mentions(e, view, plan)?;
        if found {
            return Err(unsupported(
                "this expression cannot be answered by the view's index",
            ));
        }
        Ok(SearchCond::Constant(compiled))
    }

    fn search_call(
        &mut self,
        e: &Expr,
        name: &str,
        args: &[Expr],
        view: Slot,
        analyzer: &str,
        plan: &mut Plan,
    ) -> Result<SearchCond> {
        let arity = |min: usize, max: usize| -> Result<()> {
            if args.len() < min || args.len() > max {
                return Err(Error::with_message(
                    ErrorCode::QueryFunctionArgumentNumberMismatch,
                    format!("AQL: invalid number of arguments for function '{name}()', expected number of arguments: minimum: {min}, maximum: {max} (while parsing)"),
                ));
            }
            Ok(())
        };
        match name {
            "ANALYZER" => {
                arity(2, 2)?;
                let Value::String(a) = self.constant(&args[1], plan, "ANALYZER() analyzer")? else {
                    return Err(type_error("ANALYZER() expects an analyzer name".into()));
                };
                self.search_cond(&args[0], view, &normalize_analyzer(&a), plan)
            }
            "BOOST" => {
                arity(2, 2)?;
                let inner = self.search_cond(&args[0], view, analyzer, plan)?;
                Ok(SearchCond::Boost(
                    Box::new(inner),
                    self.operand(&args[1], view, plan)?,
                ))
            }
            "MIN_MATCH" => {
                arity(2, 1024)?;
                let (conds, count) = args.split_at(args.len() - 1);
                let mut list = Vec::with_capacity(conds.len());
                for c in conds {
                    list.push(self.search_cond(c, view, analyzer, plan)?);
                }
                Ok(SearchCond::MinMatch(
                    list,
                    self.operand(&count[0], view, plan)?,
                ))
            }
            "EXISTS" => {
                arity(1, 3)?;
                let path = self.field_path(&args[0], view, "EXISTS()")?;
                let kind = match args.get(1) {
                    Some(k) => Some(self.operand(k, view, plan)?),
                    None => None,
                };
                let analyzer_arg = match args.get(2) {
                    Some(a) => Some(self.operand(a, view, plan)?),
                    None => None,
                };
                Ok(SearchCond::Exists {
                    path,
                    kind,
                    analyzer: analyzer_arg,
                    context_analyzer: analyzer.to_string(),
                })
            }
            "IN_RANGE" => {
                arity(5, 5)?;
                let path = self.field_path(&args[0], view, "IN_RANGE()")?;
                Ok(SearchCond::InRange {
                    path,
                    analyzer: analyzer.to_string(),
                    low: self.operand(&args[1], view, plan)?,
                    high: self.operand(&args[2], view, plan)?,
                    include_low: self.operand(&args[3], view, plan)?,
                    include_high: self.operand(&args[4], view, plan)?,
                })
            }
            "PHRASE" => {
                arity(2, 1024)?;
                let path = self.field_path(&args[0], view, "PHRASE()")?;
                let rest = &args[1..];
                // An even number of arguments after the path ends with the analyzer.
                let (parts, phrase_analyzer) = if rest.len() >= 2 && rest.len() % 2 == 0 {
                    let Value::String(a) =
                        self.constant(&rest[rest.len() - 1], plan, "PHRASE() analyzer")?
                    else {
                        return Err(type_error("PHRASE() expects an analyzer name last".into()));
                    };
                    (&rest[..rest.len() - 1], normalize_analyzer(&a))
                } else {
                    (rest, analyzer.to_string())
                };
                let mut compiled = Vec::with_capacity(parts.len());
                for p in parts {
                    compiled.push(self.operand(p, view, plan)?);
                }
                Ok(SearchCond::Phrase {
                    path,
                    analyzer: phrase_analyzer,
                    parts: compiled,
                })
            }
            "STARTS_WITH" => {
                arity(2, 3)?;
                let path = self.field_path(&args[0], view, "STARTS_WITH()")?;
                Ok(SearchCond::StartsWith {
                    path,
                    analyzer: analyzer.to_string(),
                    prefixes: self.operand(&args[1], view, plan)?,
                    min_match: match args.get(2) {
                        Some(m) => Some(self.operand(m, view, plan)?),
                        None => None,
                    },
                })
            }
            "LIKE" => {
                arity(2, 3)?;
                let path = self.field_path(&args[0], view, "LIKE()")?;
                Ok(SearchCond::Like {
                    path,
                    analyzer: analyzer.to_string(),
                    pattern: self.operand(&args[1], view, plan)?,
                })
            }
            "LEVENSHTEIN_MATCH" => {
                arity(3, 6)?;
                let path = self.field_path(&args[0], view, "LEVENSHTEIN_MATCH()")?;
                Ok(SearchCond::Levenshtein {
                    path,
                    analyzer: analyzer.to_string(),
                    target: self.operand(&args[1], view, plan)?,
                    distance: self.operand(&args[2], view, plan)?,
                    transpositions: match args.get(3) {
                        Some(t) => Some(self.operand(t, view, plan)?),
                        None => None,
                    },
                    max_terms: match args.get(4) {
                        Some(m) => Some(self.operand(m, view, plan)?),
                        None => None,
                    },
                    prefix: match args.get(5) {
                        Some(p) => Some(self.operand(p, view, plan)?),
                        None => None,
                    },
                })
            }
            "GEO_IN_RANGE" => {
                arity(4, 6)?;
                let (path, origin) = self.geo_operands(args, view, plan, "GEO_IN_RANGE()")?;
                Ok(SearchCond::Geo {
                    path,
                    analyzer: analyzer.to_string(),
                    call: GeoCall::InRange {
                        origin,
                        lower: self.operand(&args[2], view, plan)?,
                        upper: self.operand(&args[3], view, plan)?,
                        include_lower: match args.get(4) {
                            Some(e) => Some(Box::new(self.operand(e, view, plan)?)),
                            None => None,
                        },
                        include_upper: match args.get(5) {
                            Some(e) => Some(Box::new(self.operand(e, view, plan)?)),
                            None => None,
                        },
                    },
                })
            }
            "GEO_CONTAINS" | "GEO_INTERSECTS" => {
                arity(2, 2)?;
                let field_first = self
                    .view_path(&args[0], view)
                    .is_some_and(|p| !p.is_empty());
                let (path, region) = self.geo_operands(args, view, plan, name)?;
                Ok(SearchCond::Geo {
                    path,
                    analyzer: analyzer.to_string(),
                    call: if name == "GEO_CONTAINS" {
                        GeoCall::Contains {
                            region,
                            field_contains: field_first,
                        }
                    } else {
                        GeoCall::Intersects { region }
                    },
                })
            }
            "MINHASH_MATCH" => {
                arity(3, 4)?;
                let path = self.field_path(&args[0], view, "MINHASH_MATCH()")?;
                let target = self.operand(&args[1], view, plan)?;
                // (path, target, threshold, analyzer) or (path, target, analyzer).
                let (threshold, analyzer_arg) = match &args[2..] {
                    [analyzer] => (None, analyzer),
                    [threshold, analyzer, ..] => (Some(threshold), analyzer),
                    [] => unreachable!("arity checked"),
                };
                let Value::String(name) =
                    self.constant(analyzer_arg, plan, "MINHASH_MATCH() analyzer")?
                else {
                    return Err(type_error(
                        "MINHASH_MATCH() expects an analyzer name last".into(),
                    ));
                };
                let threshold = match threshold {
                    Some(t) => Some(self.operand(t, view, plan)?),
                    None => None,
                };
                Ok(SearchCond::MinHashMatch {
                    path,
                    analyzer: normalize_analyzer(&name),
                    target,
                    threshold,
                })
            }
            "NGRAM_MATCH" => {
                arity(2, 4)?;
                let path = self.field_path(&args[0], view, "NGRAM_MATCH()")?;
                let target = self.operand(&args[1], view, plan)?;
                // (path, target, threshold?, analyzer?): a string third argument is the
                // analyzer; without one the analyzer in force (ANALYZER()) applies.
                let constant_string = |arg: &Expr| matches!(arg, Expr::Literal(Value::String(_)));
                let (threshold, analyzer_arg) = match &args[2..] {
                    [] => (None, None),
                    [third] if constant_string(third) => (None, Some(third)),
                    [third] => (Some(third), None),
                    [third, fourth, ..] => (Some(third), Some(fourth)),
                };
                let analyzer = match analyzer_arg {
                    Some(a) => {
                        let Value::String(a) = self.constant(a, plan, "NGRAM_MATCH() analyzer")?
                        else {
                            return Err(type_error(
                                "NGRAM_MATCH() expects an analyzer name last".into(),
                            ));
                        };
                        normalize_analyzer(&a)
                    }
                    None => analyzer.to_string(),
                };
                let threshold = match threshold {
                    Some(t) => Some(self.operand(t, view, plan)?),
                    None => None,
                };
                Ok(SearchCond::NgramMatch {
                    path,
                    analyzer,
                    target,
                    threshold,
                })
            }
            _ => self.constant_cond(e, view, plan),
        }
    }

    /// `OFFSET_INFO(d, paths)` on a view variable of this plan: the variable the view node
    /// fills with each document's offsets. `paths`: a string, an array of strings, or an
    /// array of `{name, options: {maxOffsets, limits: {term, phrase, ngram}}}`, constant.
    pub(super) fn offset_info_call(
        &mut self,
        name: &str,
        args: &[Expr],
        plan: &mut Plan,
    ) -> Result<Option<CExpr>> {
        if !name.eq_ignore_ascii_case("OFFSET_INFO") {
            return Ok(None);
        }
        if args.len() != 2 {
            return Err(Error::with_message(
                ErrorCode::QueryFunctionArgumentNumberMismatch,
                "AQL: invalid number of arguments for function 'OFFSET_INFO()', expected number of arguments: minimum: 2, maximum: 2 (while parsing)",
            ));
        }
        let target = match &args[0] {
            Expr::Name(n) => self.lookup_var(n),
            _ => None,
        };
        let Some((_, node_id)) =
            target.and_then(|slot| self.view_vars.iter().find(|(s, _)| *s == slot).copied())
        else {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                "AQL: OFFSET_INFO() must be called on the variable of a view loop (FOR d IN view SEARCH …)",
            ));
        };
        let rules = offset_rules(&self.constant(&args[1], plan, "OFFSET_INFO() paths")?)?;
        let slot = self.temp();
        let Some(node) = plan.nodes.iter_mut().find(|n| n.id == node_id) else {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                "AQL: OFFSET_INFO() must be used in the same (sub)query as its view loop",
            ));
        };
        let NodeKind::EnumerateView(v) = &mut node.kind else {
            return Err(Error::with_message(
                ErrorCode::Internal,
                "OFFSET_INFO() target is not a view node",
            ));
        };
        v.offset_infos.push((rules, slot));
        Ok(Some(CExpr::Var(slot)))
    }

    /// `BM25(d, …)` / `TFIDF(d, …)` on a view variable of this plan: the variable the view
    /// node fills with the score. None when `name` is not a scorer.
    pub(super) fn scorer_call(
        &mut self,
        name: &str,
        args: &[Expr],
        plan: &mut Plan,
    ) -> Result<Option<CExpr>> {
        let upper = name.to_ascii_uppercase();
        if upper != "BM25" && upper != "TFIDF" {
            return Ok(None);
        }
        let max = if upper == "BM25" { 3 } else { 2 };
        if args.is_empty() || args.len() > max {
            return Err(Error::with_message(
                ErrorCode::QueryFunctionArgumentNumberMismatch,
                format!("AQL: invalid number of arguments for function '{upper}()', expected number of arguments: minimum: 1, maximum: {max} (while parsing)"),
            ));
        }
        let target = match &args[0] {
            Expr::Name(n) => self.lookup_var(n),
            _ => None,
        };
        let Some((_, node_id)) =
            target.and_then(|slot| self.view_vars.iter().find(|(s, _)| *s == slot).copied())
        else {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                format!("AQL: {upper}() must be called on the variable of a view loop (FOR d IN view SEARCH …)"),
            ));
        };
        let mut constants = Vec::with_capacity(args.len() - 1);
        for a in &args[1..] {
            constants.push(self.constant(a, plan, "a scorer argument")?);
        }
        let scorer = scorer_of(&upper, &constants)?;
        let slot = self.temp();
        let Some(node) = plan.nodes.iter_mut().find(|n| n.id == node_id) else {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                format!("AQL: {upper}() must be used in the same (sub)query as its view loop"),
            ));
        };
        let NodeKind::EnumerateView(v) = &mut node.kind else {
            return Err(Error::with_message(
                ErrorCode::Internal,
                "scorer target is not a view node",
            ));
        };
        if let Some((_, existing)) = v.scorers.iter().find(|(s, _)| *s == scorer) {
            return Ok(Some(CExpr::Var(*existing)));
        }
        v.scorers.push((scorer, slot));
        Ok(Some(CExpr::Var(slot)))
    }
}
