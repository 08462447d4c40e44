//! quiver-graph
