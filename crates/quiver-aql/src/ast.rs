//! The abstract syntax tree the parser produces and the planner consumes.

use serde_json::Value;

/// A whole query or subquery: a list of operations ending in RETURN or a data modification.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    /// Collections named in a leading `WITH` clause.
    pub with: Vec<String>,
    pub ops: Vec<Op>,
}

/// Where a data modification writes to, or a `FOR` reads from by name.
#[derive(Clone, Debug, PartialEq)]
pub enum CollectionRef {
    Name(String),
    /// `@@name`, resolved from the bind parameters.
    Bind(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Outbound,
    Inbound,
    Any,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    For {
        var: String,
        source: Expr,
        /// `SEARCH condition` (the source is then a view).
        search: Option<Expr>,
        options: Option<Expr>,
    },
    /// Graph traversals and path searches (`FOR v, e, p IN 1..3 OUTBOUND s edges`,
    /// `… SHORTEST_PATH s TO t …`, …).
    Traversal(Box<GraphOp>),
    Filter(Expr),
    Let {
        var: String,
        expr: Expr,
    },
    Sort(Vec<(Expr, SortOrder)>),
    Limit {
        offset: Expr,
        count: Expr,
    },
    Collect(Collect),
    Window {
        /// `WINDOW rangeValue WITH {...}` uses a range value; otherwise row-based.
        range_value: Option<Expr>,
        spec: Expr,
        aggregates: Vec<(String, Expr)>,
    },
    Return {
        distinct: bool,
        expr: Expr,
    },
    Modify(Modify),
}

/// Which graph operation a graph `FOR` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphKind {
    Traversal,
    ShortestPath,
    KShortestPaths,
    KPaths,
    AllShortestPaths,
}

impl GraphKind {
    /// The keyword as written in AQL (for messages).
    pub fn keyword(self) -> &'static str {
        match self {
            GraphKind::Traversal => "traversal",
            GraphKind::ShortestPath => "SHORTEST_PATH",
            GraphKind::KShortestPaths => "K_SHORTEST_PATHS",
            GraphKind::KPaths => "K_PATHS",
            GraphKind::AllShortestPaths => "ALL_SHORTEST_PATHS",
        }
    }
}

/// The graph a graph operation walks: a named graph, or edge collections each with an
/// optional direction of its own (`OUTBOUND s e1, INBOUND e2`).
#[derive(Clone, Debug, PartialEq)]
pub enum GraphRef {
    Named(Expr),
    Collections(Vec<(Option<Direction>, CollectionRef)>),
}

/// `FOR vars IN [depth] DIRECTION [KIND] start [TO target] graph [PRUNE [var =] expr] [OPTIONS …]`.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphOp {
    pub kind: GraphKind,
    pub vars: Vec<String>,
    pub depth: Option<Expr>,
    pub direction: Direction,
    pub start: Expr,
    pub target: Option<Expr>,
    pub graph: GraphRef,
    /// `PRUNE [var =] condition`.
    pub prune: Option<(Option<String>, Expr)>,
    pub options: Option<Expr>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Collect {
    pub groups: Vec<(String, Expr)>,
    pub aggregates: Vec<(String, Expr)>,
    /// `INTO var [= projection]`.
    pub into: Option<(String, Option<Expr>)>,
    pub keep: Vec<String>,
    pub count_into: Option<String>,
    pub options: Option<Expr>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModifyKind {
    Insert,
    Update,
    Replace,
    Remove,
    Upsert,
}

impl ModifyKind {
    pub fn node_name(self) -> &'static str {
        match self {
            ModifyKind::Insert => "InsertNode",
            ModifyKind::Update => "UpdateNode",
            ModifyKind::Replace => "ReplaceNode",
            ModifyKind::Remove => "RemoveNode",
            ModifyKind::Upsert => "UpsertNode",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Modify {
    pub kind: ModifyKind,
    /// INSERT: the document; UPDATE/REPLACE: the key expression with `WITH`, else the
    /// document; REMOVE: the key or document; UPSERT: the search example, or with
    /// `upsert_filter` the condition a document must meet (`CURRENT` is the document).
    pub first: Expr,
    /// `UPSERT FILTER condition …` rather than `UPSERT example …`.
    pub upsert_filter: bool,
    /// UPDATE/REPLACE `WITH doc`; UPSERT's INSERT document.
    pub second: Option<Expr>,
    /// UPSERT's UPDATE/REPLACE document.
    pub third: Option<Expr>,
    /// UPSERT ... REPLACE (instead of UPDATE).
    pub upsert_replace: bool,
    pub collection: CollectionRef,
    pub options: Option<Expr>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Not,
    Minus,
    Plus,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    NotIn,
    Like,
    NotLike,
    RegexMatch,
    RegexNotMatch,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Or => "||",
            BinOp::And => "&&",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::In => "IN",
            BinOp::NotIn => "NOT IN",
            BinOp::Like => "LIKE",
            BinOp::NotLike => "NOT LIKE",
            BinOp::RegexMatch => "=~",
            BinOp::RegexNotMatch => "!~",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
        }
    }

    /// ArangoDB's AST node type name (for `/_api/query` output).
    pub fn ast_name(self) -> &'static str {
        match self {
            BinOp::Or => "logical or",
            BinOp::And => "logical and",
            BinOp::Eq => "compare ==",
            BinOp::Ne => "compare !=",
            BinOp::Lt => "compare <",
            BinOp::Le => "compare <=",
            BinOp::Gt => "compare >",
            BinOp::Ge => "compare >=",
            BinOp::In => "compare in",
            BinOp::NotIn => "compare not in",
            BinOp::Like => "like",
            BinOp::NotLike => "not like",
            BinOp::RegexMatch => "regex match",
            BinOp::RegexNotMatch => "regex not match",
            BinOp::Add => "plus",
            BinOp::Sub => "minus",
            BinOp::Mul => "times",
            BinOp::Div => "division",
            BinOp::Mod => "modulus",
        }
    }
}

/// The direction of a `SORT` key.
#[derive(Clone, Debug, PartialEq)]
pub enum SortOrder {
    Ascending,
    Descending,
    /// A literal or bind parameter (`SORT x @dir`): `"ASC"`/`"DESC"` in any case, or a
    /// boolean (true ascending), read when the query is planned.
    Given(Expr),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantifier {
    Any,
    All,
    None,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ObjectKey {
    Static(String),
    Computed(Expr),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// null, bools, numbers and strings.
    Literal(Value),
    Array(Vec<Expr>),
    Object(Vec<(ObjectKey, Expr)>),
    /// A name: a variable if one is in scope, otherwise a collection name.
    Name(String),
    Bind(String),
    BindCollection(String),
    Attribute(Box<Expr>, String),
    Index(Box<Expr>, Box<Expr>),
    /// `input[*...]` / `input[**...]`: for each element (after flattening `depth - 1` levels)
    /// bind `CURRENT`, keep it if `filter`, stop after `limit`, and map it through
    /// `project` (which includes any attribute accesses following the `[*]`).
    Expansion {
        input: Box<Expr>,
        depth: usize,
        filter: Option<Box<Expr>>,
        limit: Option<(Box<Expr>, Box<Expr>)>,
        project: Option<Box<Expr>>,
    },
    /// The implicit element variable inside an expansion.
    Current,
    Unary(UnaryOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `left ANY|ALL|NONE op right`.
    ArrayCompare(Quantifier, BinOp, Box<Expr>, Box<Expr>),
    /// `left AT LEAST (count) op right`: at least `count` elements of `left` compare true.
    ArrayAtLeast(Box<Expr>, BinOp, Box<Expr>, Box<Expr>),
    /// `cond ? then : else`; `cond ?: else` has `then` None.
    Ternary(Box<Expr>, Option<Box<Expr>>, Box<Expr>),
    Range(Box<Expr>, Box<Expr>),
    Call(String, Vec<Expr>),
    Subquery(Box<Query>),
}

impl Expr {
    pub fn lit(v: Value) -> Expr {
        Expr::Literal(v)
    }

    /// Calls `f` with this expression and every expression inside it; a subquery is one
    /// expression (its operations are for the caller to visit, with [`Op::for_each_expr`]).
    pub fn walk(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Literal(_)
            | Expr::Name(_)
            | Expr::Bind(_)
            | Expr::BindCollection(_)
            | Expr::Current
            | Expr::Subquery(_) => {}
            Expr::Array(items) | Expr::Call(_, items) => items.iter().for_each(|i| i.walk(f)),
            Expr::Object(members) => {
                for (key, value) in members {
                    if let ObjectKey::Computed(k) = key {
                        k.walk(f);
                    }
                    value.walk(f);
                }
            }
            Expr::Attribute(a, _) | Expr::Unary(_, a) => a.walk(f),
            Expr::Index(a, b)
            | Expr::Binary(_, a, b)
            | Expr::ArrayCompare(_, _, a, b)
            | Expr::Range(a, b) => {
                a.walk(f);
                b.walk(f);
            }
            Expr::ArrayAtLeast(a, _, b, c) => {
                a.walk(f);
                b.walk(f);
                c.walk(f);
            }
            Expr::Expansion {
                input,
                filter,
                limit,
                project,
                ..
            } => {
                input.walk(f);
                filter.iter().chain(project).for_each(|e| e.walk(f));
                if let Some((a, b)) = limit {
                    a.walk(f);
                    b.walk(f);
                }
            }
            Expr::Ternary(c, t, e) => {
                c.walk(f);
                if let Some(t) = t {
                    t.walk(f);
                }
                e.walk(f);
            }
        }
    }
}

impl Op {
    /// Calls `f` with every expression the operation holds directly (not those inside them).
    pub fn for_each_expr(&self, f: &mut dyn FnMut(&Expr)) {
        match self {
            Op::For {
                source,
                search,
                options,
                ..
            } => {
                f(source);
                search.iter().chain(options).for_each(f);
            }
            Op::Traversal(g) => {
                f(&g.start);
                g.depth
                    .iter()
                    .chain(&g.target)
                    .chain(&g.options)
                    .chain(g.prune.as_ref().map(|(_, e)| e))
                    .for_each(f);
            }
            Op::Filter(e) | Op::Let { expr: e, .. } | Op::Return { expr: e, .. } => f(e),
            Op::Sort(keys) => keys.iter().for_each(|(e, _)| f(e)),
            Op::Limit { offset, count } => {
                f(offset);
                f(count);
            }
            Op::Collect(c) => {
                c.groups.iter().chain(&c.aggregates).for_each(|(_, e)| f(e));
                if let Some((_, Some(e))) = &c.into {
                    f(e);
                }
                c.options.iter().for_each(f);
            }
            Op::Window {
                range_value,
                spec,
                aggregates,
            } => {
                range_value.iter().for_each(&mut *f);
                f(spec);
                aggregates.iter().for_each(|(_, e)| f(e));
            }
            Op::Modify(m) => {
                f(&m.first);
                m.second
                    .iter()
                    .chain(&m.third)
                    .chain(&m.options)
                    .for_each(f);
            }
        }
    }
}
