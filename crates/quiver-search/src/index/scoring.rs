//! ArangoSearch's scorers, BM25 and TFIDF, computed per matched term from the statistics of
//! the field (attribute path under one analyzer) the term belongs to, as ArangoSearch does:
//! the collection size in a formula is the number of live documents that have the field, and
//! a document's length is its number of tokens in that field.

/// A scorer as written in AQL: `BM25(doc, k, b)` or `TFIDF(doc, withNorms)`.
#[derive(Clone, Debug, PartialEq)]
pub enum Scorer {
    /// Defaults k = 1.2, b = 0.75; b = 0 drops length normalisation (BM15).
    Bm25 { k: f64, b: f64 },
    /// Default without norms.
    Tfidf { with_norms: bool },
}

impl Scorer {
    /// `BM25()` with ArangoDB's defaults.
    pub const BM25_DEFAULT: Scorer = Scorer::Bm25 { k: 1.2, b: 0.75 };
}

/// What the scorers know about one field over the live documents.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FieldStats {
    /// Live documents with at least one token in the field.
    pub docs_with_field: u64,
    /// Tokens of the field summed over those documents.
    pub total_length: u64,
}

impl Scorer {
    /// The contribution of one matched term to a document's score: `tf` occurrences in the
    /// document, whose field holds `doc_length` tokens; `df` live documents hold the term.
    ///
    /// BM25: `boost · idf · (k+1)·tf / (tf + k·(1 − b + b·len/avgLen))` with
    /// `idf = ln(1 + (N − df + 0.5)/(df + 0.5))`, N the documents with the field and avgLen
    /// their mean length. TFIDF: `boost · √tf · idf` with `idf = 1 + ln(N/(df + 1))`, times
    /// `1/√len` with norms.
    pub fn term_score(
        &self,
        tf: u32,
        df: u64,
        field: FieldStats,
        doc_length: u32,
        boost: f64,
    ) -> f64 {
        debug_assert!(
            df <= field.docs_with_field,
            "a term's documents have its field"
        );
        let n = field.docs_with_field as f64;
        let df = df as f64;
        let tf = f64::from(tf);
        match *self {
            Scorer::Bm25 { k, b } => {
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                let norm = if b == 0.0 || field.docs_with_field == 0 {
                    1.0
                } else {
                    let avg = field.total_length as f64 / n;
                    1.0 - b + b * f64::from(doc_length) / avg
                };
                boost * idf * (k + 1.0) * tf / (tf + k * norm)
            }
            Scorer::Tfidf { with_norms } => {
                let idf = 1.0 + (n / (df + 1.0)).ln();
                let norm = if with_norms && doc_length > 0 {
                    1.0 / f64::from(doc_length).sqrt()
                } else {
                    1.0
                };
                boost * tf.sqrt() * idf * norm
            }
        }
    }
}
