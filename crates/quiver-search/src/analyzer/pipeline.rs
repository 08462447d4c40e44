//! `pipeline`: analyzers chained so that every token of one is the input of the next. Geo
//! analyzers cannot be members (they need the raw JSON value, not a string). Every member
//! reads strings, so only the last may make numbers or booleans (an `aql` member with another
//! `returnType`); the pipeline's tokens then have that type.

use quiver_errors::Result;
use serde_json::{json, Value};

use super::props::object;
use super::{build_type, Built, Rejection, ReturnType, Token, TokenStream};

/// The most members a pipeline may have.
pub(crate) const PIPELINE_MEMBERS_MAX: usize = 64;

#[derive(Debug)]
struct Pipeline {
    members: Vec<Box<dyn TokenStream>>,
}

impl TokenStream for Pipeline {
    fn analyze(&self, input: &str, strict: bool, out: &mut Vec<Token>) -> Result<()> {
        let (first, rest) = self
            .members
            .split_first()
            .expect("a pipeline has at least one member");
        let mut tokens = Vec::new();
        first.analyze(input, strict, &mut tokens)?;
        for member in rest {
            let mut next = Vec::with_capacity(tokens.len());
            // Positions: a new position whenever (outer position, inner position) changes.
            let mut previous: Option<(u32, u32)> = None;
            let mut position: u32 = 0;
            let mut inner = Vec::new();
            for outer in &tokens {
                inner.clear();
                member.analyze(&outer.term, strict, &mut inner)?;
                for token in inner.drain(..) {
                    let key = (outer.position, token.position);
                    if previous.is_some_and(|p| p != key) {
                        position = position.saturating_add(1);
                    }
                    previous = Some(key);
                    // Offsets relative to the outer token, kept inside its span.
                    let start = outer.start.saturating_add(token.start).min(outer.end);
                    let end = outer
                        .start
                        .saturating_add(token.end)
                        .clamp(start, outer.end);
                    next.push(Token {
                        term: token.term,
                        position,
                        start,
                        end,
                    });
                }
            }
            tokens = next;
        }
        out.extend(tokens);
        Ok(())
    }

    fn return_type(&self) -> ReturnType {
        self.members
            .last()
            .map_or(ReturnType::String, |last| last.return_type())
    }
}

/// Builds one member definition-like object `{"type", "properties"}` of a pipeline or a
/// wildcard; returns the stream and the normalized member.
pub(crate) fn build_member(member: &Value) -> Result<(Box<dyn TokenStream>, Value), Rejection> {
    let Value::Object(fields) = member else {
        return Err("an analyzer member must be an object with 'type' and 'properties'".into());
    };
    let Some(Value::String(kind)) = fields.get("type") else {
        return Err("an analyzer member needs a string 'type'".into());
    };
    if matches!(kind.as_str(), "geojson" | "geopoint" | "geo_s2") {
        return Err(format!(
            "analyzer type '{kind}' cannot be used in a pipeline"
        ));
    }
    let properties = match fields.get("properties") {
        None | Some(Value::Null) => json!({}),
        Some(Value::String(text)) => serde_json::from_str(text)
            .map_err(|_| format!("the properties of member '{kind}' are not valid JSON"))?,
        Some(other) => other.clone(),
    };
    if !properties.is_object() {
        return Err(format!(
            "the properties of member '{kind}' must be an object"
        ));
    }
    let built = build_type(kind, &properties)
        .map_err(|reason| format!("member of type '{kind}' rejected: {reason}"))?;
    Ok((
        built.stream,
        json!({ "type": kind, "properties": built.properties }),
    ))
}

/// [`build_member`] for a member whose tokens another analyzer reads or hashes as text (a
/// wildcard's or minhash's analyzer): its tokens must be strings.
pub(crate) fn build_string_member(
    member: &Value,
) -> Result<(Box<dyn TokenStream>, Value), Rejection> {
    let (stream, json) = build_member(member)?;
    match stream.return_type() {
        ReturnType::String => Ok((stream, json)),
        other => Err(format!(
            "an analyzer whose tokens are of type '{}' cannot be used here: its output must \
             be strings",
            other.name()
        )),
    }
}

/// `{"pipeline": [{"type", "properties"}, …]}` (required, at least one member).
pub(crate) fn build(properties: &Value) -> Result<Built, Rejection> {
    let props = object(properties);
    let Some(Value::Array(items)) = props.get("pipeline") else {
        return Err("missing required array 'pipeline'".to_string());
    };
    if items.is_empty() {
        return Err("'pipeline' must have at least one member".to_string());
    }
    if items.len() > PIPELINE_MEMBERS_MAX {
        return Err(format!(
            "'pipeline' may have at most {PIPELINE_MEMBERS_MAX} members"
        ));
    }
    let mut members = Vec::with_capacity(items.len());
    let mut normalized = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let (stream, json) = build_member(item)?;
        if i + 1 < items.len() && stream.return_type() != ReturnType::String {
            return Err(format!(
                "pipeline member #{i} makes tokens of type '{}', which the next member cannot \
                 read: only the last member may make numbers or booleans",
                stream.return_type().name()
            ));
        }
        members.push(stream);
        normalized.push(json);
    }
    Ok(Built {
        properties: json!({ "pipeline": normalized }),
        stream: Box::new(Pipeline { members }),
    })
}
