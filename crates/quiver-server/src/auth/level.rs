//! Access levels of databases and collections (`none`, `ro`, `rw`), ordered so that a higher
//! level includes every right of a lower one.

/// One access level. For a database `rw` is ArangoDB's *Administrate* and `ro` its *Access*;
/// for a collection `rw` is *Read/Write* and `ro` *Read Only*.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// No access.
    None,
    /// Read only (database: may use the database, not administrate it).
    ReadOnly,
    /// Read and write (database: administrate).
    ReadWrite,
}

impl Level {
    /// The level as the HTTP API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "none",
            Level::ReadOnly => "ro",
            Level::ReadWrite => "rw",
        }
    }

    /// Parses `none`, `ro` or `rw` (the `grant` values of `/_api/user`).
    pub fn parse(text: &str) -> Option<Level> {
        match text {
            "none" => Some(Level::None),
            "ro" => Some(Level::ReadOnly),
            "rw" => Some(Level::ReadWrite),
            _ => None,
        }
    }

    /// ArangoDB's stored form: `{"read": bool, "write": bool}`.
    pub fn to_permissions(self) -> serde_json::Value {
        serde_json::json!({
            "read": self >= Level::ReadOnly,
            "write": self == Level::ReadWrite,
        })
    }

    /// Reads the stored form back (missing flags are false).
    pub fn from_permissions(value: &serde_json::Value) -> Level {
        let flag = |name: &str| value.get(name).and_then(|v| v.as_bool()) == Some(true);
        if flag("write") {
            Level::ReadWrite
        } else if flag("read") {
            Level::ReadOnly
        } else {
            Level::None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_text_and_stored_form_round_trip() {
        assert!(Level::None < Level::ReadOnly && Level::ReadOnly < Level::ReadWrite);
        for level in [Level::None, Level::ReadOnly, Level::ReadWrite] {
            assert_eq!(Level::parse(level.as_str()), Some(level));
            assert_eq!(Level::from_permissions(&level.to_permissions()), level);
        }
        assert_eq!(Level::parse("RW"), None);
        assert_eq!(Level::parse("undefined"), None);
    }
}
