//! The reference integration.
