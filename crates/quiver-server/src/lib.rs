//! quiver-server
