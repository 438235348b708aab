//! ctrl: a Rust port of Go's controller-runtime.
//!
//! This facade re-exports the pieces operator authors use; see [`prelude`].

pub use ctrl_runtime::workqueue;
pub use ctrl_runtime::{cache, client};
pub use ctrl_runtime::{certwatcher, leaderelection, metrics, recorder, webhook};
pub use ctrl_runtime::{config, pprof};
pub use ctrl_runtime::{controller, controllerutil, event, handler, predicate, reconcile, source};
pub use ctrl_runtime::{healthz, manager};

/// The manager and its options (Go's `ctrl.Manager`, `ctrl.Options`,
/// `ctrl.SetupSignalHandler`).
pub use ctrl_runtime::manager::{Manager, Options, Runnable, RunnableFunc, shutdown_signal};

/// The controller builder (Go's `ctrl.NewControllerManagedBy(mgr)`) and its options.
pub use ctrl_builder::webhook::WebhookBuilder;
pub use ctrl_builder::{self as builder, ControllerBuilder};

/// The names most operators need, in one import: `use ctrl::prelude::*;`.
pub mod prelude {
    pub use ctrl_runtime::workqueue;

    pub use ctrl_builder::{ControllerBuilder, webhook::WebhookBuilder};

    pub use ctrl_runtime::controller::Controller;
    pub use ctrl_runtime::reconcile::{self, Action, Reconciler, Request};
    pub use ctrl_runtime::{controllerutil, event, handler, predicate, source};

    pub use ctrl_runtime::cache::{Cache, ListOptions};
    pub use ctrl_runtime::client::{Client, ignore_already_exists, ignore_not_found};
    pub use ctrl_runtime::healthz;
    pub use ctrl_runtime::manager::{Manager, Runnable, RunnableFunc, shutdown_signal};
    pub use ctrl_runtime::recorder;
}
