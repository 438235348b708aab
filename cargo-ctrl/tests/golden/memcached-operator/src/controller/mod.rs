//! The controllers, one per kind.

pub mod memcached;
