//! quiver-aql
