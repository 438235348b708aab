//! Helpers the example tests share (podlogger, createonly, virtualmachine): waiting
//! for a condition, and reading the Prometheus text a manager's metrics server
//! serves, over plain HTTP as a scraper would, and running a manager for a test.
#![allow(dead_code)] // each test file uses a different part

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use ctrl::manager::{Error as ManagerError, Manager, Options};
use ctrl_envtest::wait::Wait;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long a test waits for something an example does.
pub const WAIT: Duration = Duration::from_secs(15);

/// Polls `probe` until it returns `Some`, or panics after [`WAIT`] saying `what`.
pub async fn eventually<T, F, Fut>(what: &str, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    Wait::new().timeout(WAIT).eventually(what, probe).await
}

/// The body of `GET /metrics` on `addr`.
pub async fn scrape(addr: SocketAddr) -> String {
    let mut conn = TcpStream::connect(addr).await.expect("connect to metrics");
    let req = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    conn.write_all(req.as_bytes()).await.expect("send request");
    let mut resp = String::new();
    conn.read_to_string(&mut resp).await.expect("read response");
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    resp.split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default()
}

/// The sum of `metric`'s samples whose labels include every `label="value"` in
/// `labels` (the Prometheus text format, as `scrape` returns it).
pub fn sample_sum(text: &str, metric: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter_map(|line| line.strip_prefix(metric))
        .filter_map(|rest| rest.strip_prefix('{'))
        .filter_map(|rest| rest.split_once("} "))
        .filter(|(l, _)| {
            labels
                .iter()
                .all(|(k, v)| l.split(',').any(|kv| kv == format!("{k}=\"{v}\"")))
        })
        .filter_map(|(_, value)| value.trim().parse::<f64>().ok())
        .sum()
}

/// `controller_runtime_reconcile_total` of controller `name`, all results.
pub async fn reconciles(addr: SocketAddr, name: &str) -> u64 {
    let text = scrape(addr).await;
    sample_sum(
        &text,
        "controller_runtime_reconcile_total",
        &[("controller", name)],
    ) as u64
}

/// Manager options for a test: metrics on a free loopback port, no probes.
pub fn options() -> Options {
    Options {
        metrics_bind_address: "127.0.0.1:0".into(),
        health_probe_bind_address: "0".into(),
        ..Default::default()
    }
}

/// A manager started by [`run`].
pub struct Running {
    /// Where its metrics server listens.
    pub metrics: SocketAddr,
    stop: CancellationToken,
    task: JoinHandle<Result<(), ManagerError>>,
}

/// Starts `mgr` (built with [`options`]) and waits until its controllers run.
pub async fn run(mgr: &Manager) -> Running {
    let metrics = mgr.metrics_addr().expect("metrics server bound");
    let stop = CancellationToken::new();
    let task = {
        let (mgr, stop) = (mgr.clone(), stop.clone());
        tokio::spawn(async move { mgr.start(stop).await })
    };
    mgr.elected().await;
    Running {
        metrics,
        stop,
        task,
    }
}

impl Running {
    /// Stops the manager and checks that it stopped cleanly.
    pub async fn stop(self) {
        self.stop.cancel();
        self.task
            .await
            .expect("manager task")
            .expect("manager stopped cleanly");
    }
}
