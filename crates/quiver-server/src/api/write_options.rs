//! The options of a document write, parsed once from a request for every route that writes
//! documents: the document API (single, multi and the batch API's grouped inserts), the
//! import API and gharial's vertex and edge routes. Routes adjust the few options they define
//! differently (import's `onDuplicate`, gharial's `rev`) after this parse.

use quiver_core::{OverwriteMode, WriteOptions};
use quiver_errors::Result;

use crate::Request;

/// Reads `waitForSync`, `returnNew`, `returnOld`, `silent`, `keepNull`, `mergeObjects`,
/// `overwriteMode` (or the older `overwrite`), `ignoreRevs`, `versionAttribute` and the
/// `If-Match` header, with ArangoDB's defaults. Error 400/10 for an unknown `overwriteMode`.
pub fn write_options(req: &Request) -> Result<WriteOptions> {
    let mut opts = WriteOptions::new();
    opts.wait_for_sync = req.bool_param("waitForSync", false);
    opts.return_new = req.bool_param("returnNew", false);
    opts.return_old = req.bool_param("returnOld", false);
    opts.silent = req.bool_param("silent", false);
    opts.keep_null = req.bool_param("keepNull", true);
    opts.merge_objects = req.bool_param("mergeObjects", true);
    opts.ignore_revs = req.bool_param("ignoreRevs", true);
    // overwriteMode beats overwrite (python sends overwrite=0 together with a mode).
    opts.overwrite_mode = match req.param("overwriteMode").map(str::trim) {
        Some(mode) if !mode.is_empty() && mode != "undefined" => OverwriteMode::parse(mode)?,
        _ if req.bool_param("overwrite", false) => OverwriteMode::Replace,
        _ => OverwriteMode::Conflict,
    };
    // An empty name means no external versioning (no stored attribute has an empty name).
    opts.version_attribute = req
        .param("versionAttribute")
        .filter(|name| !name.is_empty())
        .map(str::to_string);
    opts.if_match = req.header(http::header::IF_MATCH).map(str::to_string);
    Ok(opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    #[test]
    fn defaults_and_every_option() {
        let plain = write_options(&Request::build(Method::POST, "/_api/document/c")).unwrap();
        assert!(!plain.wait_for_sync && !plain.return_new && !plain.silent);
        assert!(plain.keep_null && plain.merge_objects && plain.ignore_revs);
        assert_eq!(plain.overwrite_mode, OverwriteMode::Conflict);
        assert_eq!(plain.version_attribute, None);

        let all = write_options(
            &Request::build(
                Method::POST,
                "/_api/document/c?waitForSync=true&returnNew=1&returnOld=true&silent=true\
             &keepNull=false&mergeObjects=false&ignoreRevs=false&overwrite=true\
             &overwriteMode=update&versionAttribute=v",
            )
            .with_header("if-match", "\"_rev1\""),
        )
        .unwrap();
        assert!(all.wait_for_sync && all.return_new && all.return_old && all.silent);
        assert!(!all.keep_null && !all.merge_objects && !all.ignore_revs);
        assert_eq!(all.overwrite_mode, OverwriteMode::Update);
        assert_eq!(all.version_attribute.as_deref(), Some("v"));
        assert_eq!(all.if_match.as_deref(), Some("\"_rev1\""));

        let legacy = write_options(&Request::build(
            Method::POST,
            "/_api/document/c?overwrite=true",
        ))
        .unwrap();
        assert_eq!(legacy.overwrite_mode, OverwriteMode::Replace);
        let err = write_options(&Request::build(
            Method::POST,
            "/_api/document/c?overwriteMode=sideways",
        ))
        .unwrap_err();
        assert_eq!(err.number(), 10);
    }
}
