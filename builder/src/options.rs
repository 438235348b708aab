//! Per-watch options: the predicates of one `For`, `Owns` or `Watches`, and
//! `match_every_owner` for `Owns` (controller-runtime's `builder.WithPredicates`,
//! `builder.MatchEveryOwner`).
//!
//! Predicates here are typed by the watched type `T`, as `ctrl_runtime::predicate`
//! predicates are; the builder's global filters (`crate::filter`) run before them.
//! A metadata-only watch (Go's `builder.OnlyMetadata`) is a watch of
//! `kube::core::PartialObjectMeta<K>`, so its predicates are typed on that.

use std::sync::Arc;

use ctrl_runtime::predicate::{BoxPredicate, Predicate};

/// Options of [`ControllerBuilder::for_with`](crate::ControllerBuilder::for_with).
pub struct ForOptions<T> {
    /// Predicates the `For` events must pass (after the global filters).
    pub predicates: Vec<BoxPredicate<T>>,
}

/// Options of [`ControllerBuilder::owns_with`](crate::ControllerBuilder::owns_with).
pub struct OwnsOptions<T> {
    /// Predicates the owned objects' events must pass (after the global filters).
    pub predicates: Vec<BoxPredicate<T>>,
    /// Reconcile every owner of the `For` type named in the owner references, not
    /// just the controller owner (Go's `builder.MatchEveryOwner`). Default false.
    pub match_every_owner: bool,
}

/// Options of [`ControllerBuilder::watches_with`](crate::ControllerBuilder::watches_with).
pub struct WatchesOptions<T> {
    /// Predicates the watched objects' events must pass (after the global filters).
    pub predicates: Vec<BoxPredicate<T>>,
}

macro_rules! common {
    ($t:ident) => {
        impl<T> Default for $t<T> {
            fn default() -> Self {
                Self::new()
            }
        }

        impl<T: 'static> $t<T> {
            /// Adds a predicate (Go's `builder.WithPredicates`).
            pub fn with_predicate(mut self, predicate: impl Predicate<T>) -> Self {
                self.predicates.push(Arc::new(predicate));
                self
            }

            /// Adds predicates.
            pub fn with_predicates(
                mut self,
                predicates: impl IntoIterator<Item = BoxPredicate<T>>,
            ) -> Self {
                self.predicates.extend(predicates);
                self
            }
        }
    };
}

impl<T> ForOptions<T> {
    /// No predicates.
    pub fn new() -> Self {
        Self {
            predicates: Vec::new(),
        }
    }
}

impl<T> OwnsOptions<T> {
    /// No predicates; controller owner only.
    pub fn new() -> Self {
        Self {
            predicates: Vec::new(),
            match_every_owner: false,
        }
    }

    /// Reconciles every matching owner, not just the controller owner.
    pub fn match_every_owner(mut self) -> Self {
        self.match_every_owner = true;
        self
    }
}

impl<T> WatchesOptions<T> {
    /// No predicates.
    pub fn new() -> Self {
        Self {
            predicates: Vec::new(),
        }
    }
}

common!(ForOptions);
common!(OwnsOptions);
common!(WatchesOptions);
