//! ctrl: a Rust port of Go's controller-runtime.
//!
//! This facade re-exports the pieces operator authors use; see [`prelude`].

pub use ctrl_runtime::workqueue;

/// The names most operators need, in one import: `use ctrl::prelude::*;`.
pub mod prelude {
    pub use ctrl_runtime::workqueue;
}
