//! The v1alpha1 custom resources, one module per kind.

pub mod memcached;
