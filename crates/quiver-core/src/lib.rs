//! quiver-core
