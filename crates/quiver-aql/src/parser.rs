//! Recursive-descent parser for AQL with ArangoDB's operator precedence (lowest first):
//! `?:`, `||`, `&&`, `== != LIKE =~ !~` (and `ANY/ALL/NONE` array comparisons), `IN`,
//! `< <= > >=`, `..`, `+ -`, `* / %`, unary `! - +`, then postfix `.` `[]` `[*]`.
//! Hand-written (rather than generated) to produce ArangoDB's error messages with positions
//! and to bound recursion depth on hostile input.

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

use crate::ast::*;
use crate::lexer::{column_of, near, tokenize, Kw, Tok, Token, CONTEXT_WORDS};
use crate::limits::Limits;

/// Deepest nesting of expressions/subqueries accepted; deeper input fails cleanly instead of
/// exhausting the thread's stack.
const MAX_DEPTH: usize = 100;

/// Bound of nesting plus operator-chain length along any path of the tree: later passes
/// (planning, folding, evaluation, drop) recurse that deep.
const MAX_WEIGHT: usize = 500;

#[derive(Clone, Copy)]
enum BinaryKind {
    Op(BinOp),
    Quantified(Quantifier, BinOp),
    Range,
}

/// Filter, limit (offset, count) and projection of an inline expansion.
type ExpansionClauses = (
    Option<Box<Expr>>,
    Option<(Box<Expr>, Box<Expr>)>,
    Option<Box<Expr>>,
);

/// Parses a complete query.
pub fn parse(query: &str) -> Result<Query> {
    parse_within(query, None)
}

/// Parses a complete query, checking `limits` (kill flag, `maxRuntime`) once the text is
/// tokenized and at every statement.
pub fn parse_within(query: &str, limits: Option<&Limits>) -> Result<Query> {
    if query.trim().is_empty() {
        return Err(Error::with_message(
            ErrorCode::QueryParse,
            "AQL: syntax error, unexpected end of query string near '' at position 1:1 (while parsing)",
        ));
    }
    let tokens = tokenize(query)?;
    if let Some(limits) = limits {
        limits.check()?;
    }
    let mut parser = Parser {
        query,
        tokens,
        limits,
        pos: 0,
        depth: 0,
        weight: 0,
        no_in: false,
        expansion: 0,
        queued: Default::default(),
    };
    let q = parser.query()?;
    if !matches!(parser.peek(), Tok::Eof) {
        return Err(parser.unexpected());
    }
    Ok(q)
}

struct Parser<'a> {
    query: &'a str,
    limits: Option<&'a Limits>,
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
    weight: usize,
    /// Set while parsing the document of UPDATE/REPLACE/REMOVE, whose `IN coll` would
    /// otherwise be read as the IN operator.
    no_in: bool,
    /// Inside `[* ...]`, where `CURRENT` names the element.
    expansion: usize,
    /// The further assignments of a `LET a = 1, b = 2` list, returned as LET operations of
    /// their own by the next calls of `operation`.
    queued: std::collections::VecDeque<Op>,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> &Tok {
        &self.tokens[self.pos].tok
    }

    fn peek_at(&self, n: usize) -> &Tok {
        let i = (self.pos + n).min(self.tokens.len() - 1);
        &self.tokens[i].tok
    }

    fn advance(&mut self) -> Tok {
        let t = self.tokens[self.pos].tok.clone();
        if self.pos < self.tokens.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn is_sym(&self, s: &str) -> bool {
        matches!(self.peek(), Tok::Sym(x) if *x == s)
    }

    fn eat_sym(&mut self, s: &str) -> bool {
        if self.is_sym(s) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn expect_sym(&mut self, s: &str) -> Result<()> {
        if self.eat_sym(s) {
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    fn is_kw(&self, kw: Kw) -> bool {
        matches!(self.peek(), Tok::Kw(k) if *k == kw)
    }

    fn eat_kw(&mut self, kw: Kw) -> bool {
        if self.is_kw(kw) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn expect_kw(&mut self, kw: Kw) -> Result<()> {
        if self.eat_kw(kw) {
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    /// A contextual word such as KEEP or COUNT (case-insensitive identifier).
    fn is_word(&self, word: &str) -> bool {
        matches!(self.peek(), Tok::Ident(x) if x.eq_ignore_ascii_case(word))
    }

    fn eat_word(&mut self, word: &str) -> bool {
        if self.is_word(word) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn expect_word(&mut self, word: &str) -> Result<()> {
        if self.eat_word(word) {
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    fn describe(tok: &Tok) -> String {
        match tok {
            Tok::Ident(_) | Tok::QuotedIdent(_) => "identifier".into(),
            Tok::Str(_) => "quoted string".into(),
            Tok::Int(_) => "integer number".into(),
            Tok::Float(_) => "number".into(),
            Tok::Bind(_) => "bind parameter".into(),
            Tok::BindColl(_) => "bind data source parameter".into(),
            Tok::Kw(k) => match k {
                Kw::Null => "null".into(),
                Kw::True => "true".into(),
                Kw::False => "false".into(),
                Kw::For
                | Kw::Return
                | Kw::Filter
                | Kw::Sort
                | Kw::Limit
                | Kw::Let
                | Kw::Collect
                | Kw::Insert
                | Kw::Update
                | Kw::Replace
                | Kw::Remove
                | Kw::Upsert
                | Kw::Window
                | Kw::Search => format!("{} declaration", k.text()),
                _ => format!("{} keyword", k.text()),
            },
            Tok::Sym(s) => s.to_string(),
            Tok::Eof => "end of query string".into(),
        }
    }

    fn unexpected(&self) -> Error {
        let token = &self.tokens[self.pos];
        let line_start = self.query[..token.start.min(self.query.len())]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        Error::with_message(
            ErrorCode::QueryParse,
            format!(
                "AQL: syntax error, unexpected {} near '{}' at position {}:{} (while parsing)",
                Self::describe(&token.tok),
                near(self.query, token.start),
                token.line,
                column_of(self.query, line_start, token.start)
            ),
        )
    }

    fn leave(&mut self) {
        self.depth -= 1;
        self.weight -= 1;
    }

    /// Counts one more operator in a left-deep chain (`a + b + c ...`): chains do not recurse
    /// while parsing but do in every later tree walk, so they share the weight budget.
    fn link(&mut self, links: &mut usize) -> Result<()> {
        *links += 1;
        self.weight += 1;
        if self.weight > MAX_WEIGHT {
            return Err(Error::with_message(
                ErrorCode::QueryTooMuchNesting,
                "too much nesting or too many objects",
            ));
        }
        Ok(())
    }

    fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        self.weight += 1;
        if self.depth > MAX_DEPTH || self.weight > MAX_WEIGHT {
            return Err(Error::with_message(
                ErrorCode::QueryTooMuchNesting,
                "too much nesting or too many objects",
            ));
        }
        Ok(())
    }

    fn variable_name(&mut self) -> Result<String> {
        match self.peek().clone() {
            Tok::Ident(name) | Tok::QuotedIdent(name) => {
                self.advance();
                Ok(name)
            }
            _ => Err(self.unexpected()),
        }
    }

    fn collection_ref(&mut self) -> Result<CollectionRef> {
        match self.peek().clone() {
            Tok::Ident(name) | Tok::QuotedIdent(name) | Tok::Str(name) => {
                self.advance();
                Ok(CollectionRef::Name(name))
            }
            Tok::BindColl(name) => {
                self.advance();
                Ok(CollectionRef::Bind(name))
            }
            Tok::Bind(name) => {
                self.advance();
                Ok(CollectionRef::Bind(name))
            }
            _ => Err(self.unexpected()),
        }
    }

    // ---------------------------------------------------------------- statements

    fn query(&mut self) -> Result<Query> {
        self.enter()?;
        let mut with = Vec::new();
        if self.eat_kw(Kw::With) {
            loop {
                match self.collection_ref()? {
                    CollectionRef::Name(n) => with.push(n),
                    CollectionRef::Bind(n) => with.push(format!("@{n}")),
                }
                // Collections are separated by commas or by blanks, as ArangoDB's
                // `with_collection_list`.
                let named_next = matches!(
                    self.peek(),
                    Tok::Ident(_)
                        | Tok::QuotedIdent(_)
                        | Tok::Str(_)
                        | Tok::BindColl(_)
                        | Tok::Bind(_)
                );
                if !self.eat_sym(",") && !named_next {
                    break;
                }
            }
        }
        let mut ops = Vec::new();
        loop {
            if let Some(limits) = self.limits {
                limits.check()?;
            }
            let op = self.operation()?;
            let ends = matches!(op, Op::Return { .. });
            ops.push(op);
            if ends {
                break;
            }
            // A query may end after a modification: at the end of the text, of a
            // parenthesized subquery or of a function argument.
            if matches!(self.peek(), Tok::Eof | Tok::Sym(")") | Tok::Sym(",")) {
                if matches!(ops.last(), Some(Op::Modify(_))) {
                    break;
                }
                return Err(self.unexpected());
            }
        }
        self.leave();
        Ok(Query { with, ops })
    }

    fn operation(&mut self) -> Result<Op> {
        if let Some(op) = self.queued.pop_front() {
            return Ok(op);
        }
        let tok = self.peek().clone();
        match tok {
            Tok::Kw(Kw::For) => {
                self.advance();
                self.for_op()
            }
            Tok::Kw(Kw::Filter) => {
                self.advance();
                Ok(Op::Filter(self.expr()?))
            }
            Tok::Kw(Kw::Let) => {
                self.advance();
                let first = self.let_assignment()?;
                // `LET a = 1, b = 2`: the further assignments become LETs of their own. They
                // are queued only once all are parsed, so a subquery inside one of them never
                // takes them for its own operations.
                let mut more = Vec::new();
                while self.eat_sym(",") {
                    more.push(self.let_assignment()?);
                }
                self.queued.extend(more);
                Ok(first)
            }
            Tok::Kw(Kw::Sort) => {
                self.advance();
                let mut keys = Vec::new();
                loop {
                    let e = self.expr()?;
                    let order = if self.eat_kw(Kw::Desc) {
                        SortOrder::Descending
                    } else if self.eat_kw(Kw::Asc) {
                        SortOrder::Ascending
                    } else if matches!(
                        self.peek(),
                        Tok::Bind(_)
                            | Tok::Str(_)
                            | Tok::Int(_)
                            | Tok::Float(_)
                            | Tok::Kw(Kw::True | Kw::False | Kw::Null)
                    ) {
                        // ArangoDB's `sort_direction: simple_value`: a literal or a bind
                        // parameter, read when the query is planned.
                        SortOrder::Given(self.primary()?)
                    } else {
                        SortOrder::Ascending
                    };
                    keys.push((e, order));
                    if !self.eat_sym(",") {
                        break;
                    }
                }
                Ok(Op::Sort(keys))
            }
            Tok::Kw(Kw::Limit) => {
                self.advance();
                let first = self.expr()?;
                if self.eat_sym(",") {
                    let count = self.expr()?;
                    Ok(Op::Limit {
                        offset: first,
                        count,
                    })
                } else {
                    Ok(Op::Limit {
                        offset: Expr::lit(Value::from(0)),
                        count: first,
                    })
                }
            }
            Tok::Kw(Kw::Collect) => {
                self.advance();
                self.collect_op()
            }
            Tok::Kw(Kw::Window) => {
                self.advance();
                self.window_op()
            }
            Tok::Kw(Kw::Return) => {
                self.advance();
                let distinct = self.eat_kw(Kw::Distinct);
                Ok(Op::Return {
                    distinct,
                    expr: self.expr()?,
                })
            }
            Tok::Kw(Kw::Insert | Kw::Update | Kw::Replace | Kw::Remove | Kw::Upsert) => {
                self.advance();
                self.modify_op(tok)
            }
            _ => Err(self.unexpected()),
        }
    }

    fn options(&mut self) -> Result<Option<Expr>> {
        if self.eat_word("OPTIONS") {
            if !self.is_sym("{") && !matches!(self.peek(), Tok::Bind(_)) {
                return Err(self.unexpected());
            }
            Ok(Some(self.postfix()?))
        } else {
            Ok(None)
        }
    }

    fn for_op(&mut self) -> Result<Op> {
        let mut vars = vec![self.variable_name()?];
        while self.eat_sym(",") {
            vars.push(self.variable_name()?);
        }
        self.expect_kw(Kw::In)?;
        if let Some(dir) = self.direction_here() {
            return self.traversal(vars, None, dir);
        }
        let source = self.expr()?;
        if let Some(dir) = self.direction_here() {
            return self.traversal(vars, Some(source), dir);
        }
        if vars.len() != 1 {
            return Err(self.unexpected());
        }
        let search = if self.eat_kw(Kw::Search) {
            Some(self.expr()?)
        } else {
            None
        };
        let options = self.options()?;
        Ok(Op::For {
            var: vars.remove(0),
            source,
            search,
            options,
        })
    }

    fn direction_here(&self) -> Option<Direction> {
        match self.peek() {
            Tok::Kw(Kw::Outbound) => Some(Direction::Outbound),
            Tok::Kw(Kw::Inbound) => Some(Direction::Inbound),
            Tok::Kw(Kw::Any) => Some(Direction::Any),
            _ => None,
        }
    }

    fn traversal(
        &mut self,
        vars: Vec<String>,
        depth: Option<Expr>,
        direction: Direction,
    ) -> Result<Op> {
        self.advance();
        let kind = match self.peek() {
            Tok::Kw(Kw::ShortestPath) => GraphKind::ShortestPath,
            Tok::Kw(Kw::KShortestPaths) => GraphKind::KShortestPaths,
            Tok::Kw(Kw::KPaths) => GraphKind::KPaths,
            Tok::Kw(Kw::AllShortestPaths) => GraphKind::AllShortestPaths,
            _ => GraphKind::Traversal,
        };
        // ArangoDB's grammar: traversals emit up to three variables, SHORTEST_PATH two
        // (vertex, edge), the path enumerations one (the path); only traversals and K_PATHS
        // take a depth range.
        let max_vars = match kind {
            GraphKind::Traversal => 3,
            GraphKind::ShortestPath => 2,
            _ => 1,
        };
        let depth_allowed = matches!(kind, GraphKind::Traversal | GraphKind::KPaths);
        if vars.len() > max_vars || (depth.is_some() && !depth_allowed) {
            return Err(self.unexpected());
        }
        if kind != GraphKind::Traversal {
            self.advance();
        }
        let start = self.expr()?;
        let target = if kind == GraphKind::Traversal {
            None
        } else {
            if !self.eat_word("TO") {
                return Err(self.unexpected());
            }
            Some(self.expr()?)
        };
        let graph = if self.eat_kw(Kw::Graph) {
            GraphRef::Named(self.primary()?)
        } else {
            let mut colls = Vec::new();
            loop {
                let dir = self.direction_here();
                if dir.is_some() {
                    self.advance();
                }
                colls.push((dir, self.collection_ref()?));
                if !self.eat_sym(",") {
                    break;
                }
            }
            GraphRef::Collections(colls)
        };
        let prune = if kind == GraphKind::Traversal && self.eat_word("PRUNE") {
            let named = matches!(self.peek(), Tok::Ident(_) | Tok::QuotedIdent(_))
                && matches!(self.peek_at(1), Tok::Sym("="));
            let var = if named {
                let v = self.variable_name()?;
                self.expect_sym("=")?;
                Some(v)
            } else {
                None
            };
            Some((var, self.expr()?))
        } else {
            None
        };
        let options = self.options()?;
        Ok(Op::Traversal(Box::new(GraphOp {
            kind,
            vars,
            depth,
            direction,
            start,
            target,
            graph,
            prune,
            options,
        })))
    }

    fn assignments(&mut self) -> Result<Vec<(String, Expr)>> {
        let mut out = Vec::new();
        loop {
            let var = self.variable_name()?;
            self.expect_sym("=")?;
            out.push((var, self.expr()?));
            if !self.eat_sym(",") {
                break;
            }
        }
        Ok(out)
    }

    fn collect_op(&mut self) -> Result<Op> {
        let mut c = Collect {
            groups: Vec::new(),
            aggregates: Vec::new(),
            into: None,
            keep: Vec::new(),
            count_into: None,
            options: None,
        };
        let starts_with_name = matches!(self.peek(), Tok::Ident(_) | Tok::QuotedIdent(_))
            && matches!(self.peek_at(1), Tok::Sym("="));
        if starts_with_name {
            c.groups = self.assignments()?;
        }
        if self.eat_kw(Kw::Aggregate) {
            c.aggregates = self.assignments()?;
        }
        if self.eat_kw(Kw::Into) {
            let var = self.variable_name()?;
            let projection = if self.eat_sym("=") {
                Some(self.expr()?)
            } else {
                None
            };
            c.into = Some((var, projection));
            if self.eat_word("KEEP") {
                loop {
                    c.keep.push(self.variable_name()?);
                    if !self.eat_sym(",") {
                        break;
                    }
                }
            }
        }
        if self.is_kw(Kw::With)
            && matches!(self.peek_at(1), Tok::Ident(w) if w.eq_ignore_ascii_case("COUNT"))
        {
            if c.into.is_some() || !c.aggregates.is_empty() {
                return Err(self.unexpected());
            }
            self.advance();
            self.expect_word("COUNT")?;
            self.expect_kw(Kw::Into)?;
            c.count_into = Some(self.variable_name()?);
        }
        c.options = self.options()?;
        if c.groups.is_empty()
            && c.aggregates.is_empty()
            && c.into.is_none()
            && c.count_into.is_none()
        {
            return Err(self.unexpected());
        }
        Ok(Op::Collect(c))
    }

    fn window_op(&mut self) -> Result<Op> {
        let first = self.expr()?;
        let (range_value, spec) = if self.eat_kw(Kw::With) {
            (Some(first), self.expr()?)
        } else {
            (None, first)
        };
        self.expect_kw(Kw::Aggregate)?;
        let aggregates = self.assignments()?;
        Ok(Op::Window {
            range_value,
            spec,
            aggregates,
        })
    }

    fn modify_expr(&mut self) -> Result<Expr> {
        let saved = self.no_in;
        self.no_in = true;
        let e = self.expr();
        self.no_in = saved;
        e
    }

    fn modify_op(&mut self, tok: Tok) -> Result<Op> {
        let kind = match tok {
            Tok::Kw(Kw::Insert) => ModifyKind::Insert,
            Tok::Kw(Kw::Update) => ModifyKind::Update,
            Tok::Kw(Kw::Replace) => ModifyKind::Replace,
            Tok::Kw(Kw::Remove) => ModifyKind::Remove,
            _ => ModifyKind::Upsert,
        };
        let mut m = Modify {
            kind,
            first: Expr::lit(Value::Null),
            second: None,
            third: None,
            upsert_filter: false,
            upsert_replace: false,
            collection: CollectionRef::Name(String::new()),
            options: None,
        };
        match kind {
            ModifyKind::Insert => {
                m.first = self.modify_expr()?;
                if !self.eat_kw(Kw::Into) {
                    self.expect_kw(Kw::In)?;
                }
            }
            ModifyKind::Update | ModifyKind::Replace => {
                m.first = self.modify_expr()?;
                if self.eat_kw(Kw::With) {
                    m.second = Some(self.modify_expr()?);
                }
                if !self.eat_kw(Kw::Into) {
                    self.expect_kw(Kw::In)?;
                }
            }
            ModifyKind::Remove => {
                m.first = self.modify_expr()?;
                if !self.eat_kw(Kw::Into) {
                    self.expect_kw(Kw::In)?;
                }
            }
            ModifyKind::Upsert => {
                if self.eat_kw(Kw::Filter) {
                    // `UPSERT FILTER condition`: CURRENT names the candidate document.
                    m.upsert_filter = true;
                    self.expansion += 1;
                    let condition = self.modify_expr();
                    self.expansion -= 1;
                    m.first = condition?;
                } else {
                    m.first = self.modify_expr()?;
                }
                self.expect_kw(Kw::Insert)?;
                m.second = Some(self.modify_expr()?);
                if self.eat_kw(Kw::Replace) {
                    m.upsert_replace = true;
                } else {
                    self.expect_kw(Kw::Update)?;
                }
                m.third = Some(self.modify_expr()?);
                if !self.eat_kw(Kw::Into) {
                    self.expect_kw(Kw::In)?;
                }
            }
        }
        m.collection = self.collection_ref()?;
        m.options = self.options()?;
        Ok(Op::Modify(m))
    }

    // ---------------------------------------------------------------- expressions

    pub(crate) fn expr(&mut self) -> Result<Expr> {
        self.enter()?;
        let e = crate::deep(|| self.ternary());
        self.leave();
        e
    }

    fn ternary(&mut self) -> Result<Expr> {
        let cond = self.binary(1)?;
        if self.eat_sym("?") {
            if self.eat_sym(":") {
                let otherwise = self.expr()?;
                return Ok(Expr::Ternary(Box::new(cond), None, Box::new(otherwise)));
            }
            let then = self.expr()?;
            self.expect_sym(":")?;
            let otherwise = self.expr()?;
            return Ok(Expr::Ternary(
                Box::new(cond),
                Some(Box::new(then)),
                Box::new(otherwise),
            ));
        }
        Ok(cond)
    }

    /// The binary operator at the current position: (operator, precedence, tokens).
    fn peek_binary(&self) -> Option<(BinaryKind, u8, usize)> {
        if let Some((q, op, len)) = self.peek_quantified() {
            return Some((BinaryKind::Quantified(q, op), 3, len));
        }
        let (op, prec, len) = match (self.peek(), self.peek_at(1)) {
            (Tok::Sym("||") | Tok::Kw(Kw::Or), _) => (BinOp::Or, 1, 1),
            (Tok::Sym("&&") | Tok::Kw(Kw::And), _) => (BinOp::And, 2, 1),
            (Tok::Sym("=="), _) => (BinOp::Eq, 3, 1),
            (Tok::Sym("!="), _) => (BinOp::Ne, 3, 1),
            (Tok::Sym("=~"), _) => (BinOp::RegexMatch, 3, 1),
            (Tok::Sym("!~"), _) => (BinOp::RegexNotMatch, 3, 1),
            (Tok::Kw(Kw::Like), _) => (BinOp::Like, 3, 1),
            (Tok::Kw(Kw::Not), Tok::Kw(Kw::Like)) => (BinOp::NotLike, 3, 2),
            (Tok::Kw(Kw::Not), Tok::Sym("=~")) => (BinOp::RegexNotMatch, 3, 2),
            (Tok::Kw(Kw::Not), Tok::Sym("!~")) => (BinOp::RegexMatch, 3, 2),
            (Tok::Kw(Kw::In), _) if !self.no_in => (BinOp::In, 4, 1),
            (Tok::Kw(Kw::Not), Tok::Kw(Kw::In)) if !self.no_in => (BinOp::NotIn, 4, 2),
            (Tok::Sym("<"), _) => (BinOp::Lt, 5, 1),
            (Tok::Sym("<="), _) => (BinOp::Le, 5, 1),
            (Tok::Sym(">"), _) => (BinOp::Gt, 5, 1),
            (Tok::Sym(">="), _) => (BinOp::Ge, 5, 1),
            (Tok::Sym(".."), _) => return Some((BinaryKind::Range, 6, 1)),
            (Tok::Sym("+"), _) => (BinOp::Add, 7, 1),
            (Tok::Sym("-"), _) => (BinOp::Sub, 7, 1),
            (Tok::Sym("*"), _) => (BinOp::Mul, 8, 1),
            (Tok::Sym("/"), _) => (BinOp::Div, 8, 1),
            (Tok::Sym("%"), _) => (BinOp::Mod, 8, 1),
            _ => return None,
        };
        Some((BinaryKind::Op(op), prec, len))
    }

    /// `ANY|ALL|NONE <op>` after a left operand starts an array comparison.
    fn peek_quantified(&self) -> Option<(Quantifier, BinOp, usize)> {
        let q = match self.peek() {
            Tok::Kw(Kw::Any) => Quantifier::Any,
            Tok::Kw(Kw::All) => Quantifier::All,
            Tok::Kw(Kw::None) => Quantifier::None,
            _ => return None,
        };
        let (op, len) = match (self.peek_at(1), self.peek_at(2)) {
            (Tok::Sym("=="), _) => (BinOp::Eq, 2),
            (Tok::Sym("!="), _) => (BinOp::Ne, 2),
            (Tok::Sym("<"), _) => (BinOp::Lt, 2),
            (Tok::Sym("<="), _) => (BinOp::Le, 2),
            (Tok::Sym(">"), _) => (BinOp::Gt, 2),
            (Tok::Sym(">="), _) => (BinOp::Ge, 2),
            (Tok::Kw(Kw::In), _) => (BinOp::In, 2),
            (Tok::Kw(Kw::Not), Tok::Kw(Kw::In)) => (BinOp::NotIn, 3),
            _ => return None,
        };
        Some((q, op, len))
    }

    /// Precedence climbing over the binary operators (left-associative). One function for
    /// all levels keeps the recursion per parenthesis level shallow.
    fn binary(&mut self, min_prec: u8) -> Result<Expr> {
        let mut left = self.unary()?;
        let mut links = 0;
        loop {
            // `left AT LEAST (n) op right`, an array comparison at the comparisons' level.
            if min_prec <= 3 && self.at_least() {
                self.expect_sym("(")?;
                let n = self.expr()?;
                self.expect_sym(")")?;
                let op = self.comparison_operator()?;
                let right = self.binary(4)?;
                left = Expr::ArrayAtLeast(Box::new(n), op, Box::new(left), Box::new(right));
                self.link(&mut links)?;
                continue;
            }
            let Some((kind, prec, len)) = self.peek_binary() else {
                break;
            };
            if prec < min_prec {
                break;
            }
            for _ in 0..len {
                self.advance();
            }
            let right = self.binary(prec + 1)?;
            left = match kind {
                BinaryKind::Op(op) => Expr::Binary(op, Box::new(left), Box::new(right)),
                BinaryKind::Quantified(q, op) => {
                    Expr::ArrayCompare(q, op, Box::new(left), Box::new(right))
                }
                BinaryKind::Range => Expr::Range(Box::new(left), Box::new(right)),
            };
            self.link(&mut links)?;
        }
        self.weight -= links;
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr> {
        let op = match self.peek() {
            Tok::Sym("!") => UnaryOp::Not,
            Tok::Kw(Kw::Not) => UnaryOp::Not,
            Tok::Sym("-") => UnaryOp::Minus,
            Tok::Sym("+") => UnaryOp::Plus,
            _ => return self.postfix(),
        };
        self.advance();
        self.enter()?;
        let operand = crate::deep(|| self.unary());
        self.leave();
        let operand = operand?;
        // Fold `-<number literal>` right away so that e.g. `-9223372036854775808` and
        // `LIMIT -1` keep their literal shape.
        if op == UnaryOp::Minus {
            if let Expr::Literal(Value::Number(n)) = &operand {
                if let Some(i) = n.as_i64() {
                    if i != 0 {
                        return Ok(Expr::lit(Value::from(-i)));
                    }
                } else if let Some(f) = n.as_f64() {
                    if let Some(num) = serde_json::Number::from_f64(-f) {
                        return Ok(Expr::lit(Value::Number(num)));
                    }
                }
            }
        }
        Ok(Expr::Unary(op, Box::new(operand)))
    }

    fn attribute_name(&mut self) -> Result<String> {
        let token = self.tokens[self.pos].clone();
        match token.tok {
            Tok::Ident(n) | Tok::QuotedIdent(n) | Tok::Str(n) => {
                self.advance();
                Ok(n)
            }
            Tok::Kw(_) => {
                self.advance();
                Ok(self.query[token.start..token.end].to_string())
            }
            _ => Err(self.unexpected()),
        }
    }

    fn postfix(&mut self) -> Result<Expr> {
        let mut e = self.primary()?;
        // Access chains (`x.a.a.a…`, `x[0][0]…`) build a deep tree without recursing here;
        // every later tree walk recurses over it, so each link counts against the weight budget
        // (an unbounded chain overflowed the stack of the HTTP thread).
        let mut links = 0;
        loop {
            if self.eat_sym(".") {
                if let Tok::Bind(name) = self.peek().clone() {
                    self.advance();
                    e = Expr::Index(Box::new(e), Box::new(Expr::Bind(name)));
                    self.link(&mut links)?;
                    continue;
                }
                let name = self.attribute_name()?;
                e = Expr::Attribute(Box::new(e), name);
            } else if self.is_sym("[") {
                if matches!(self.peek_at(1), Tok::Sym("*")) {
                    e = self.expansion(e)?;
                    self.weight -= links;
                    // Everything following the expansion is applied per element already.
                    return Ok(e);
                }
                if matches!(self.peek_at(1), Tok::Sym("?")) {
                    e = self.question_filter(e)?;
                } else {
                    self.advance();
                    let index = self.expr()?;
                    self.expect_sym("]")?;
                    e = Expr::Index(Box::new(e), Box::new(index));
                }
            } else {
                break;
            }
            self.link(&mut links)?;
        }
        self.weight -= links;
        Ok(e)
    }

    /// `LET`'s `name = expression`.
    fn let_assignment(&mut self) -> Result<Op> {
        let var = self.variable_name()?;
        self.expect_sym("=")?;
        Ok(Op::Let {
            var,
            expr: self.expr()?,
        })
    }

    /// `input[? [quantifier] FILTER condition]`: whether the elements for which the condition
    /// holds are as many as the quantifier says — `ANY` (the default: at least one), `ALL`,
    /// `NONE`, `AT LEAST (n)`, a number `n` (exactly n) or a range `n..m`. Written with the
    /// constructs the engine has: `ANY`/`ALL`/`NONE` compare the per-element truth values
    /// with `true`, the counts compare `LENGTH(input[* FILTER condition])` (`IN` a range).
    fn question_filter(&mut self, input: Expr) -> Result<Expr> {
        self.enter()?;
        self.expect_sym("[")?;
        self.expect_sym("?")?;
        enum Count {
            Quantified(Quantifier),
            AtLeast(Expr),
            Exactly(Expr),
        }
        let count = if self.eat_kw(Kw::Any) {
            Count::Quantified(Quantifier::Any)
        } else if self.eat_kw(Kw::All) {
            Count::Quantified(Quantifier::All)
        } else if self.eat_kw(Kw::None) {
            Count::Quantified(Quantifier::None)
        } else if self.at_least() {
            self.expect_sym("(")?;
            let n = self.expr()?;
            self.expect_sym(")")?;
            Count::AtLeast(n)
        } else if self.is_kw(Kw::Filter) {
            Count::Quantified(Quantifier::Any)
        } else {
            Count::Exactly(self.expr()?)
        };
        if !self.eat_kw(Kw::Filter) {
            self.leave();
            return Err(self.unexpected());
        }
        self.expansion += 1;
        let condition = self.expr();
        self.expansion -= 1;
        let condition = condition?;
        self.expect_sym("]")?;
        self.leave();
        let matching = || {
            Expr::Call(
                "LENGTH".into(),
                vec![Expr::Expansion {
                    input: Box::new(input.clone()),
                    depth: 1,
                    filter: Some(Box::new(condition.clone())),
                    limit: None,
                    project: None,
                }],
            )
        };
        Ok(match count {
            Count::Quantified(q) => Expr::ArrayCompare(
                q,
                BinOp::Eq,
                Box::new(Expr::Expansion {
                    input: Box::new(input.clone()),
                    depth: 1,
                    filter: None,
                    limit: None,
                    project: Some(Box::new(Expr::Call(
                        "TO_BOOL".into(),
                        vec![condition.clone()],
                    ))),
                }),
                Box::new(Expr::lit(Value::Bool(true))),
            ),
            Count::AtLeast(n) => Expr::Binary(BinOp::Ge, Box::new(matching()), Box::new(n)),
            // `low..high`: a count within the range, bounds included.
            Count::Exactly(n @ Expr::Range(..)) => {
                Expr::Binary(BinOp::In, Box::new(matching()), Box::new(n))
            }
            Count::Exactly(n) => Expr::Binary(BinOp::Eq, Box::new(matching()), Box::new(n)),
        })
    }

    /// The comparison operator after `AT LEAST (n)` (`==` … `NOT IN`), consumed.
    fn comparison_operator(&mut self) -> Result<BinOp> {
        let (op, len) = match (self.peek(), self.peek_at(1)) {
            (Tok::Sym("=="), _) => (BinOp::Eq, 1),
            (Tok::Sym("!="), _) => (BinOp::Ne, 1),
            (Tok::Sym("<"), _) => (BinOp::Lt, 1),
            (Tok::Sym("<="), _) => (BinOp::Le, 1),
            (Tok::Sym(">"), _) => (BinOp::Gt, 1),
            (Tok::Sym(">="), _) => (BinOp::Ge, 1),
            (Tok::Kw(Kw::In), _) => (BinOp::In, 1),
            (Tok::Kw(Kw::Not), Tok::Kw(Kw::In)) => (BinOp::NotIn, 2),
            _ => return Err(self.unexpected()),
        };
        for _ in 0..len {
            self.advance();
        }
        Ok(op)
    }

    /// Whether `AT LEAST` comes next (two words to AQL's lexer); consumes it.
    fn at_least(&mut self) -> bool {
        let word = |t: &Tok, w: &str| matches!(t, Tok::Ident(s) if s.eq_ignore_ascii_case(w));
        if word(self.peek(), "AT") && word(self.peek_at(1), "LEAST") {
            self.advance();
            self.advance();
            true
        } else {
            false
        }
    }

    fn expansion(&mut self, input: Expr) -> Result<Expr> {
        self.enter()?;
        self.expect_sym("[")?;
        let mut depth = 0;
        while self.eat_sym("*") {
            depth += 1;
        }
        self.expansion += 1;
        let inner = self.expansion_clauses();
        let (filter, limit, ret) = match inner {
            Ok(v) => v,
            Err(e) => {
                self.expansion -= 1;
                return Err(e);
            }
        };
        let closed = self.expect_sym("]");
        // Attribute/index accesses and further expansions after `[*]` apply per element.
        let mut project: Option<Expr> = ret.map(|b| *b);
        let tail = closed.and_then(|_| {
            let mut current = project.take().unwrap_or(Expr::Current);
            let mut touched = !matches!(current, Expr::Current);
            // Same weight accounting as `postfix`: the chain is deep for every later walk.
            let mut links = 0;
            loop {
                if self.is_sym(".") {
                    self.advance();
                    let name = self.attribute_name()?;
                    current = Expr::Attribute(Box::new(current), name);
                    touched = true;
                } else if self.is_sym("[") {
                    if matches!(self.peek_at(1), Tok::Sym("*")) {
                        current = self.expansion(current)?;
                        touched = true;
                        break;
                    }
                    self.advance();
                    let index = self.expr()?;
                    self.expect_sym("]")?;
                    current = Expr::Index(Box::new(current), Box::new(index));
                    touched = true;
                } else {
                    break;
                }
                self.link(&mut links)?;
            }
            self.weight -= links;
            Ok(if touched { Some(current) } else { None })
        });
        self.expansion -= 1;
        self.leave();
        let project = tail?;
        if depth == 0 {
            return Err(self.unexpected());
        }
        Ok(Expr::Expansion {
            input: Box::new(input),
            depth,
            filter,
            limit,
            project: project.map(Box::new),
        })
    }

    /// The optional `FILTER`, `LIMIT` and `RETURN` clauses inside `[* ...]`.
    fn expansion_clauses(&mut self) -> Result<ExpansionClauses> {
        let filter = if self.eat_kw(Kw::Filter) {
            Some(Box::new(self.expr()?))
        } else {
            None
        };
        let limit = if self.eat_kw(Kw::Limit) {
            let first = self.expr()?;
            if self.eat_sym(",") {
                Some((Box::new(first), Box::new(self.expr()?)))
            } else {
                Some((Box::new(Expr::lit(Value::from(0))), Box::new(first)))
            }
        } else {
            None
        };
        let ret = if self.eat_kw(Kw::Return) {
            Some(Box::new(self.expr()?))
        } else {
            None
        };
        Ok((filter, limit, ret))
    }

    fn primary(&mut self) -> Result<Expr> {
        let token = self.tokens[self.pos].clone();
        match token.tok {
            Tok::Int(i) => {
                self.advance();
                Ok(Expr::lit(Value::from(i)))
            }
            Tok::Float(f) => {
                self.advance();
                // Through `number` so that `1.0` is the integer 1, printed as ArangoDB does.
                Ok(Expr::lit(crate::value::number(f)))
            }
            Tok::Str(s) => {
                self.advance();
                Ok(Expr::lit(Value::String(s)))
            }
            Tok::Kw(Kw::Null) => {
                self.advance();
                Ok(Expr::lit(Value::Null))
            }
            Tok::Kw(Kw::True) => {
                self.advance();
                Ok(Expr::lit(Value::Bool(true)))
            }
            Tok::Kw(Kw::False) => {
                self.advance();
                Ok(Expr::lit(Value::Bool(false)))
            }
            Tok::Bind(name) => {
                self.advance();
                Ok(Expr::Bind(name))
            }
            Tok::BindColl(name) => {
                self.advance();
                Ok(Expr::BindCollection(name))
            }
            Tok::Sym("[") => {
                self.advance();
                self.enter()?;
                let mut items = Vec::new();
                while !self.is_sym("]") {
                    items.push(self.expr()?);
                    if !self.eat_sym(",") {
                        break;
                    }
                }
                self.expect_sym("]")?;
                self.leave();
                Ok(Expr::Array(items))
            }
            Tok::Sym("{") => {
                self.advance();
                self.object()
            }
            Tok::Sym("(") => {
                self.advance();
                let saved = self.no_in;
                self.no_in = false;
                let result = self.expression_or_query();
                self.no_in = saved;
                let e = result?;
                self.expect_sym(")")?;
                Ok(e)
            }
            Tok::Ident(name) => {
                self.advance();
                if self.is_sym("(") || self.is_sym("::") {
                    let mut full = name;
                    while self.eat_sym("::") {
                        full.push_str("::");
                        full.push_str(&self.attribute_name()?);
                    }
                    return self.call(full);
                }
                if self.expansion > 0 && name == "CURRENT" {
                    return Ok(Expr::Current);
                }
                Ok(Expr::Name(name))
            }
            Tok::QuotedIdent(name) => {
                self.advance();
                Ok(Expr::Name(name))
            }
            // LIKE(...) is both an operator and a function.
            Tok::Kw(Kw::Like) if matches!(self.peek_at(1), Tok::Sym("(")) => {
                self.advance();
                self.call("LIKE".into())
            }
            _ => Err(self.unexpected()),
        }
    }

    /// An expression, or a subquery when the next token starts a query (inside parentheses
    /// and as a function argument, ArangoDB's `expression_or_query`).
    fn expression_or_query(&mut self) -> Result<Expr> {
        if matches!(
            self.peek(),
            Tok::Kw(
                Kw::For
                    | Kw::Let
                    | Kw::Return
                    | Kw::With
                    | Kw::Insert
                    | Kw::Update
                    | Kw::Replace
                    | Kw::Remove
                    | Kw::Upsert
                    | Kw::Collect
            )
        ) {
            self.query().map(|q| Expr::Subquery(Box::new(q)))
        } else {
            self.expr()
        }
    }

    fn call(&mut self, name: String) -> Result<Expr> {
        self.expect_sym("(")?;
        self.enter()?;
        let saved = self.no_in;
        self.no_in = false;
        let mut args = Vec::new();
        let mut result = Ok(());
        while !self.is_sym(")") {
            // ArangoDB's `expression_or_query`: `LENGTH(FOR d IN c RETURN d)` passes the
            // subquery's result array without extra parentheses.
            match self.expression_or_query() {
                Ok(e) => args.push(e),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
            if !self.eat_sym(",") {
                break;
            }
        }
        self.no_in = saved;
        result?;
        self.expect_sym(")")?;
        self.leave();
        Ok(Expr::Call(name.to_ascii_uppercase(), args))
    }

    fn object(&mut self) -> Result<Expr> {
        self.enter()?;
        let saved = self.no_in;
        self.no_in = false;
        let result = self.object_members();
        self.no_in = saved;
        self.leave();
        result.map(Expr::Object)
    }

    fn object_members(&mut self) -> Result<Vec<(ObjectKey, Expr)>> {
        let mut members = Vec::new();
        while !self.is_sym("}") {
            let token = self.tokens[self.pos].clone();
            let member = match token.tok {
                Tok::Sym("[") => {
                    self.advance();
                    let key = self.expr()?;
                    self.expect_sym("]")?;
                    self.expect_sym(":")?;
                    (ObjectKey::Computed(key), self.expr()?)
                }
                Tok::Bind(name) => {
                    self.advance();
                    self.expect_sym(":")?;
                    (ObjectKey::Computed(Expr::Bind(name)), self.expr()?)
                }
                Tok::Ident(name) | Tok::QuotedIdent(name)
                    if !matches!(self.peek_at(1), Tok::Sym(":")) =>
                {
                    // Shorthand `{ a }` = `{ a: a }`.
                    self.advance();
                    (ObjectKey::Static(name.clone()), Expr::Name(name))
                }
                Tok::Ident(name) | Tok::QuotedIdent(name) | Tok::Str(name) => {
                    self.advance();
                    self.expect_sym(":")?;
                    (ObjectKey::Static(name), self.expr()?)
                }
                Tok::Int(_) | Tok::Float(_) | Tok::Kw(_) => {
                    self.advance();
                    self.expect_sym(":")?;
                    let key = self.query[token.start..token.end].to_string();
                    (ObjectKey::Static(key), self.expr()?)
                }
                _ => return Err(self.unexpected()),
            };
            members.push(member);
            if !self.eat_sym(",") {
                break;
            }
        }
        self.expect_sym("}")?;
        Ok(members)
    }
}

/// Whether `word` may be used as a plain name (it is not a reserved keyword).
pub fn is_reserved(word: &str) -> bool {
    Kw::from_word(word).is_some() && !CONTEXT_WORDS.iter().any(|w| w.eq_ignore_ascii_case(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(q: &str) -> Query {
        parse(q).unwrap_or_else(|e| panic!("{q}: {e}"))
    }

    fn err(q: &str) -> Error {
        parse(q).expect_err(q)
    }

    #[test]
    fn parses_the_statement_zoo() {
        for q in [
            "RETURN 1",
            "for u in users filter u.a == 1 && u.b != 2 sort u.x desc, u.y limit 2, 3 return u",
            "FOR i IN 1..10 LET x = i * 2 COLLECT g = x % 3 AGGREGATE s = SUM(x) INTO grp = i RETURN [g, s]",
            "FOR i IN 1..3 COLLECT WITH COUNT INTO n RETURN n",
            "FOR i IN 1..3 COLLECT a = i INTO g KEEP i OPTIONS { method: 'sorted' } RETURN g",
            "FOR i IN 1..5 WINDOW { preceding: 1, following: 1 } AGGREGATE s = SUM(i) RETURN s",
            "FOR i IN 1..5 WINDOW i WITH { preceding: 1 } AGGREGATE s = SUM(i) RETURN s",
            "WITH a, b FOR x IN a RETURN x",
            "INSERT { a: 1 } INTO c OPTIONS { ignoreErrors: true } RETURN NEW",
            "FOR d IN c UPDATE d WITH { a: 1 } IN c RETURN { o: OLD, n: NEW }",
            "FOR d IN c REPLACE d._key WITH { a: 1 } IN c",
            "FOR d IN c REMOVE d IN c LET removed = OLD RETURN removed",
            "UPSERT { a: 1 } INSERT { a: 1 } UPDATE { b: OLD.b + 1 } IN c RETURN NEW",
            "UPSERT { a: 1 } INSERT { a: 1 } REPLACE { b: 2 } IN @@c",
            "RETURN DISTINCT [1, 2, 3][*]",
            "RETURN u.friends[* FILTER CURRENT.age > 1 LIMIT 2 RETURN CURRENT.name]",
            "RETURN u.a[*].b[**].c",
            "RETURN { a, [CONCAT('x', 1)]: 2, 'q': 3, `w`: 4, @k: 5, count: 6, }",
            "RETURN a.b['c'][0].`d`.@attr",
            "RETURN 1 ? 2 : 3 ?: 4",
            "RETURN [1] ANY == 1 && [1] ALL IN [1] && [1] NONE NOT IN [2]",
            "RETURN 'a' LIKE 'b' && 'a' NOT LIKE 'c' && 'a' =~ 'x' && 'a' !~ 'y' && 1 NOT IN []",
            "RETURN (FOR i IN 1..2 RETURN i)",
            "LET x = (RETURN 1) RETURN x",
            "RETURN LIKE('a', 'a') // trailing comment",
            "RETURN /* inline */ NOT -1 + +2",
            "RETURN ns::func(1)",
            "FOR v, e, p IN 1..3 OUTBOUND 'a/b' GRAPH 'g' RETURN v",
            "FOR v IN OUTBOUND 'a/b' edges, INBOUND other RETURN v",
        ] {
            ok(q);
        }
    }

    #[test]
    fn precedence_follows_arangodb() {
        let q = ok("RETURN 1 + 2 * 3 == 7 && true || false");
        let Op::Return { expr, .. } = &q.ops[0] else {
            panic!()
        };
        let Expr::Binary(BinOp::Or, left, _) = expr else {
            panic!("{expr:?}")
        };
        let Expr::Binary(BinOp::And, eq, _) = &**left else {
            panic!()
        };
        let Expr::Binary(BinOp::Eq, sum, _) = &**eq else {
            panic!()
        };
        assert!(matches!(&**sum, Expr::Binary(BinOp::Add, _, _)));
        let q = ok("RETURN 1..2 + 1");
        let Op::Return { expr, .. } = &q.ops[0] else {
            panic!()
        };
        assert!(matches!(expr, Expr::Range(_, _)));
    }

    #[test]
    fn update_document_does_not_swallow_in() {
        let q = ok("FOR d IN c UPDATE d IN c");
        let Op::Modify(m) = &q.ops[1] else { panic!() };
        assert_eq!(m.first, Expr::Name("d".into()));
        assert_eq!(m.collection, CollectionRef::Name("c".into()));
    }

    #[test]
    fn errors_carry_position() {
        let e = err("FOR i IN 1..2 RETURN i RETURN 2");
        assert_eq!(e.code, ErrorCode::QueryParse);
        assert!(
            e.message
                .contains("unexpected RETURN declaration near 'RETURN 2' at position 1:24"),
            "{}",
            e.message
        );
        let e = err("FOR i IN\n  [1, 2");
        assert!(
            e.message.contains("unexpected end of query string"),
            "{}",
            e.message
        );
        assert!(e.message.contains("position 2:8"), "{}", e.message);
        for q in [
            "",
            "   ",
            "FOR",
            "RETURN",
            "FOR i IN 1..2",
            "LET x = 1",
            "RETURN {a:}",
            "RETURN [*]",
            "COLLECT RETURN 1",
        ] {
            assert_eq!(err(q).code, ErrorCode::QueryParse, "{q}");
        }
    }

    #[test]
    fn deep_nesting_is_rejected_not_overflowing() {
        let q = format!("RETURN {}1{}", "[".repeat(5000), "]".repeat(5000));
        assert_eq!(err(&q).code, ErrorCode::QueryTooMuchNesting);
        let q = format!("RETURN {}1", "-".repeat(5000));
        assert_eq!(err(&q).code, ErrorCode::QueryTooMuchNesting);
    }

    #[test]
    fn integral_float_literals_are_integers() {
        // ArangoDB prints `RETURN 1.0` as `1`; the literal must not keep its fraction.
        let dbg = format!("{:?}", parse("RETURN [1.0, 2.5, 3e0]").unwrap());
        assert!(
            dbg.contains("Number(1)") && dbg.contains("Number(3)"),
            "{dbg}"
        );
        assert!(
            dbg.contains("Number(2.5)") && !dbg.contains("Number(1.0)"),
            "{dbg}"
        );
    }

    #[test]
    fn long_access_chains_are_rejected_not_overflowing() {
        // Found by the hostile e2e test: these crashed the server in later tree walks.
        for q in [
            format!("RETURN x{}", ".a".repeat(20000)),
            format!("RETURN [1][0]{}", "[0]".repeat(20000)),
            format!("RETURN [1][*]{}", ".a".repeat(20000)),
        ] {
            assert_eq!(err(&q).code, ErrorCode::QueryTooMuchNesting, "{}", &q[..20]);
        }
        // Moderate chains, also many in a row, stay fine: the budget is per chain.
        let chain = format!("x{}", ".a".repeat(100));
        let q = format!("LET x = {{}} RETURN [{}]", vec![chain; 20].join(", "));
        parse(&q).unwrap();
    }
}
