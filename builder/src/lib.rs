//! ctrl-builder: the builders operator authors start from (controller-runtime's
//! `pkg/builder`).
//!
//! [`ControllerBuilder`] wires the pieces of `ctrl-runtime` — cache-backed
//! `source::Kind`s, event handlers, predicates — into a `controller::Controller` and
//! registers it with a `manager::Manager`:
//!
//! ```no_run
//! # fn demo(mgr: ctrl_runtime::manager::Manager) -> Result<(), ctrl_builder::Error> {
//! use ctrl_builder::ControllerBuilder;
//! use ctrl_runtime::predicate::GenerationChanged;
//! use ctrl_runtime::reconcile::{self, Action};
//! use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
//!
//! ControllerBuilder::new(&mgr)
//!     .for_::<Deployment>()
//!     .owns::<ReplicaSet>()
//!     .with_event_filter(GenerationChanged)
//!     .complete(reconcile::func(|_ctx, req| async move {
//!         tracing::info!(%req, "reconciling");
//!         Ok(Action::done())
//!     }))
//! # }
//! ```
//!
//! The modules: [`controller`] is the builder itself; [`options`] the per-watch
//! options (Go's `ForOption`, `OwnsOption`, `WatchesOption`); [`filter`] the
//! type-independent predicates [`ControllerBuilder::with_event_filter`] takes (Go's
//! global predicates); [`reconciler`] what `build`/`complete` accept (a reconciler of
//! the controller's requests, or of `Arc<K>` objects of the `For` type fed from the
//! cache); [`error`] why a build fails; `multicluster` (feature `multicluster`) the builder of
//! a controller over every engaged cluster; `webhook` (feature `webhook`) the `WebhookBuilder`
//! (Go's `ctrl.NewWebhookManagedBy`). `ControllerBuilder::sharded` needs the `sharding`
//! feature.

pub mod controller;
pub mod error;
pub mod filter;
#[cfg(feature = "multicluster")]
pub mod multicluster;
pub mod options;
pub mod reconciler;
#[cfg(feature = "webhook")]
pub mod webhook;

mod log;
mod shared;

pub use controller::ControllerBuilder;
pub use error::Error;
pub use filter::{EventFilter, FilterEvent, ObjectView};
#[cfg(feature = "multicluster")]
pub use multicluster::MultiClusterBuilder;
pub use options::{ForOptions, OwnsOptions, WatchesOptions};
pub use reconciler::{ReconcilerInput, object_func};
#[cfg(feature = "webhook")]
pub use webhook::{DefaulterOptions, WebhookBuilder, WebhookError};
