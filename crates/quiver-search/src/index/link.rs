//! A view's link to one collection, as ArangoDB defines it: which attributes are indexed
//! (`fields`, nested, `includeAllFields`), with which analyzers, whether array positions are
//! part of the path (`trackListPositions`), `storeValues` and `inBackground`. Sub-fields
//! inherit every setting they do not override. A field with `nested` indexes each object of
//! its array as an element of its own (nested search, see `nested.rs`).

use std::collections::BTreeMap;

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Map, Value};

/// The deepest `fields` nesting a link may have (bounds the recursion of parsing and indexing).
pub const MAX_FIELD_DEPTH: usize = 64;

/// Settings of one attribute of a link (or of the link itself, at the root); `None` inherits.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FieldDefinition {
    pub analyzers: Option<Vec<String>>,
    pub include_all_fields: Option<bool>,
    pub track_list_positions: Option<bool>,
    pub fields: BTreeMap<String, FieldDefinition>,
    /// `nested`: the sub-fields of the objects of this field's array, each object indexed as
    /// an element of its own (None: not a nested field).
    pub nested: Option<BTreeMap<String, FieldDefinition>>,
}

/// A link of a view to one collection.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkDefinition {
    /// The root settings: `analyzers` (default `["identity"]`), `includeAllFields`,
    /// `trackListPositions` and the top-level `fields`.
    pub root: FieldDefinition,
    /// `storeValues`: `none` or `id`.
    pub store_values: String,
    /// `inBackground` (accepted and reported; links are always built without blocking writers).
    pub in_background: bool,
}

/// The settings in force for one attribute after inheritance.
#[derive(Clone, Copy, Debug)]
pub struct Resolved<'a> {
    pub analyzers: &'a [String],
    pub include_all_fields: bool,
    pub track_list_positions: bool,
    pub fields: &'a BTreeMap<String, FieldDefinition>,
    /// The `nested` sub-fields, when this is a nested field.
    pub nested: Option<&'a BTreeMap<String, FieldDefinition>>,
}

const IDENTITY: &[String] = &[];

impl LinkDefinition {
    /// Parses a link object of `/_api/view` (400/10 with a message on bad input). Analyzer
    /// names are kept as given; the caller checks that they exist.
    pub fn from_json(value: &Value) -> Result<LinkDefinition> {
        let Some(obj) = value.as_object() else {
            return Err(bad("link definition must be an object"));
        };
        let root = parse_field(obj, 0)?;
        if root.nested.is_some() {
            return Err(bad("'nested' is only allowed for fields of a link"));
        }
        let store_values = match obj.get("storeValues") {
            None | Some(Value::Null) => "none".to_string(),
            Some(Value::String(s)) if s == "none" || s == "id" => s.clone(),
            Some(_) => return Err(bad("storeValues must be \"none\" or \"id\"")),
        };
        let in_background = match obj.get("inBackground") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(bad("inBackground must be a boolean")),
        };
        Ok(LinkDefinition {
            root,
            store_values,
            in_background,
        })
    }

    /// The link as `/_api/view/{name}/properties` reports it.
    pub fn to_json(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("analyzers".into(), json!(self.root_analyzers()));
        obj.insert("fields".into(), fields_json(&self.root.fields));
        obj.insert(
            "includeAllFields".into(),
            json!(self.root.include_all_fields.unwrap_or(false)),
        );
        obj.insert("storeValues".into(), json!(self.store_values));
        obj.insert(
            "trackListPositions".into(),
            json!(self.root.track_list_positions.unwrap_or(false)),
        );
        Value::Object(obj)
    }

    /// The link's own analyzers (`identity` unless given).
    pub fn root_analyzers(&self) -> Vec<String> {
        self.root
            .analyzers
            .clone()
            .unwrap_or_else(|| vec!["identity".to_string()])
    }

    /// Every analyzer name the link uses anywhere.
    pub fn analyzer_names(&self) -> Vec<String> {
        fn walk(f: &FieldDefinition, out: &mut Vec<String>) {
            for a in f.analyzers.iter().flatten() {
                if !out.contains(a) {
                    out.push(a.clone());
                }
            }
            f.fields.values().for_each(|c| walk(c, out));
            f.nested.iter().flatten().for_each(|(_, c)| walk(c, out));
        }
        let mut out = self.root_analyzers();
        walk(&self.root, &mut out);
        out
    }

    /// Rewrites every analyzer name through `map` (the caller's normalisation, e.g.
    /// `::name` and `db::name` to the name of the current database).
    pub fn map_analyzers(&mut self, map: &impl Fn(&str) -> String) {
        fn walk(f: &mut FieldDefinition, map: &impl Fn(&str) -> String) {
            if let Some(list) = &mut f.analyzers {
                for a in list.iter_mut() {
                    *a = map(a);
                }
            }
            f.fields.values_mut().for_each(|c| walk(c, map));
            f.nested
                .iter_mut()
                .flatten()
                .for_each(|(_, c)| walk(c, map));
        }
        walk(&mut self.root, map);
    }

    /// The settings at the document's root.
    pub fn resolved_root(&self) -> Resolved<'_> {
        Resolved {
            analyzers: IDENTITY,
            include_all_fields: self.root.include_all_fields.unwrap_or(false),
            track_list_positions: self.root.track_list_positions.unwrap_or(false),
            fields: &self.root.fields,
            nested: None,
        }
    }
}

impl<'a> Resolved<'a> {
    /// The settings of attribute `name` below this level: its own definition over the
    /// inherited settings, or the inherited settings when `includeAllFields` is on; None when
    /// the attribute is not indexed.
    pub fn child(&self, name: &str, link_analyzers: &'a [String]) -> Option<Resolved<'a>> {
        let inherited = if self.analyzers.is_empty() {
            link_analyzers
        } else {
            self.analyzers
        };
        match self.fields.get(name) {
            Some(def) => Some(Resolved {
                analyzers: def.analyzers.as_deref().unwrap_or(inherited),
                include_all_fields: def.include_all_fields.unwrap_or(self.include_all_fields),
                track_list_positions: def
                    .track_list_positions
                    .unwrap_or(self.track_list_positions),
                fields: &def.fields,
                nested: def.nested.as_ref(),
            }),
            None if self.include_all_fields => Some(Resolved {
                analyzers: inherited,
                include_all_fields: true,
                track_list_positions: self.track_list_positions,
                fields: empty_fields(),
                nested: None,
            }),
            None => None,
        }
    }

    /// The settings of one element of this nested field (its sub-fields are the `nested`
    /// ones); None when the field is not nested.
    pub fn element(&self) -> Option<Resolved<'a>> {
        Some(Resolved {
            fields: self.nested?,
            nested: None,
            ..*self
        })
    }
}

fn empty_fields() -> &'static BTreeMap<String, FieldDefinition> {
    static EMPTY: std::sync::OnceLock<BTreeMap<String, FieldDefinition>> =
        std::sync::OnceLock::new();
    EMPTY.get_or_init(BTreeMap::new)
}

fn parse_field(obj: &Map<String, Value>, depth: usize) -> Result<FieldDefinition> {
    if depth > MAX_FIELD_DEPTH {
        return Err(bad("link fields are nested too deeply"));
    }
    let analyzers = match obj.get("analyzers") {
        None | Some(Value::Null) => None,
        Some(Value::Array(list)) => {
            let mut names = Vec::with_capacity(list.len());
            for a in list {
                let Some(name) = a.as_str().filter(|s| !s.is_empty()) else {
                    return Err(bad("analyzers must be an array of analyzer names"));
                };
                if !names.iter().any(|n: &String| n == name) {
                    names.push(name.to_string());
                }
            }
            Some(names)
        }
        Some(_) => return Err(bad("analyzers must be an array of analyzer names")),
    };
    let flag = |name: &str| -> Result<Option<bool>> {
        match obj.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(bad(&format!("{name} must be a boolean"))),
        }
    };
    let sub_fields = |key: &str| -> Result<Option<BTreeMap<String, FieldDefinition>>> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(map)) => {
                let mut fields = BTreeMap::new();
                for (name, def) in map {
                    let Some(def) = def.as_object() else {
                        return Err(bad(&format!("field '{name}' must be an object")));
                    };
                    fields.insert(name.clone(), parse_field(def, depth + 1)?);
                }
                Ok(Some(fields))
            }
            Some(_) => Err(bad(&format!("{key} must be an object"))),
        }
    };
    Ok(FieldDefinition {
        analyzers,
        include_all_fields: flag("includeAllFields")?,
        track_list_positions: flag("trackListPositions")?,
        fields: sub_fields("fields")?.unwrap_or_default(),
        nested: sub_fields("nested")?,
    })
}

fn fields_json(fields: &BTreeMap<String, FieldDefinition>) -> Value {
    let mut out = Map::new();
    for (name, def) in fields {
        let mut obj = Map::new();
        if let Some(a) = &def.analyzers {
            obj.insert("analyzers".into(), json!(a));
        }
        if !def.fields.is_empty() {
            obj.insert("fields".into(), fields_json(&def.fields));
        }
        if let Some(nested) = &def.nested {
            obj.insert("nested".into(), fields_json(nested));
        }
        if let Some(b) = def.include_all_fields {
            obj.insert("includeAllFields".into(), json!(b));
        }
        if let Some(b) = def.track_list_positions {
            obj.insert("trackListPositions".into(), json!(b));
        }
        out.insert(name.clone(), Value::Object(obj));
    }
    Value::Object(out)
}

fn bad(message: &str) -> Error {
    Error::with_message(ErrorCode::BadParameter, message.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_fields_inherit_and_override() {
        let link = LinkDefinition::from_json(&json!({
            "analyzers": ["text_en"],
            "fields": {"a": {"fields": {"b": {"analyzers": ["identity"]}}}, "c": {}},
            "trackListPositions": true
        }))
        .unwrap();
        let link_analyzers = link.root_analyzers();
        let root = link.resolved_root();
        let a = root.child("a", &link_analyzers).unwrap();
        assert_eq!(a.analyzers, ["text_en"]);
        assert!(a.track_list_positions);
        let b = a.child("b", &link_analyzers).unwrap();
        assert_eq!(b.analyzers, ["identity"]);
        assert!(root.child("zzz", &link_analyzers).is_none());
        assert!(a.child("other", &link_analyzers).is_none());
        assert_eq!(link.analyzer_names(), ["text_en", "identity"]);
    }

    #[test]
    fn include_all_fields_indexes_everything_below() {
        let link = LinkDefinition::from_json(&json!({"includeAllFields": true})).unwrap();
        let names = link.root_analyzers();
        let x = link.resolved_root().child("x", &names).unwrap();
        assert_eq!(x.analyzers, ["identity"]);
        assert!(x.child("y", &names).is_some());
    }

    #[test]
    fn bad_definitions_are_refused() {
        for bad_link in [
            json!(1),
            json!({"analyzers": "identity"}),
            json!({"fields": []}),
            json!({"fields": {"a": 1}}),
            json!({"includeAllFields": "yes"}),
            json!({"storeValues": "all"}),
            json!({"nested": {"a": {}}}),
            json!({"fields": {"a": {"nested": []}}}),
        ] {
            let err = LinkDefinition::from_json(&bad_link).unwrap_err();
            assert_eq!(err.code, ErrorCode::BadParameter, "{bad_link}");
        }
    }

    #[test]
    fn nested_fields_resolve_per_element() {
        let link = LinkDefinition::from_json(&json!({
            "fields": {"dims": {"nested": {"type": {}, "m": {"nested": {"v": {}}}}}}
        }))
        .unwrap();
        let names = link.root_analyzers();
        let dims = link.resolved_root().child("dims", &names).unwrap();
        assert!(dims.child("type", &names).is_none());
        let element = dims.element().unwrap();
        assert!(element.child("type", &names).is_some());
        let m = element.child("m", &names).unwrap();
        assert!(m.element().unwrap().child("v", &names).is_some());
        assert!(element.element().is_none());
        let given = json!({"analyzers": ["identity"],
            "fields": {"dims": {"nested": {"type": {}}}},
            "includeAllFields": false, "storeValues": "none", "trackListPositions": false});
        assert_eq!(LinkDefinition::from_json(&given).unwrap().to_json(), given);
    }

    #[test]
    fn round_trips_through_json() {
        let given = json!({"analyzers": ["identity"], "fields": {"a": {"analyzers": ["text_en"]}},
            "includeAllFields": false, "storeValues": "none", "trackListPositions": false});
        let link = LinkDefinition::from_json(&given).unwrap();
        assert_eq!(link.to_json(), given);
        assert_eq!(LinkDefinition::from_json(&link.to_json()).unwrap(), link);
    }
}
