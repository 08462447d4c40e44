//! Geometry on the sphere, below every layer that needs it: the AQL geo functions and the geo
//! index (through `quiver_core::geo`) and ArangoSearch's geo analyzers and geo `SEARCH`
//! functions (`quiver-search`).
//!
//! `shape.rs` holds GeoJSON parsing, distances, containment, intersection and latitude/
//! longitude rectangles; `cells.rs` the hierarchical latitude/longitude grid whose cells the
//! geo analyzers index and geo searches cover their regions with.

pub mod cells;
mod shape;

pub use shape::*;
