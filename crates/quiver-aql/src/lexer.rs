//! AQL tokenizer. Hand-written because AQL's lexical rules (case-insensitive keywords, two
//! identifier quotings, `@`/`@@` bind parameters, ranges like `1..2` next to floats) are the
//! product itself and a generic lexer crate would need as much glue as this.

use quiver_errors::{Error, ErrorCode, Result};

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Ident(String),
    /// Backtick- or forward-tick-quoted identifier.
    QuotedIdent(String),
    Str(String),
    Int(i64),
    Float(f64),
    /// `@name`
    Bind(String),
    /// `@@name`
    BindColl(String),
    Kw(Kw),
    Sym(&'static str),
    Eof,
}

macro_rules! keywords {
    ($($name:ident = $text:literal),* $(,)?) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Kw { $($name),* }
        impl Kw {
            pub fn from_word(word: &str) -> Option<Kw> {
                $(if word.eq_ignore_ascii_case($text) { return Some(Kw::$name); })*
                None
            }
            pub fn text(self) -> &'static str {
                match self { $(Kw::$name => $text),* }
            }
        }
    };
}

keywords! {
    For = "FOR", Return = "RETURN", Filter = "FILTER", Search = "SEARCH", Sort = "SORT",
    Limit = "LIMIT", Let = "LET", Collect = "COLLECT", Window = "WINDOW", With = "WITH",
    Into = "INTO", Asc = "ASC", Desc = "DESC", And = "AND", Or = "OR", Not = "NOT", In = "IN",
    Like = "LIKE", Null = "NULL", True = "TRUE", False = "FALSE", Distinct = "DISTINCT",
    Insert = "INSERT", Update = "UPDATE", Replace = "REPLACE", Remove = "REMOVE",
    Upsert = "UPSERT", Outbound = "OUTBOUND", Inbound = "INBOUND", Any = "ANY", All = "ALL",
    None = "NONE", ShortestPath = "SHORTEST_PATH", KShortestPaths = "K_SHORTEST_PATHS",
    KPaths = "K_PATHS", AllShortestPaths = "ALL_SHORTEST_PATHS", Graph = "GRAPH",
    Aggregate = "AGGREGATE",
}

/// Words that are keywords only in particular positions (ArangoDB allows them as names).
pub const CONTEXT_WORDS: &[&str] = &["KEEP", "COUNT", "OPTIONS", "PRUNE", "TO"];

#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub tok: Tok,
    /// Byte offset into the query.
    pub start: usize,
    /// Byte offset just past the token.
    pub end: usize,
    pub line: usize,
    pub column: usize,
}

/// Tokenizes the whole query. Fails with 1501 on malformed input (unterminated strings or
/// comments, stray characters).
pub fn tokenize(query: &str) -> Result<Vec<Token>> {
    let bytes = query.as_bytes();
    let mut tokens = Vec::new();
    let mut pos = 0usize;
    let mut line = 1usize;
    let mut line_start = 0usize;
    let mut columns = Columns::default();
    let err = |message: &str, at: usize, line: usize, line_start: usize| -> Error {
        Error::with_message(
            ErrorCode::QueryParse,
            format!(
                "AQL: syntax error, {message} near '{}' at position {line}:{} (while parsing)",
                near(query, at),
                column_of(query, line_start, at)
            ),
        )
    };
    while pos < bytes.len() {
        let c = bytes[pos];
        if c == b'\n' {
            pos += 1;
            line += 1;
            line_start = pos;
            continue;
        }
        if c.is_ascii_whitespace() {
            pos += 1;
            continue;
        }
        if c == b'/' && bytes.get(pos + 1) == Some(&b'/') {
            while pos < bytes.len() && bytes[pos] != b'\n' {
                pos += 1;
            }
            continue;
        }
        if c == b'/' && bytes.get(pos + 1) == Some(&b'*') {
            let open = pos;
            pos += 2;
            loop {
                if pos + 1 >= bytes.len() {
                    return Err(err(
                        "unexpected unterminated comment",
                        open,
                        line,
                        line_start,
                    ));
                }
                if bytes[pos] == b'*' && bytes[pos + 1] == b'/' {
                    pos += 2;
                    break;
                }
                if bytes[pos] == b'\n' {
                    line += 1;
                    line_start = pos + 1;
                }
                pos += 1;
            }
            continue;
        }
        let start = pos;
        let (tok_line, tok_line_start) = (line, line_start);
        let tok = if c.is_ascii_alphabetic() || c == b'_' || c == b'$' {
            while pos < bytes.len()
                && (bytes[pos].is_ascii_alphanumeric() || bytes[pos] == b'_' || bytes[pos] == b'$')
            {
                pos += 1;
            }
            let word = &query[start..pos];
            match Kw::from_word(word) {
                Some(kw) => Tok::Kw(kw),
                None => Tok::Ident(word.to_string()),
            }
        } else if c.is_ascii_digit()
            || (c == b'.'
                && bytes.get(pos + 1).is_some_and(u8::is_ascii_digit)
                && !prev_is_value(&tokens))
        {
            lex_number(query, &mut pos)
                .ok_or_else(|| err("unexpected number", start, line, line_start))?
        } else if c == b'"' || c == b'\'' {
            let (s, newlines, last_nl) = lex_string(query, &mut pos, c).ok_or_else(|| {
                err(
                    "unexpected unterminated string literal",
                    start,
                    line,
                    line_start,
                )
            })?;
            line += newlines;
            if let Some(nl) = last_nl {
                line_start = nl + 1;
            }
            Tok::Str(s)
        } else if c == b'`' || query[pos..].starts_with('\u{b4}') {
            let quote = if c == b'`' { "`" } else { "\u{b4}" };
            pos += quote.len();
            let mut name = String::new();
            loop {
                let rest = &query[pos..];
                if rest.is_empty() {
                    return Err(err(
                        "unexpected unterminated identifier",
                        start,
                        line,
                        line_start,
                    ));
                }
                if rest.starts_with('\\') && rest[1..].starts_with(quote) {
                    name.push_str(quote);
                    pos += 1 + quote.len();
                    continue;
                }
                if rest.starts_with(quote) {
                    pos += quote.len();
                    break;
                }
                let ch = rest.chars().next().unwrap_or(' ');
                name.push(ch);
                pos += ch.len_utf8();
            }
            Tok::QuotedIdent(name)
        } else if c == b'@' {
            pos += 1;
            let coll = bytes.get(pos) == Some(&b'@');
            if coll {
                pos += 1;
            }
            let name_start = pos;
            while pos < bytes.len() && (bytes[pos].is_ascii_alphanumeric() || bytes[pos] == b'_') {
                pos += 1;
            }
            if name_start == pos {
                return Err(err("unexpected bind parameter", start, line, line_start));
            }
            let name = query[name_start..pos].to_string();
            if coll {
                Tok::BindColl(name)
            } else {
                Tok::Bind(name)
            }
        } else {
            const SYMS: &[&str] = &[
                "...", "..", "==", "!=", "<=", ">=", "=~", "!~", "&&", "||", "::", "(", ")", "[",
                "]", "{", "}", ",", ".", ":", "?", "+", "-", "*", "/", "%", "<", ">", "=", "!",
            ];
            match SYMS.iter().find(|s| query[pos..].starts_with(**s)) {
                Some(&"...") => {
                    // `1...3` is not AQL; treat as range followed by a dot for a clear error.
                    pos += 2;
                    Tok::Sym("..")
                }
                Some(sym) => {
                    pos += sym.len();
                    Tok::Sym(sym)
                }
                None => return Err(err("unexpected character", start, line, line_start)),
            }
        };
        tokens.push(Token {
            tok,
            start,
            end: pos,
            line: tok_line,
            column: columns.at(query, tok_line_start, start),
        });
    }
    tokens.push(Token {
        tok: Tok::Eof,
        start: query.len(),
        end: query.len(),
        line,
        column: columns.at(query, line_start, query.len()),
    });
    Ok(tokens)
}

/// Token columns computed incrementally: tokens come in order, so the characters between the
/// previous token and this one are counted once, and a query on one long line costs O(n) in
/// total instead of O(n) per token.
#[derive(Default)]
struct Columns {
    /// Byte offset of the line the last answer was on.
    line_start: usize,
    /// Byte offset of the last answer, and its 1-based column.
    at: usize,
    column: usize,
}

impl Columns {
    fn at(&mut self, query: &str, line_start: usize, at: usize) -> usize {
        let at = at.min(query.len());
        let column = if self.column > 0 && self.line_start == line_start && self.at <= at {
            self.column + count_chars(query, self.at, at)
        } else {
            column_of(query, line_start, at)
        };
        // At most one column per byte since the line began (a full recount would make debug
        // builds quadratic again; the tests compare against `column_of`).
        debug_assert!(column >= 1 && column <= at.saturating_sub(line_start) + 1);
        *self = Columns {
            line_start,
            at,
            column,
        };
        column
    }
}

/// Characters in `query[from..to]` (bytes if the range does not fall on char boundaries).
fn count_chars(query: &str, from: usize, to: usize) -> usize {
    query.get(from..to).map_or(to - from, |s| s.chars().count())
}

fn prev_is_value(tokens: &[Token]) -> bool {
    matches!(
        tokens.last().map(|t| &t.tok),
        Some(
            Tok::Ident(_)
                | Tok::QuotedIdent(_)
                | Tok::Int(_)
                | Tok::Float(_)
                | Tok::Sym(")" | "]" | "}")
        )
    )
}

/// 1-based column in characters, as ArangoDB reports it.
pub fn column_of(query: &str, line_start: usize, at: usize) -> usize {
    let at = at.min(query.len());
    let line_start = line_start.min(at);
    query
        .get(line_start..at)
        .map_or(at - line_start, |s| s.chars().count())
        + 1
}

/// The text ArangoDB shows after "near": the rest of the query from the offending token,
/// cut at 32 bytes (on a char boundary) with "..." appended.
pub fn near(query: &str, at: usize) -> String {
    let rest = query.get(at..).unwrap_or("");
    if rest.len() <= 32 {
        return rest.to_string();
    }
    let mut cut = 32;
    while !rest.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...", &rest[..cut])
}

fn lex_number(query: &str, pos: &mut usize) -> Option<Tok> {
    let bytes = query.as_bytes();
    let start = *pos;
    if bytes[start] == b'0' && matches!(bytes.get(start + 1), Some(b'x' | b'X' | b'b' | b'B')) {
        let radix = if matches!(bytes[start + 1], b'x' | b'X') {
            16
        } else {
            2
        };
        *pos += 2;
        let digits = *pos;
        while *pos < bytes.len() && (bytes[*pos] as char).is_digit(radix) {
            *pos += 1;
        }
        return i64::from_str_radix(&query[digits..*pos], radix)
            .ok()
            .map(Tok::Int);
    }
    while *pos < bytes.len() && bytes[*pos].is_ascii_digit() {
        *pos += 1;
    }
    let mut is_float = false;
    // A '.' followed by a digit is a fraction; `1..2` is a range.
    if *pos < bytes.len()
        && bytes[*pos] == b'.'
        && bytes.get(*pos + 1).is_some_and(u8::is_ascii_digit)
    {
        is_float = true;
        *pos += 1;
        while *pos < bytes.len() && bytes[*pos].is_ascii_digit() {
            *pos += 1;
        }
    }
    if *pos < bytes.len() && matches!(bytes[*pos], b'e' | b'E') {
        let mut p = *pos + 1;
        if p < bytes.len() && matches!(bytes[p], b'+' | b'-') {
            p += 1;
        }
        if p < bytes.len() && bytes[p].is_ascii_digit() {
            while p < bytes.len() && bytes[p].is_ascii_digit() {
                p += 1;
            }
            *pos = p;
            is_float = true;
        }
    }
    let text = &query[start..*pos];
    if !is_float {
        if let Ok(i) = text.parse::<i64>() {
            return Some(Tok::Int(i));
        }
    }
    text.parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .map(Tok::Float)
}

/// Returns the unescaped string, the number of newlines inside and the offset of the last.
fn lex_string(query: &str, pos: &mut usize, quote: u8) -> Option<(String, usize, Option<usize>)> {
    let mut out = String::new();
    let mut newlines = 0;
    let mut last_nl = None;
    *pos += 1;
    let mut chars = query[*pos..].char_indices();
    let base = *pos;
    while let Some((i, ch)) = chars.next() {
        match ch {
            c if c as u32 == quote as u32 => {
                *pos = base + i + 1;
                return Some((out, newlines, last_nl));
            }
            '\\' => {
                let (_, esc) = chars.next()?;
                match esc {
                    'n' => out.push('\n'),
                    'r' => out.push('\r'),
                    't' => out.push('\t'),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    '/' => out.push('/'),
                    'u' => {
                        let mut code = 0u32;
                        for _ in 0..4 {
                            let (_, h) = chars.next()?;
                            code = code * 16 + h.to_digit(16)?;
                        }
                        // Surrogate pairs arrive as two \u escapes.
                        if (0xD800..0xDC00).contains(&code) {
                            let rest = chars.as_str();
                            if rest.starts_with("\\u") && rest.len() >= 6 {
                                if let Ok(low) =
                                    u32::from_str_radix(rest.get(2..6).unwrap_or(""), 16)
                                {
                                    if (0xDC00..0xE000).contains(&low) {
                                        for _ in 0..6 {
                                            chars.next();
                                        }
                                        let combined =
                                            0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                                        out.push(char::from_u32(combined).unwrap_or('\u{fffd}'));
                                        continue;
                                    }
                                }
                            }
                        }
                        out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                    }
                    '\n' => {
                        newlines += 1;
                        last_nl = Some(base + i + 1);
                        out.push('\n');
                    }
                    other => out.push(other),
                }
            }
            '\n' => {
                newlines += 1;
                last_nl = Some(base + i);
                out.push('\n');
            }
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(q: &str) -> Vec<Tok> {
        tokenize(q).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn columns_match_a_full_recount() {
        let query = "LET `é` = 'ü\nx' /* ß\n */ RETURN [`é`,\n  \"€\", 1..2]  // end\nFOR x IN y";
        for token in tokenize(query).unwrap() {
            let line_start = query[..token.start].rfind('\n').map_or(0, |i| i + 1);
            assert_eq!(
                token.column,
                column_of(query, line_start, token.start),
                "{token:?}"
            );
        }
    }

    #[test]
    fn one_long_line_lexes_in_linear_time() {
        // 1 MB on one line: about 200,000 tokens; counting from the line start for each would
        // be 10¹¹ character steps.
        let mut query = String::from("RETURN [");
        while query.len() < 1_000_000 {
            query.push_str("'ä',1,");
        }
        query.push_str("2]");
        let started = std::time::Instant::now();
        let tokens = tokenize(&query).unwrap();
        assert!(tokens.len() > 300_000);
        let last = &tokens[tokens.len() - 2];
        assert_eq!(last.column, query[..last.start].chars().count() + 1);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "took {:?}",
            started.elapsed()
        );
    }

    #[test]
    fn ranges_floats_and_keywords() {
        assert_eq!(
            toks("for i in 1..2.5 return 1e3"),
            vec![
                Tok::Kw(Kw::For),
                Tok::Ident("i".into()),
                Tok::Kw(Kw::In),
                Tok::Int(1),
                Tok::Sym(".."),
                Tok::Float(2.5),
                Tok::Kw(Kw::Return),
                Tok::Float(1000.0),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn strings_binds_comments() {
        assert_eq!(
            toks("'a\\'b' \"\\u00e9\" /* x */ @v @@c // tail"),
            vec![
                Tok::Str("a'b".into()),
                Tok::Str("é".into()),
                Tok::Bind("v".into()),
                Tok::BindColl("c".into()),
                Tok::Eof
            ]
        );
        assert_eq!(
            toks("`FOR`"),
            vec![Tok::QuotedIdent("FOR".into()), Tok::Eof]
        );
    }

    #[test]
    fn escapes_next_to_multibyte_characters() {
        // An invalid escape after a high surrogate is a clean error, not a panic.
        assert!(tokenize("'\\ud83d\\u1é'").is_err());
        assert_eq!(
            toks("'\\ud83d\\ude00'"),
            vec![Tok::Str("😀".into()), Tok::Eof]
        );
        assert!(tokenize("'\\ud83dé'").is_ok());
    }

    #[test]
    fn malformed_input_is_a_parse_error() {
        for q in ["'abc", "/* open", "#", "@", "`x"] {
            let e = tokenize(q).unwrap_err();
            assert_eq!(e.code, ErrorCode::QueryParse, "{q}");
        }
    }
}
