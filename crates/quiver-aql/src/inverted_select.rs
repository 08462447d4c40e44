//! Inverted indexes in rule `use-indexes`: a collection loop whose `OPTIONS {indexHint}` names
//! an inverted index of the collection reads the documents that index finds for the FILTER
//! conjuncts it can serve. As in ArangoDB 3.12:
//!
//! - an inverted index is never chosen on its own, only when the loop's `indexHint` names it
//!   (`forceIndexHint: true` turns "cannot serve" into error 1577, `check_forced_hints`);
//! - the conjuncts it serves are ArangoSearch conditions over the loop variable, read as
//!   `SEARCH` reads them: `==`, `!=`, `<`, `<=`, `>`, `>=`, `IN` (array or range), `NOT IN`,
//!   `LIKE`, array comparisons (`ANY`/`ALL`/`NONE`/`AT LEAST`), `AND`/`OR`/`NOT` of these, and
//!   `ANALYZER`, `BOOST`, `MIN_MATCH`, `EXISTS`, `IN_RANGE`, `PHRASE`, `STARTS_WITH`, `LIKE`,
//!   `LEVENSHTEIN_MATCH`, `NGRAM_MATCH`, `MINHASH_MATCH`, with operands not depending on the
//!   loop; every attribute they compare must be one of the index's `fields` (`includeAllFields`
//!   does not count for `FILTER`, as the documentation says);
//! - conditions without `ANALYZER()` take the analyzer the index gives the compared field;
//! - served conjuncts leave the filter (the index answers them with its own semantics: arrays
//!   match by element, ranges only within one type), the others stay and are checked per
//!   document; with `waitForSync: true` the index first commits what was written before.

use std::collections::HashSet;

use serde_json::Value;

use crate::ast::{BinOp, Quantifier, UnaryOp};
use crate::expr::{CExpr, Slot};
use crate::index_select::{filter_stretch, remove_conjuncts, IndexCatalog};
use crate::plan::{
    ArrayQuantifier, Compare, GeoCall, IndexScan, InvertedSearch, NodeKind, Plan, SearchCond,
};
use crate::source::IndexMeta;

/// The analyzer of conditions outside `ANALYZER()`: the inverted index replaces it by the
/// field's analyzer (`SearchQuery::with_field_analyzers`).
const DEFAULT_ANALYZER: &str = "identity";

/// `::name` is `name` of the current database.
fn normalize_analyzer(name: &str) -> String {
    name.strip_prefix("::").unwrap_or(name).to_string()
}

/// Turns FILTER expressions over one loop variable into SEARCH conditions.
struct Translator<'a> {
    var: Slot,
    /// Whether an operand may be computed before the loop (deterministic, no variable of the
    /// loop or after it).
    available: &'a dyn Fn(&CExpr) -> bool,
}

impl Translator<'_> {
    /// `d.a.b` → `a.b`, `d.a[1]` → `a[1]`, `d["a"]` → `a`; None for anything else.
    fn path(&self, e: &CExpr) -> Option<String> {
        let join = |base: String, name: &str| {
            if base.is_empty() {
                name.to_string()
            } else {
                format!("{base}.{name}")
            }
        };
        match e {
            CExpr::Var(s) if *s == self.var => Some(String::new()),
            CExpr::Attribute(base, name) => Some(join(self.path(base)?, name)),
            CExpr::Index(base, index) => {
                let base = self.path(base)?;
                match &**index {
                    CExpr::Const(Value::String(name)) => Some(join(base, name)),
                    CExpr::Const(Value::Number(n)) if !base.is_empty() => {
                        n.as_u64().map(|i| format!("{base}[{i}]"))
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    fn field(&self, e: &CExpr) -> Option<String> {
        self.path(e).filter(|p| !p.is_empty())
    }

    fn operand(&self, e: &CExpr) -> Option<CExpr> {
        (self.available)(e).then(|| e.clone())
    }

    fn constant_string(e: &CExpr) -> Option<String> {
        match e {
            CExpr::Const(Value::String(s)) => Some(s.clone()),
            _ => None,
        }
    }

    /// A part of the condition not about the loop's documents.
    fn constant(&self, e: &CExpr) -> Option<SearchCond> {
        self.operand(e).map(SearchCond::Constant)
    }

    fn cond(&self, e: &CExpr, analyzer: &str) -> Option<SearchCond> {
        match e {
            CExpr::Binary(BinOp::And, a, b) => Some(SearchCond::And(vec![
                self.cond(a, analyzer)?,
                self.cond(b, analyzer)?,
            ])),
            CExpr::Binary(BinOp::Or, a, b) => Some(SearchCond::Or(vec![
                self.cond(a, analyzer)?,
                self.cond(b, analyzer)?,
            ])),
            CExpr::Unary(UnaryOp::Not, a) => {
                Some(SearchCond::Not(Box::new(self.cond(a, analyzer)?)))
            }
            CExpr::Binary(
                op @ (BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge),
                l,
                r,
            ) => {
                let op = Self::compare(*op);
                if let Some(cond) = self.geo_distance(l, r, op, analyzer) {
                    return cond;
                }
                if let Some(cond) = self.geo_distance(r, l, mirrored(op), analyzer) {
                    return cond;
                }
                let (path, value, flipped) = match (self.field(l), self.field(r)) {
                    (Some(p), _) => (p, r, false),
                    (None, Some(p)) => (p, l, true),
                    _ => return self.constant(e),
                };
                let op = if flipped { mirrored(op) } else { op };
                Some(SearchCond::Compare {
                    path,
                    analyzer: analyzer.to_string(),
                    op,
                    value: self.operand(value)?,
                })
            }
            CExpr::Binary(op @ (BinOp::In | BinOp::NotIn), l, r) => {
                let Some(path) = self.field(l) else {
                    return self.constant(e);
                };
                let cond = if let CExpr::Range(lo, hi) = &**r {
                    let yes = CExpr::Const(Value::Bool(true));
                    SearchCond::InRange {
                        path,
                        analyzer: analyzer.to_string(),
                        low: self.operand(lo)?,
                        high: self.operand(hi)?,
                        include_low: yes.clone(),
                        include_high: yes,
                    }
                } else {
                    SearchCond::In {
                        path,
                        analyzer: analyzer.to_string(),
                        values: self.operand(r)?,
                    }
                };
                Some(if *op == BinOp::NotIn {
                    SearchCond::Not(Box::new(cond))
                } else {
                    cond
                })
            }
            CExpr::Binary(op @ (BinOp::Like | BinOp::NotLike), l, r) => {
                let Some(path) = self.field(l) else {
                    return self.constant(e);
                };
                let cond = SearchCond::Like {
                    path,
                    analyzer: analyzer.to_string(),
                    pattern: self.operand(r)?,
                };
                Some(if *op == BinOp::NotLike {
                    SearchCond::Not(Box::new(cond))
                } else {
                    cond
                })
            }
            CExpr::ArrayCompare(_, op, values, field)
            | CExpr::ArrayAtLeast(_, op, values, field)
                if self.field(field).is_some() =>
            {
                // `element op field` seen from the field.
                let op = match op {
                    BinOp::Eq | BinOp::In => Compare::Eq,
                    BinOp::Ne | BinOp::NotIn => Compare::Ne,
                    BinOp::Lt => Compare::Gt,
                    BinOp::Le => Compare::Ge,
                    BinOp::Gt => Compare::Lt,
                    BinOp::Ge => Compare::Le,
                    _ => return None,
                };
                let quantifier = match e {
                    CExpr::ArrayCompare(Quantifier::Any, ..) => ArrayQuantifier::Any,
                    CExpr::ArrayCompare(Quantifier::All, ..) => ArrayQuantifier::All,
                    CExpr::ArrayCompare(Quantifier::None, ..) => ArrayQuantifier::None,
                    CExpr::ArrayAtLeast(n, ..) => ArrayQuantifier::AtLeast(self.operand(n)?),
                    _ => return None,
                };
                Some(SearchCond::ArrayCompare {
                    quantifier,
                    path: self.field(field)?,
                    analyzer: analyzer.to_string(),
                    op,
                    values: self.operand(values)?,
                })
            }
            CExpr::Call(def, args) => self.call(e, def.name, args, analyzer),
            _ => self.constant(e),
        }
    }

    /// `==`, `!=`, `<`, `<=`, `>`, `>=` as a comparison (`op` is one of these).
    fn compare(op: BinOp) -> Compare {
        match op {
            BinOp::Eq => Compare::Eq,
            BinOp::Ne => Compare::Ne,
            BinOp::Lt => Compare::Lt,
            BinOp::Le => Compare::Le,
            BinOp::Gt => Compare::Gt,
            _ => Compare::Ge,
        }
    }

    /// The field and the other operand of a geo function whose first two arguments are an
    /// attribute of the loop variable and a value not depending on the loop (either order);
    /// `true` when the field comes first.
    fn geo_operands(&self, args: &[CExpr]) -> Option<(String, CExpr, bool)> {
        match (self.field(args.first()?), self.field(args.get(1)?)) {
            (Some(path), _) => Some((path, self.operand(&args[1])?, true)),
            (None, Some(path)) => Some((path, self.operand(&args[0])?, false)),
            _ => None,
        }
    }

    /// `GEO_DISTANCE(field, origin) op distance` (`call op distance`): None when `call` is not
    /// such a call, `Some(None)` when it is one the index cannot serve.
    fn geo_distance(
        &self,
        call: &CExpr,
        distance: &CExpr,
        op: Compare,
        analyzer: &str,
    ) -> Option<Option<SearchCond>> {
        let CExpr::Call(def, args) = call else {
            return None;
        };
        if def.name != "GEO_DISTANCE" {
            return None;
        }
        // The third argument (an ellipsoid) has no index form.
        if args.len() != 2 {
            return Some(None);
        }
        let (path, origin, _) = self.geo_operands(args)?;
        Some(Some(SearchCond::Geo {
            path,
            analyzer: analyzer.to_string(),
            call: GeoCall::Distance {
                origin,
                op,
                distance: self.operand(distance)?,
            },
        }))
    }

    fn call(&self, e: &CExpr, name: &str, args: &[CExpr], analyzer: &str) -> Option<SearchCond> {
        let optional = |i: usize| -> Option<Option<CExpr>> {
            match args.get(i) {
                Some(a) => self.operand(a).map(Some),
                None => Some(None),
            }
        };
        match name {
            "ANALYZER" => {
                let name = Self::constant_string(args.get(1)?)?;
                self.cond(&args[0], &normalize_analyzer(&name))
            }
            "BOOST" => Some(SearchCond::Boost(
                Box::new(self.cond(&args[0], analyzer)?),
                self.operand(args.get(1)?)?,
            )),
            "MIN_MATCH" => {
                let (conds, count) = args.split_at(args.len().checked_sub(1)?);
                let list = conds
                    .iter()
                    .map(|c| self.cond(c, analyzer))
                    .collect::<Option<Vec<_>>>()?;
                Some(SearchCond::MinMatch(list, self.operand(&count[0])?))
            }
            "EXISTS" => Some(SearchCond::Exists {
                path: self.field(&args[0])?,
                kind: optional(1)?,
                analyzer: optional(2)?,
                context_analyzer: analyzer.to_string(),
            }),
            "IN_RANGE" => Some(SearchCond::InRange {
                path: self.field(&args[0])?,
                analyzer: analyzer.to_string(),
                low: self.operand(args.get(1)?)?,
                high: self.operand(args.get(2)?)?,
                include_low: self.operand(args.get(3)?)?,
                include_high: self.operand(args.get(4)?)?,
            }),
            "PHRASE" => {
                let path = self.field(&args[0])?;
                let rest = &args[1..];
                // An even number of arguments after the path ends with the analyzer.
                let (parts, phrase_analyzer) = if rest.len() >= 2 && rest.len() % 2 == 0 {
                    let name = Self::constant_string(&rest[rest.len() - 1])?;
                    (&rest[..rest.len() - 1], normalize_analyzer(&name))
                } else {
                    (rest, analyzer.to_string())
                };
                Some(SearchCond::Phrase {
                    path,
                    analyzer: phrase_analyzer,
                    parts: parts
                        .iter()
                        .map(|p| self.operand(p))
                        .collect::<Option<_>>()?,
                })
            }
            "STARTS_WITH" => Some(SearchCond::StartsWith {
                path: self.field(&args[0])?,
                analyzer: analyzer.to_string(),
                prefixes: self.operand(args.get(1)?)?,
                min_match: optional(2)?,
            }),
            "LIKE" => {
                // Case-insensitive LIKE has no index form: it stays in the filter.
                if !matches!(args.get(2), None | Some(CExpr::Const(Value::Bool(false)))) {
                    return None;
                }
                Some(SearchCond::Like {
                    path: self.field(&args[0])?,
                    analyzer: analyzer.to_string(),
                    pattern: self.operand(args.get(1)?)?,
                })
            }
            "LEVENSHTEIN_MATCH" => Some(SearchCond::Levenshtein {
                path: self.field(&args[0])?,
                analyzer: analyzer.to_string(),
                target: self.operand(args.get(1)?)?,
                distance: self.operand(args.get(2)?)?,
                transpositions: optional(3)?,
                max_terms: optional(4)?,
                prefix: optional(5)?,
            }),
            "MINHASH_MATCH" => {
                // (path, target, threshold, analyzer) or (path, target, analyzer).
                let (threshold, analyzer_arg) = match args.get(2..)? {
                    [analyzer] => (None, analyzer),
                    [threshold, analyzer, ..] => (Some(threshold), analyzer),
                    [] => return None,
                };
                Some(SearchCond::MinHashMatch {
                    path: self.field(&args[0])?,
                    analyzer: normalize_analyzer(&Self::constant_string(analyzer_arg)?),
                    target: self.operand(args.get(1)?)?,
                    threshold: match threshold {
                        Some(t) => Some(self.operand(t)?),
                        None => None,
                    },
                })
            }
            "GEO_IN_RANGE" => {
                let (path, origin, _) = self.geo_operands(args)?;
                let flag =
                    |i: usize| -> Option<Option<Box<CExpr>>> { Some(optional(i)?.map(Box::new)) };
                Some(SearchCond::Geo {
                    path,
                    analyzer: analyzer.to_string(),
                    call: GeoCall::InRange {
                        origin,
                        lower: self.operand(args.get(2)?)?,
                        upper: self.operand(args.get(3)?)?,
                        include_lower: flag(4)?,
                        include_upper: flag(5)?,
                    },
                })
            }
            "GEO_CONTAINS" | "GEO_INTERSECTS" => {
                let (path, region, field_first) = self.geo_operands(args)?;
                Some(SearchCond::Geo {
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
            "NGRAM_MATCH" => {
                // (path, target, threshold?, analyzer?): a string third argument is the
                // analyzer.
                let (threshold, analyzer_arg) = match args.get(2..)? {
                    [] => (None, None),
                    [third] if Self::constant_string(third).is_some() => (None, Some(third)),
                    [third] => (Some(third), None),
                    [third, fourth, ..] => (Some(third), Some(fourth)),
                };
                Some(SearchCond::NgramMatch {
                    path: self.field(&args[0])?,
                    analyzer: match analyzer_arg {
                        Some(a) => normalize_analyzer(&Self::constant_string(a)?),
                        None => analyzer.to_string(),
                    },
                    target: self.operand(args.get(1)?)?,
                    threshold: match threshold {
                        Some(t) => Some(self.operand(t)?),
                        None => None,
                    },
                })
            }
            _ => self.constant(e),
        }
    }
}

/// The comparison with its operands swapped (`a < b` is `b > a`).
fn mirrored(op: Compare) -> Compare {
    match op {
        Compare::Lt => Compare::Gt,
        Compare::Le => Compare::Ge,
        Compare::Gt => Compare::Lt,
        Compare::Ge => Compare::Le,
        same => same,
    }
}

/// Every attribute path a condition compares.
fn paths(cond: &SearchCond, out: &mut Vec<String>) {
    match cond {
        SearchCond::And(list) | SearchCond::Or(list) | SearchCond::MinMatch(list, _) => {
            list.iter().for_each(|c| paths(c, out))
        }
        SearchCond::Not(c) | SearchCond::Boost(c, _) => paths(c, out),
        SearchCond::Compare { path, .. }
        | SearchCond::In { path, .. }
        | SearchCond::InRange { path, .. }
        | SearchCond::Exists { path, .. }
        | SearchCond::Phrase { path, .. }
        | SearchCond::StartsWith { path, .. }
        | SearchCond::Like { path, .. }
        | SearchCond::Levenshtein { path, .. }
        | SearchCond::NgramMatch { path, .. }
        | SearchCond::MinHashMatch { path, .. }
        | SearchCond::ArrayCompare { path, .. }
        | SearchCond::Nested { path, .. } => out.push(path.clone()),
        SearchCond::Geo { path, .. } => out.push(path.clone()),
        SearchCond::Constant(_) => {}
    }
}

/// The attribute paths an inverted index's `fields` name (`a[*].b` is `a.b`: array elements
/// are indexed under the array's path).
fn indexed_paths(ix: &IndexMeta) -> HashSet<String> {
    ix.fields.iter().map(|f| f.replace("[*]", "")).collect()
}

/// The analyzer names inverted index `ix`'s definition gives: the index's `analyzer` and
/// each field's (top-level fields; as written, `identity` when none is given).
pub fn analyzer_names(ix: &IndexMeta) -> Vec<String> {
    let mut names = vec![index_analyzer(ix)];
    for field in ix.description["fields"].as_array().into_iter().flatten() {
        if let Some(name) = field.get("analyzer").and_then(Value::as_str) {
            names.push(name.to_string());
        }
    }
    names
}

/// The index-wide analyzer of inverted index `ix`.
fn index_analyzer(ix: &IndexMeta) -> String {
    ix.description["analyzer"]
        .as_str()
        .unwrap_or(DEFAULT_ANALYZER)
        .to_string()
}

/// The analyzer inverted index `ix` gives field `path` (one of its `fields`): the field's own,
/// else the index's.
fn field_analyzer(ix: &IndexMeta, path: &str) -> String {
    ix.description["fields"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|field| {
            let name = field.get("name")?.as_str()?;
            (name.replace("[*]", "") == path)
                .then(|| field.get("analyzer").and_then(Value::as_str))
                .flatten()
        })
        .map_or_else(|| index_analyzer(ix), str::to_string)
}

/// Whether every geo function of `cond` is on a field `ix` indexes with a geo analyzer
/// (`geo_analyzers`), named by no `ANALYZER()` or by that one: a geo function needs the
/// field's geo terms, any other analyzer finds nothing.
fn geo_served(ix: &IndexMeta, cond: &SearchCond, geo_analyzers: &HashSet<String>) -> bool {
    match cond {
        SearchCond::And(list) | SearchCond::Or(list) | SearchCond::MinMatch(list, _) => {
            list.iter().all(|c| geo_served(ix, c, geo_analyzers))
        }
        SearchCond::Not(c) | SearchCond::Boost(c, _) => geo_served(ix, c, geo_analyzers),
        SearchCond::Geo { path, analyzer, .. } => {
            let field = field_analyzer(ix, path);
            geo_analyzers.contains(&field)
                && (analyzer == DEFAULT_ANALYZER
                    || normalize_analyzer(analyzer) == normalize_analyzer(&field))
        }
        _ => true,
    }
}

/// The conjuncts (by position) inverted index `ix` serves, with their conditions.
fn served(
    ix: &IndexMeta,
    translator: &Translator<'_>,
    conjuncts: &[CExpr],
    geo_analyzers: &HashSet<String>,
) -> Vec<(usize, SearchCond)> {
    let indexed = indexed_paths(ix);
    conjuncts
        .iter()
        .enumerate()
        .filter_map(|(k, e)| {
            let cond = translator.cond(e, DEFAULT_ANALYZER)?;
            let mut compared = Vec::new();
            paths(&cond, &mut compared);
            (!compared.is_empty()
                && compared.iter().all(|p| indexed.contains(p))
                && geo_served(ix, &cond, geo_analyzers))
            .then_some((k, cond))
        })
        .collect()
}

/// Applies the hinted inverted indexes to the collection loops of `plan`; returns whether one
/// changed and whether conjuncts were removed from filters.
pub fn use_inverted_indexes(plan: &mut Plan, catalog: &IndexCatalog) -> (bool, bool) {
    let (mut changed, mut covered) = (false, false);
    let mut i = 1;
    while i < plan.nodes.len() {
        let NodeKind::EnumerateCollection {
            out: var,
            collection,
            ..
        } = plan.nodes[i].kind.clone()
        else {
            i += 1;
            continue;
        };
        let (Some(hint), Some((count, indexes))) = (
            catalog.hints.get(&var),
            catalog.collections.get(&collection),
        ) else {
            i += 1;
            continue;
        };
        // The hinted inverted indexes, in the hint's order.
        let candidates: Vec<&IndexMeta> = hint
            .names
            .iter()
            .filter_map(|name| {
                indexes
                    .iter()
                    .find(|ix| ix.kind == "inverted" && ix.name == *name)
            })
            .collect();
        if candidates.is_empty() {
            i += 1;
            continue;
        }
        let stretch = filter_stretch(plan, i);
        let later = stretch.later.clone();
        let available = |e: &CExpr| e.is_deterministic() && e.vars().is_disjoint(&later);
        let translator = Translator {
            var,
            available: &available,
        };
        let exprs: Vec<CExpr> = stretch.conjuncts.iter().map(|c| c.expr.clone()).collect();
        let Some((ix, used)) = candidates.into_iter().find_map(|ix| {
            let used = served(ix, &translator, &exprs, &catalog.geo_analyzers);
            (!used.is_empty()).then_some((ix, used))
        }) else {
            i += 1;
            continue;
        };
        let condition = stretch_condition(used.iter().map(|(_, c)| c.clone()).collect());
        let scan = IndexScan {
            out: var,
            collection: collection.clone(),
            index: ix.clone(),
            eq: Vec::new(),
            lower: None,
            upper: None,
            reverse: false,
            sorted: false,
            condition: used.iter().map(|(k, _)| exprs[*k].clone()).collect(),
            // Each served conjunct is taken to keep a tenth.
            estimated_items: (*count as f64 * 0.1f64.powi(used.len() as i32)).max(1.0),
            projections: None,
            geo: None,
            mdi: None,
            inverted: Some(Box::new(InvertedSearch {
                condition,
                wait_for_sync: hint.wait_for_sync,
                sorted: None,
            })),
        };
        if remove_conjuncts(
            plan,
            used.iter()
                .map(|(k, _)| (stretch.conjuncts[*k].calc, stretch.conjuncts[*k].part)),
        ) {
            covered = true;
        }
        plan.nodes[i].kind = NodeKind::IndexScan(Box::new(scan));
        changed = true;
        i += 1;
    }
    (changed, covered)
}

/// One condition of the served conjuncts.
fn stretch_condition(mut conds: Vec<SearchCond>) -> SearchCond {
    if conds.len() == 1 {
        conds.remove(0)
    } else {
        SearchCond::And(conds)
    }
}
