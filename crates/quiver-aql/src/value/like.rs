//! `LIKE` pattern matching: `%` matches any sequence, `_` exactly one character, and a
//! backslash escapes `%`, `_` or itself. The whole string must match.
//!
//! Hand-written rather than compiled to a regex because the matcher is tiny, needs no cache,
//! and runs in O(len(text) * len(pattern)) time without allocation beyond the lowercased
//! copies for case-insensitive matching.

#[derive(Clone, Copy, PartialEq)]
enum Token {
    Char(char),
    One,
    Many,
}

fn tokens(pattern: &str) -> Vec<Token> {
    let mut out = Vec::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e) => out.push(Token::Char(e)),
                // A trailing backslash matches a literal backslash.
                None => out.push(Token::Char('\\')),
            },
            '%' => {
                if out.last() != Some(&Token::Many) {
                    out.push(Token::Many);
                }
            }
            '_' => out.push(Token::One),
            c => out.push(Token::Char(c)),
        }
    }
    out
}

/// Whether `text` matches the `LIKE` `pattern`.
pub fn like(text: &str, pattern: &str, case_insensitive: bool) -> bool {
    if case_insensitive {
        let t: Vec<char> = text.to_lowercase().chars().collect();
        matches(&t, &tokens(&pattern.to_lowercase()))
    } else {
        let t: Vec<char> = text.chars().collect();
        matches(&t, &tokens(pattern))
    }
}

/// Greedy wildcard matching with a single backtrack point (the last `%` seen), which is
/// sufficient because `%` can absorb any mismatch before it.
fn matches(text: &[char], pat: &[Token]) -> bool {
    let (mut t, mut p) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pat.get(p) {
            Some(Token::Char(c)) if *c == text[t] => {
                t += 1;
                p += 1;
            }
            Some(Token::One) => {
                t += 1;
                p += 1;
            }
            Some(Token::Many) => {
                star = Some((p, t));
                p += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pat[p..].iter().all(|tok| *tok == Token::Many)
}

#[cfg(test)]
mod tests {
    use super::like;

    #[test]
    fn documented_examples() {
        assert!(like("cart", "ca_t", false));
        assert!(like("carrot", "ca%", false));
        assert!(!like("carrot", "ca_", false));
        assert!(like("foo bar baz", "%bar%", false));
        assert!(!like("foo bar baz", "bar", false));
        assert!(like("FoO bAr BaZ", "foo%baz", true));
        assert!(!like("FoO bAr BaZ", "foo%baz", false));
        assert!(like("", "", false));
        assert!(like("", "%", false));
        assert!(!like("", "_", false));
    }

    #[test]
    fn escapes_and_unicode() {
        assert!(like("50%", "50\\%", false));
        assert!(!like("500", "50\\%", false));
        assert!(like("a_b", "a\\_b", false));
        assert!(!like("axb", "a\\_b", false));
        assert!(like("a\\b", "a\\\\b", false));
        assert!(like("äöü", "_ö_", false));
        assert!(like("ÄÖÜ", "äöü", true));
        assert!(like("mississippi", "%iss%ppi", false));
        assert!(!like("mississippi", "%iss%ppx", false));
        assert!(like("abcabc", "%a%b%c", false));
    }
}
