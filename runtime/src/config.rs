//! Manager-wide defaults for every controller (controller-runtime's `pkg/config`,
//! `config.Controller`).
//!
//! A [`Controller`] sits in the manager's `Options::controller`. Each controller built
//! against that manager (the builder does it for you) takes from it every option its
//! own `controller::Options` leave unset: per-controller options win, then the manager's, then controller-runtime's
//! defaults. [`Controller::concurrency_for`] is the `group_kind_concurrency` lookup the
//! builder does for the `For` type.

use std::collections::BTreeMap;
use std::time::Duration;

/// Defaults the manager gives every controller (Go's `config.Controller`).
///
/// Every field is "unset" by default, so controller-runtime's own defaults apply:
/// build with struct update syntax,
/// `Controller { max_concurrent_reconciles: 4, ..Default::default() }`.
#[derive(Clone, Debug, Default)]
pub struct Controller {
    /// Allow controller names already used in this process (handy in test suites
    /// that build the same controller for each test). Unset means false.
    pub skip_name_validation: Option<bool>,
    /// Workers per `For` type, keyed by its group kind as Go's `GroupKind.String()`
    /// spells it: `"Kind.group"` (`"ReplicaSet.apps"`), or `"Kind"` for the core
    /// group (`"ConfigMap"`). Used by the builder when the controller's own
    /// `max_concurrent_reconciles` is 0; takes precedence over
    /// [`max_concurrent_reconciles`](Self::max_concurrent_reconciles).
    pub group_kind_concurrency: BTreeMap<String, usize>,
    /// Workers of a controller whose options leave `max_concurrent_reconciles` at 0
    /// and whose kind has no `group_kind_concurrency` entry. 0 means 1.
    pub max_concurrent_reconciles: usize,
    /// How long each source gets to start and sync. Zero means 2 minutes.
    pub cache_sync_timeout: Duration,
    /// Recover a panicking reconcile as an error. Unset means true.
    pub recover_panic: Option<bool>,
    /// Run controllers only on the elected leader. Unset means true.
    pub need_leader_election: Option<bool>,
    /// Start controllers' sources before leader election, on every replica (Go's
    /// `EnableWarmup`). Unset means false.
    pub enable_warmup: Option<bool>,
    /// Use the priority queue. Unset means true (controller-runtime's default).
    pub use_priority_queue: Option<bool>,
    /// Drop a reconcile after this long (the controller's own
    /// `Options::reconciliation_timeout` wins).
    /// Unset means no timeout.
    pub reconciliation_timeout: Option<Duration>,
}

impl Controller {
    /// The `group_kind_concurrency` entry for a type of API group `group` and kind
    /// `kind`, if set and non-zero (Go's builder lookup of `GroupKind.String()`).
    pub fn concurrency_for(&self, group: &str, kind: &str) -> Option<usize> {
        let key = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        self.group_kind_concurrency
            .get(&key)
            .copied()
            .filter(|n| *n > 0)
    }
}
