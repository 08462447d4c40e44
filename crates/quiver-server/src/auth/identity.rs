//! Who a request runs as, once authenticated.

use std::sync::Arc;

/// The authenticated caller of a request. Set by the dispatcher before routing; inner
/// requests of a batch and queued async jobs carry their outer request's identity instead of
/// authenticating their own headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Identity {
    /// Every right everywhere: authentication is off, or a superuser JWT (signed with the
    /// server's secret, `server_id` and no `preferred_username`).
    Superuser,
    /// A user of `_system/_users`, by name; rights are looked up per request, so a grant
    /// change applies to the next request.
    User(Arc<str>),
}

impl Identity {
    /// The user name (`None` for the superuser).
    pub fn user(&self) -> Option<&str> {
        match self {
            Identity::Superuser => None,
            Identity::User(name) => Some(name),
        }
    }
}
