//! The webhooks, one module per kind that has some.

pub mod memcached;
