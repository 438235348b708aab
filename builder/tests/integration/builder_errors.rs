//! Builds that must fail, with controller-runtime's errors, and that a failed build
//! claims no controller name (ported from `pkg/builder/controller_test.go`, "New").

use crate::common;

use std::sync::Arc;

use async_trait::async_trait;
use common::{env, manager, reporter};
use ctrl_builder::{ControllerBuilder, Error};
use ctrl_runtime::controller::Controller;
use ctrl_runtime::handler::EnqueueRequestForObject;
use ctrl_runtime::reconcile::{self, Action, Reconciler};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::ConfigMap;
use tokio_util::sync::CancellationToken;

struct ConfigMaps;

#[async_trait]
impl Reconciler<Arc<ConfigMap>> for ConfigMaps {
    async fn reconcile(
        &self,
        _ctx: CancellationToken,
        _obj: Arc<ConfigMap>,
    ) -> Result<Action, reconcile::Error> {
        Ok(Action::done())
    }
}

/// The error of a build that must fail.
fn failed(r: Result<Controller, Error>, what: &str) -> Error {
    match r {
        Ok(c) => panic!("{what}: built controller {}", c.name()),
        Err(e) => e,
    }
}

#[tokio::test]
async fn invalid_builds_are_typed_errors() {
    let env = env().await;
    let mgr = manager(&env);

    let (r, _rx) = reporter();
    let err = ControllerBuilder::new(&mgr)
        .for_::<ReplicaSet>()
        .for_::<Deployment>()
        .owns::<ReplicaSet>()
        .build(r);
    let err = failed(err, "For twice");
    assert!(matches!(err, Error::ForCalledTwice), "{err}");
    assert!(
        err.to_string()
            .contains("For(...) should only be called once")
    );

    let (r, _rx) = reporter();
    let err = ControllerBuilder::new(&mgr)
        .watches::<ReplicaSet>(EnqueueRequestForObject)
        .build(r);
    let err = failed(err, "no name");
    assert!(matches!(err, Error::MissingName), "{err}");
    assert_eq!(err.to_string(), "one of For() or Named() must be called");

    let (r, _rx) = reporter();
    let err = ControllerBuilder::new(&mgr)
        .named("owns-without-for")
        .owns::<ReplicaSet>()
        .build(r);
    let err = failed(err, "owns without for");
    assert!(matches!(err, Error::OwnsWithoutFor), "{err}");

    let (r, _rx) = reporter();
    let shard = ctrl_runtime::sharding::Shard::new("ring", "shard-0", "default");
    let err = ControllerBuilder::new(&mgr)
        .named("sharded-without-for")
        .watches::<ReplicaSet>(EnqueueRequestForObject)
        .sharded(shard)
        .build(r);
    let err = failed(err, "sharded without for");
    assert!(matches!(err, Error::ShardedWithoutFor), "{err}");

    let (r, _rx) = reporter();
    let shard = ctrl_runtime::sharding::Shard::new("ring", "shard-0", "default");
    let err = ControllerBuilder::new(&mgr)
        .named("sharded-dynamic-for")
        .for_dynamic(kube::api::ApiResource::erase::<ReplicaSet>(&()))
        .sharded(shard)
        .build(r);
    let err = failed(err, "sharded with a dynamic for");
    assert!(matches!(err, Error::ShardedDynamicFor), "{err}");

    let (r, _rx) = reporter();
    let err = ControllerBuilder::new(&mgr).named("no-watches").build(r);
    let err = failed(err, "no watches");
    assert!(matches!(err, Error::NoWatches), "{err}");

    // None of the failed builds claimed its name.
    for name in ["owns-without-for", "no-watches"] {
        let (r, _rx) = reporter();
        ControllerBuilder::new(&mgr)
            .named(name)
            .watches::<ReplicaSet>(EnqueueRequestForObject)
            .build(r)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[tokio::test]
async fn names_default_to_the_kind_and_must_be_unique() {
    let env = env().await;
    let mgr = manager(&env);
    let (r, _rx) = reporter();
    let c = ControllerBuilder::new(&mgr)
        .for_::<Deployment>()
        .owns::<ReplicaSet>()
        .build(r)
        .expect("valid build");
    assert_eq!(c.name(), "deployment");
    assert_eq!(c.options().kind, "Deployment");
    assert_eq!(c.options().group, "apps");

    let (r, _rx) = reporter();
    let err = ControllerBuilder::new(&mgr).for_::<Deployment>().build(r);
    let err = failed(err, "duplicate name");
    assert!(matches!(err, Error::Controller(_)), "{err}");
    assert!(err.to_string().contains("already exists"), "{err}");

    // A second controller for the same kind under another name is fine, and an
    // object reconciler of the For type is accepted.
    ControllerBuilder::new(&mgr)
        .for_::<ConfigMap>()
        .named("configmap-objects")
        .build(ConfigMaps)
        .expect("object reconciler");
    let (r, _rx) = reporter();
    let c = ControllerBuilder::new(&mgr)
        .for_::<Deployment>()
        .named("deployment-2")
        .with_options(ctrl_runtime::controller::Options {
            max_concurrent_reconciles: 5,
            ..Default::default()
        })
        .build(r)
        .expect("named");
    assert_eq!(c.options().max_concurrent_reconciles, 5);
}
