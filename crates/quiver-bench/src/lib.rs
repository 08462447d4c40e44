//! quiver-bench
