//! The catalog version's guard: every change of what queries plan against (databases,
//! collections, their names, indexes and views) holds one, and the version moves on when the
//! change is over (see `Core::catalog_version`).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::Settings;

/// Bumps the catalog version of [`Settings::catalog_version`] when dropped, i.e. after the
/// change (on every exit path: a failed change may still have changed something, and an extra
/// bump is harmless).
pub(crate) struct CatalogChange(Arc<Settings>);

impl CatalogChange {
    pub(crate) fn of(settings: &Arc<Settings>) -> CatalogChange {
        CatalogChange(Arc::clone(settings))
    }
}

impl Drop for CatalogChange {
    fn drop(&mut self) {
        self.0.catalog_version.fetch_add(1, Ordering::AcqRel);
    }
}
