//! [`Error`]: why [`ControllerBuilder`](crate::ControllerBuilder) could not build or
//! register a controller. The messages are controller-runtime's, so they read the
//! same in logs.

use ctrl_runtime::{controller, manager};

/// Why a build failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `for_` was called more than once.
    #[error(
        "For(...) should only be called once, could not assign multiple objects for reconciliation"
    )]
    ForCalledTwice,
    /// Neither `for_` nor `named` was called, so the controller has no name.
    #[error("one of For() or Named() must be called")]
    MissingName,
    /// `owns` was called without `for_`: the owner type is unknown.
    #[error("Owns() can only be used together with For()")]
    OwnsWithoutFor,
    /// Nothing is watched, so nothing would ever be reconciled.
    #[error(
        "there are no watches configured, controller will never get triggered. Use For(), Owns(), Watches() or WatchesRawSource() to set them up"
    )]
    NoWatches,
    /// `sharded` was called without `for_`: a shard reconciles its `For` objects.
    #[error("Sharded() needs For(): a shard reconciles the objects of its For() type")]
    ShardedWithoutFor,
    /// `sharded` was called on a controller whose `For` type is dynamic
    /// (`for_dynamic*`): the shard side reads a typed `For` object from the cache.
    #[error("Sharded() needs a typed For(): dynamic For() types cannot be sharded yet")]
    ShardedDynamicFor,
    /// The controller could not be made (e.g. its name is empty or already used).
    #[error(transparent)]
    Controller(#[from] controller::Error),
    /// The manager refused the controller (e.g. it is stopping).
    #[error(transparent)]
    Manager(#[from] manager::Error),
}
