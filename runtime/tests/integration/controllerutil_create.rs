//! `create_or_update` / `create_or_patch` against envtest through the manager's
//! cached client: every `OperationResult`, mutate errors, and `AlreadyOwned` (ported
//! from `pkg/controller/controllerutil/controllerutil_test.go`).

use std::time::Duration;

use ctrl_envtest::Environment;
use ctrl_runtime::cache::Reader;
use ctrl_runtime::client::Client;
use ctrl_runtime::controllerutil::{
    Error, OperationResult, create_or_patch, create_or_update, set_controller_reference,
};
use ctrl_runtime::manager::{Manager, Options};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStatus, ReplicaSet};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::api::Api;
use tokio_util::sync::CancellationToken;

/// A started manager's client (its cache runs until the token is cancelled).
async fn client(env: &Environment) -> (Client, CancellationToken) {
    let opts = Options {
        metrics_bind_address: "0".into(),
        ..Default::default()
    };
    let mgr = Manager::new(env.client(), opts).expect("manager");
    let ctx = CancellationToken::new();
    let (m, c) = (mgr.clone(), ctx.clone());
    tokio::spawn(async move { m.start(c).await });
    // Reads before the cache starts fail with NotStarted, as in Go.
    let synced = tokio::time::timeout(
        Duration::from_secs(20),
        mgr.cache().wait_for_cache_sync(ctx.clone()),
    )
    .await;
    assert_eq!(synced.ok(), Some(true), "cache started");
    (mgr.client(), ctx)
}

/// Waits until the cache holds `name` at `rv` (reads are eventually consistent).
async fn cached(c: &Client, name: &str, rv: Option<&str>) {
    for _ in 0..400 {
        if let Ok(d) = c.get::<Deployment>("default", name).await
            && d.metadata.resource_version.as_deref() == rv
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("cache never saw {name} at {rv:?}");
}

fn key(name: &str) -> Deployment {
    Deployment {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Go's `deploymentSpecr`: a valid spec with `replicas`.
fn spec(d: &mut Deployment, replicas: i32) {
    let labels = Some([("app".to_string(), "x".to_string())].into());
    d.spec = Some(DeploymentSpec {
        replicas: Some(replicas),
        selector: LabelSelector {
            match_labels: labels.clone(),
            ..Default::default()
        },
        template: PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels,
                ..Default::default()
            }),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "busybox".into(),
                    image: Some("busybox".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }),
        },
        ..Default::default()
    });
}

/// Sets only `spec.replicas` of the object as read (Go's `deploymentScaler`).
fn scale(d: &mut Deployment, replicas: i32) {
    if let Some(s) = d.spec.as_mut() {
        s.replicas = Some(replicas);
    }
}

fn status(d: &mut Deployment, replicas: i32) {
    d.status = Some(DeploymentStatus {
        replicas: Some(replicas),
        ..Default::default()
    });
}

#[tokio::test]
async fn create_or_update_results() {
    let env = Environment::start().await.expect("envtest");
    let (c, stop) = client(&env).await;
    let api: Api<Deployment> = Api::namespaced(env.client(), "default");

    let mut d = key("cou");
    let res = create_or_update(&c, &mut d, |d| {
        spec(d, 1);
        Ok(())
    })
    .await
    .expect("create");
    assert_eq!(res, OperationResult::Created);
    assert!(d.metadata.uid.is_some(), "obj holds what the server stored");
    cached(&c, "cou", d.metadata.resource_version.as_deref()).await;

    // The API server defaulted the stored spec, so a mutate that writes the whole spec again
    // differs from it (Updated, as with Go's client on a real cluster); one that sets only
    // what it owns to the value it has changes nothing.
    let mut d = key("cou");
    let res = create_or_update(&c, &mut d, |d| {
        scale(d, 1);
        Ok(())
    })
    .await
    .expect("same");
    assert_eq!(res, OperationResult::Unchanged);

    let mut d = key("cou");
    let res = create_or_update(&c, &mut d, |d| {
        spec(d, 3);
        Ok(())
    })
    .await
    .expect("update");
    assert_eq!(res, OperationResult::Updated);
    let stored = api.get("cou").await.expect("get");
    assert_eq!(stored.spec.and_then(|s| s.replicas), Some(3));
    cached(&c, "cou", d.metadata.resource_version.as_deref()).await;

    // create_or_update never writes status: the update goes through, the status not.
    let mut d = key("cou");
    create_or_update(&c, &mut d, |d| {
        status(d, 7);
        Ok(())
    })
    .await
    .expect("status via update");
    let stored = api.get("cou").await.expect("get");
    assert_eq!(stored.status.and_then(|s| s.replicas), None);

    // The mutate closure may not change the key, and its errors come back.
    let mut d = key("cou");
    let err = create_or_update(&c, &mut d, |d| {
        d.metadata.name = Some("renamed".into());
        Ok(())
    })
    .await
    .expect_err("renamed");
    assert!(matches!(err, Error::MutatedKey), "{err}");
    let mut d = key("never-created");
    let err = create_or_update(&c, &mut d, |_| Err(Error::mutate("nope")))
        .await
        .expect_err("mutate error");
    assert!(matches!(err, Error::Mutate(_)), "{err}");
    assert!(api.get_opt("never-created").await.expect("get").is_none());
    stop.cancel();
}

#[tokio::test]
async fn create_or_patch_results() {
    let env = Environment::start().await.expect("envtest");
    let (c, stop) = client(&env).await;
    let api: Api<Deployment> = Api::namespaced(env.client(), "default");

    let mut d = key("cop");
    let res = create_or_patch(&c, &mut d, |d| {
        spec(d, 1);
        Ok(())
    })
    .await
    .expect("create");
    assert_eq!(res, OperationResult::Created);
    cached(&c, "cop", d.metadata.resource_version.as_deref()).await;

    // The API server defaulted the stored spec, so a mutate that writes the whole spec again
    // differs from it (Updated, as with Go's client on a real cluster); one that sets only
    // what it owns to the value it has changes nothing.
    let mut d = key("cop");
    let res = create_or_patch(&c, &mut d, |d| {
        scale(d, 1);
        Ok(())
    })
    .await
    .expect("same");
    assert_eq!(res, OperationResult::Unchanged);

    let mut d = key("cop");
    let res = create_or_patch(&c, &mut d, |d| {
        spec(d, 2);
        Ok(())
    })
    .await
    .expect("spec");
    assert_eq!(res, OperationResult::Updated);
    cached(&c, "cop", d.metadata.resource_version.as_deref()).await;

    let mut d = key("cop");
    let res = create_or_patch(&c, &mut d, |d| {
        status(d, 2);
        Ok(())
    })
    .await
    .expect("status");
    assert_eq!(res, OperationResult::UpdatedStatusOnly);
    let stored = api.get("cop").await.expect("get");
    assert_eq!(stored.status.and_then(|s| s.replicas), Some(2));
    cached(&c, "cop", d.metadata.resource_version.as_deref()).await;

    let mut d = key("cop");
    let res = create_or_patch(&c, &mut d, |d| {
        spec(d, 5);
        status(d, 5);
        Ok(())
    })
    .await
    .expect("both");
    assert_eq!(res, OperationResult::UpdatedStatus);
    let stored = api.get("cop").await.expect("get");
    assert_eq!(stored.spec.and_then(|s| s.replicas), Some(5));
    assert_eq!(stored.status.and_then(|s| s.replicas), Some(5));
    assert_eq!(d.status.and_then(|s| s.replicas), Some(5));
    stop.cancel();
}

#[tokio::test]
async fn set_controller_reference_in_mutate_reports_already_owned() {
    let env = Environment::start().await.expect("envtest");
    let (c, stop) = client(&env).await;
    let owner = |name: &str| ReplicaSet {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            uid: Some(format!("{name}-uid")),
            ..Default::default()
        },
        ..Default::default()
    };
    let (first, second) = (owner("first"), owner("second"));
    let mut d = key("owned");
    create_or_update(&c, &mut d, |d| {
        spec(d, 1);
        set_controller_reference(&first, d)
    })
    .await
    .expect("create owned");
    cached(&c, "owned", d.metadata.resource_version.as_deref()).await;

    let mut d = key("owned");
    let err = create_or_update(&c, &mut d, |d| set_controller_reference(&second, d))
        .await
        .expect_err("already owned");
    assert!(err.is_already_owned(), "{err}");
    assert_eq!(
        err.to_string(),
        "Object default/owned is already owned by another ReplicaSet controller first"
    );
    // Re-asserting the same controller is a no-op.
    let mut d = key("owned");
    let res = create_or_update(&c, &mut d, |d| set_controller_reference(&first, d))
        .await
        .expect("same owner");
    assert_eq!(res, OperationResult::Unchanged);
    stop.cancel();
}
