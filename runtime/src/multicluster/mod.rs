//! Many clusters, one operator (multicluster-runtime's `pkg/multicluster`,
//! `pkg/manager` and `pkg/reconcile`).
//!
//! A [`Provider`] discovers clusters and engages each on the multi-cluster
//! [`Manager`] as a [`Cluster`]: its own client, cache, API reader and Events
//! recorder, started and stopped on its own token. Everything cluster-aware (an
//! [`Aware`]: the per-cluster fan-out of a controller's sources, [`ClusterSource`])
//! is told of each engaged cluster and stops its work there when the cluster's token
//! is cancelled. Requests carry the cluster ([`ClusterRequest`], shown
//! `cluster://<c>/<ns>/<n>`); the reconciler asks the manager for the cluster
//! ([`Manager::cluster`]).
//!
//! The local cluster is not special: [`LocalProvider`] engages the manager's own
//! cluster under a name, like any other provider. Providers here: [`StaticProvider`]
//! (a fixed list), [`KubeconfigSecretProvider`] (kubeconfig Secrets on the hub, with
//! multicluster-runtime's label and key), [`KubeconfigDirProvider`] (kubeconfig files
//! in a directory, re-read as it changes) and [`NamespaceProvider`] (each namespace
//! of one cluster as a cluster).
//!
//! Disengaging ([`Manager::disengage`]) removes the cluster from the manager before
//! it cancels the cluster's token: the cluster's informers and sources stop with the
//! token (no list or watch reaches it afterwards), and [`ClusterReconciler`] ends any
//! request of a cluster that is no longer engaged without reconciling or retrying it,
//! so queued requests of the cluster drain away and no reconcile of it starts after
//! `disengage` returns.
//!
//! A multi-cluster controller's queue is fair across clusters ([`fair_queue`]).
//!
//! This layer sits above [`crate::manager`] (the local manager runs providers and
//! controllers as runnables) and [`crate::sharding`] (object shards within a cluster
//! compose with clusters across replicas).

mod cluster;
mod coordinator;
mod kubeconfig;
mod manager;
mod namespace;
mod provider;
mod queue;
mod reconciler;
mod request;
mod source;

pub use cluster::Cluster;
pub use coordinator::{Coordinator, CoordinatorConfig, Peer, dns1123, rendezvous_owner};
pub use kubeconfig::{
    DEFAULT_DIR_POLL_INTERVAL, DEFAULT_KUBECONFIG_SECRET_KEY, DEFAULT_KUBECONFIG_SECRET_LABEL,
    KubeconfigDirProvider, KubeconfigSecretProvider, client_from_kubeconfig,
};
pub use manager::{Aware, Error, Manager, Ownership};
pub use namespace::NamespaceProvider;
pub use provider::{LocalProvider, Provider, StaticProvider};
pub use queue::{fair_queue, fairness_key};
pub use reconciler::ClusterReconciler;
pub use request::{ClusterName, ClusterRequest};
pub use source::{ClusterFilter, ClusterQueue, ClusterSource, SourceFactory};
