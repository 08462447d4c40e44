//! The AQL function library (filled in by the following commits).
