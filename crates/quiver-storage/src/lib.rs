//! quiver-storage
