//! Shared by the builder tests: an envtest with the `Widget` CRD (status
//! subresource), a manager on it, a reconciler that reports requests on a channel.
#![allow(dead_code)]

use std::time::Duration;

use ctrl_envtest::Environment;
use ctrl_runtime::manager::{Manager, Options};
use ctrl_runtime::reconcile::{self, Action, Reconciler, Request};
use kube::CustomResource;
use kube::CustomResourceExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A namespaced custom resource with a status subresource.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[kube(
    group = "test.ctrl.rs",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus"
)]
pub struct WidgetSpec {
    /// Anything in the spec.
    pub size: i32,
}

/// The widget's status.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
pub struct WidgetStatus {
    /// Anything in the status.
    pub ready: bool,
}

/// A new widget in `default`.
pub fn widget(name: &str) -> Widget {
    let mut w = Widget::new(name, WidgetSpec { size: 1 });
    w.metadata.namespace = Some("default".into());
    w
}

/// An envtest serving `Widget`s.
pub async fn env() -> Environment {
    Environment::builder()
        .crd(Widget::crd())
        .start()
        .await
        .expect("start envtest")
}

/// A manager on `env` without metrics or probes.
pub fn manager(env: &Environment) -> Manager {
    let opts = Options {
        metrics_bind_address: "0".into(),
        ..Default::default()
    };
    Manager::new(env.client(), opts).expect("manager")
}

/// A running manager; `stop` cancels it and waits for it to return.
pub struct Running {
    ctx: CancellationToken,
    task: JoinHandle<Result<(), ctrl_runtime::manager::Error>>,
}

impl Running {
    /// Stops the manager and checks it stopped cleanly.
    pub async fn stop(self) {
        self.ctx.cancel();
        let res = tokio::time::timeout(Duration::from_secs(30), self.task)
            .await
            .expect("manager stopped in time")
            .expect("manager task");
        assert!(res.is_ok(), "manager stopped with {res:?}");
    }
}

/// Starts `mgr` in a task.
pub fn start(mgr: &Manager) -> Running {
    let ctx = CancellationToken::new();
    let (m, c) = (mgr.clone(), ctx.clone());
    let task = tokio::spawn(async move { m.start(c).await });
    Running { ctx, task }
}

/// A reconciler that sends every request it gets to the returned receiver.
pub fn reporter() -> (impl Reconciler, mpsc::UnboundedReceiver<Request>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let r = reconcile::func(move |_ctx, req: Request| {
        let tx = tx.clone();
        async move {
            let _ = tx.send(req);
            Ok(Action::done())
        }
    });
    (r, rx)
}

/// The next request (waits up to 20 s: a missing reconcile fails the test, it does
/// not time anything).
pub async fn next(rx: &mut mpsc::UnboundedReceiver<Request>) -> Request {
    tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("a reconcile arrived")
        .expect("reconciler alive")
}

/// Receives until `want` arrives; returns everything received before it.
pub async fn until(rx: &mut mpsc::UnboundedReceiver<Request>, want: &Request) -> Vec<Request> {
    let mut before = Vec::new();
    loop {
        let got = next(rx).await;
        if &got == want {
            return before;
        }
        before.push(got);
    }
}
