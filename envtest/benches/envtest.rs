//! ctrl-envtest bench: start → first successful request, creates/s from one client over HTTP
//! (and, on the TLS port, by wire: HTTP/1.1 vs h2, JSON vs protobuf bodies, `wire`),
//! watch events/s fanned out to 10 watchers, and memory per stored ConfigMap — printed as a
//! table beside the aims of the envtest issue, with a bare hyper server as the HTTP baseline
//! (the same client — kube's default stack with the admin's token — and a fixed response, the
//! bytes of a ConfigMap create as ctrl-envtest answers it, with no storage) so the server's own
//! cost can be read off: CPU per request side by side (the floor, a ConfigMap create, a custom
//! resource's create and status merge patch, `patch`), with floor / envtest and patch / create
//! against issue 36's goals. The ConfigMap creates and the floor's alternate in rounds after a
//! warm-up of each, and the table prints the middle half of floor / envtest over the rounds.
//!
//! `cargo bench -p ctrl-envtest --bench envtest` runs the full sizes. Without `--bench` (as
//! `cargo test --all-targets` runs it) a quick mode with tiny sizes only checks that it all works.
//! `CTRL_BENCH_ENVTEST_CPU_ONLY=1` runs only the CPU-per-request table (the rows a profile of the
//! write path wants: `perf record` on the bench binary with `--bench` and this set).

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use ctrl_envtest::Environment;
use futures::{StreamExt, stream};
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use process::cpu_time;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[path = "envtest/patch.rs"]
mod patch;
// The root benches' /proc readings (CPU time), shared rather than copied.
#[allow(dead_code)]
#[path = "../../benches/support/process.rs"]
mod process;
#[path = "envtest/wire.rs"]
mod wire;

/// Sizes for one run.
struct Sizes {
    starts: usize,
    creates: usize,
    watch_events: usize,
    watchers: usize,
    memory_objects: usize,
}

const FULL: Sizes = Sizes {
    starts: 50,
    creates: 20_000,
    watch_events: 20_000,
    watchers: 10,
    memory_objects: 10_000,
};

const QUICK: Sizes = Sizes {
    starts: 3,
    creates: 100,
    watch_events: 100,
    watchers: 10,
    memory_objects: 100,
};

fn cm(name: &str, value: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.to_string());
    c.data = Some([("payload".to_string(), value.to_string())].into());
    c
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn percentile(mut v: Vec<Duration>, p: f64) -> Duration {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v.get(i).copied().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn rate(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64().max(1e-9)
}

fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn fmt_rate(r: f64) -> String {
    format!("{}/s", thousands(r.round() as usize))
}

/// Start → first successful request (a ConfigMap list through a new kube client), per start.
async fn start_times(n: usize) -> Vec<Duration> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let env = Environment::builder().start().await.expect("start");
        let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
        api.list(&ListParams::default())
            .await
            .expect("first request");
        out.push(t.elapsed());
        env.stop();
    }
    out
}

/// Wall time and CPU time of `n` creates through one client with `in_flight` requests
/// outstanding.
async fn creates(
    api: &Api<ConfigMap>,
    prefix: &str,
    n: usize,
    in_flight: usize,
) -> (Duration, Duration) {
    let payload = "x".repeat(64);
    let cpu = cpu_time();
    let t = Instant::now();
    stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            let obj = cm(&format!("{prefix}-{i}"), &payload);
            async move {
                api.create(&PostParams::default(), &obj)
                    .await
                    .expect("create");
            }
        })
        .buffer_unordered(in_flight)
        .collect::<Vec<()>>()
        .await;
    (t.elapsed(), cpu_time().saturating_sub(cpu))
}

/// The client of the CPU table, the same for ctrl-envtest and the floor: kube's default stack
/// (`Client::try_from`, as an operator builds it from a kubeconfig) on plain HTTP to `url`,
/// with the admin's bearer token, so that both servers read the same request bytes.
fn client(url: &str, token: &str) -> kube::Client {
    let mut cfg = kube::Config::new(url.parse().expect("uri"));
    cfg.default_namespace = "default".into();
    cfg.default_retry = false;
    cfg.auth_info.token = Some(token.to_string().into());
    kube::Client::try_from(cfg).expect("client")
}

/// CPU time per request, in µs.
fn cpu_per(n: usize, cpu: Duration) -> f64 {
    cpu.as_secs_f64() * 1e6 / n.max(1) as f64
}

/// A bare HTTP/1.1 server answering every request with the same `body` (201, JSON), for the
/// round-trip floor of the same kube client.
async fn bare_server(body: Bytes) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let h = tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            let _ = s.set_nodelay(true);
            let body = body.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |_req| {
                    let body = body.clone();
                    async move {
                        let mut r = hyper::Response::new(Full::new(body));
                        *r.status_mut() = hyper::StatusCode::CREATED;
                        r.headers_mut().insert(
                            hyper::header::CONTENT_TYPE,
                            hyper::header::HeaderValue::from_static("application/json"),
                        );
                        Ok::<_, Infallible>(r)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    (addr, h)
}

/// Opens a raw watch (HTTP/1.1, no client-side decoding) and counts newline-terminated events
/// until `want` arrived; returns when they all did.
async fn raw_watcher(
    addr: std::net::SocketAddr,
    token: String,
    rv: String,
    want: usize,
    ready: Arc<AtomicUsize>,
) -> Duration {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let req = format!(
        "GET /api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=600 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.expect("send watch");
    let mut buf = vec![0u8; 256 * 1024];
    let mut seen = 0usize;
    let mut headers_done = false;
    let mut tail = Vec::new();
    let t = Instant::now();
    while seen < want {
        let n = s.read(&mut buf).await.expect("read watch");
        if n == 0 {
            panic!("watch ended after {seen} of {want} events");
        }
        let chunk = &buf[..n];
        if !headers_done {
            tail.extend_from_slice(chunk);
            if let Some(p) = tail.windows(4).position(|w| w == b"\r\n\r\n") {
                headers_done = true;
                ready.fetch_add(1, Ordering::SeqCst);
                // Events are single lines of JSON ending in "}\n"; chunk-size lines are hex.
                seen += tail[p + 4..].windows(2).filter(|w| w == b"}\n").count();
            }
            continue;
        }
        seen += chunk.windows(2).filter(|w| w == b"}\n").count();
        // A "}\n" split across reads is counted by carrying the last byte.
        if chunk.first() == Some(&b'\n') && tail.last() == Some(&b'}') {
            seen += 1;
        }
        tail.clear();
        tail.push(chunk[n - 1]);
    }
    t.elapsed()
}

/// Watch events/s aggregated over `watchers` raw watchers: `live` has them open while one
/// client creates `events` objects (16 in flight); otherwise they replay the same number of
/// events from the history.
async fn fan_out(events: usize, watchers: usize, live: bool) -> (Duration, usize) {
    let env = Environment::builder()
        .history_window(events + 1_000)
        .watch_buffer(events + 1_000)
        .start()
        .await
        .expect("start");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let rv = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .unwrap_or_default();
    let ready = Arc::new(AtomicUsize::new(0));
    let spawn_watchers = |ready: Arc<AtomicUsize>| {
        (0..watchers)
            .map(|_| {
                let token = env.admin_token().to_string();
                tokio::spawn(raw_watcher(
                    env.addr(),
                    token,
                    rv.clone(),
                    events,
                    ready.clone(),
                ))
            })
            .collect::<Vec<_>>()
    };
    let t = if live {
        let hs = spawn_watchers(ready.clone());
        while ready.load(Ordering::SeqCst) < watchers {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let t = Instant::now();
        creates(&api, "w", events, 16).await;
        for h in hs {
            h.await.expect("watcher");
        }
        t.elapsed()
    } else {
        creates(&api, "w", events, 16).await;
        let t = Instant::now();
        for h in spawn_watchers(ready) {
            h.await.expect("watcher");
        }
        t.elapsed()
    };
    (t, events * watchers)
}

/// Resident set size of this process, from /proc (Linux); 0 elsewhere.
fn rss_bytes() -> usize {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<usize>().ok())
        })
        .map(|pages| pages * 4096)
        .unwrap_or(0)
}

/// RSS growth for `n` ConfigMaps with 1 KiB of data each, and their total JSON size as the
/// server returns them.
async fn memory(n: usize) -> (usize, usize) {
    let env = Environment::builder().start().await.expect("start");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    // Warm up the connection pool, buffers and the collection.
    creates(&api, "warm", 50, 8).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = rss_bytes();
    let kib = "k".repeat(1024);
    stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            let obj = cm(&format!("mem-{i:06}"), &kib);
            async move {
                api.create(&PostParams::default(), &obj)
                    .await
                    .expect("create");
            }
        })
        .buffer_unordered(8)
        .collect::<Vec<()>>()
        .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let after = rss_bytes();
    let list = api.list(&ListParams::default()).await.expect("list");
    let json: usize = list
        .items
        .iter()
        .filter(|o| {
            o.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("mem-"))
        })
        .map(|o| serde_json::to_vec(o).map(|v| v.len()).unwrap_or(0))
        .sum();
    drop(list);
    (after.saturating_sub(before), json)
}

/// Runs [`memory`] in a fresh child process (this binary again), so that heap freed by the other
/// measurements cannot hide the growth.
fn memory_in_child(n: usize) -> (usize, usize) {
    let out = std::env::current_exe()
        .and_then(|exe| {
            std::process::Command::new(exe)
                .env(MEMORY_CHILD, n.to_string())
                .output()
        })
        .expect("run the memory child");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("MEMORY "))
        .unwrap_or_else(|| {
            panic!(
                "memory child said: {text} {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let mut it = line
        .split_whitespace()
        .filter_map(|v| v.parse::<usize>().ok());
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

/// Environment variable that turns this binary into the memory child.
const MEMORY_CHILD: &str = "CTRL_ENVTEST_BENCH_MEMORY_CHILD";

fn row(what: &str, result: &str, aim: &str, ok: Option<bool>) {
    let verdict = match ok {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "-",
    };
    println!("| {what:<58} | {result:>22} | {aim:>12} | {verdict:>4} |");
}

/// Creates/s and CPU per create on the TLS port for each wire, side by side, and the ratios.
async fn wire_rows(env: &Environment, n: usize) {
    use wire::{Body, Proto};
    let mut rates = Vec::new();
    for (proto, kind, label) in [
        (Proto::H1, Body::Json, "HTTP/1.1, 16 connections, JSON"),
        (
            Proto::H1,
            Body::Protobuf,
            "HTTP/1.1, 16 connections, protobuf",
        ),
        (Proto::H2, Body::Json, "h2, 1 connection, 16 streams, JSON"),
        (
            Proto::H2,
            Body::Protobuf,
            "h2, 1 connection, 16 streams, protobuf",
        ),
    ] {
        let prefix = format!("wire-{}", rates.len());
        let (t, cpu) = wire::creates(env, proto, kind, &prefix, n, 16).await;
        let r = rate(n, t);
        row(
            &format!("TLS creates/s, {label}"),
            &format!("{} ({:.0} µs CPU)", fmt_rate(r), cpu_per(n, cpu)),
            "",
            None,
        );
        rates.push(r);
    }
    let ratio = |a: f64, b: f64| format!("{:.2}×", a / b.max(1e-9));
    row(
        "  h2 / HTTP/1.1 (JSON, protobuf)",
        &format!(
            "{}, {}",
            ratio(rates[2], rates[0]),
            ratio(rates[3], rates[1])
        ),
        "",
        None,
    );
    row(
        "  protobuf / JSON (HTTP/1.1, h2)",
        &format!(
            "{}, {}",
            ratio(rates[1], rates[0]),
            ratio(rates[3], rates[2])
        ),
        "",
        None,
    );
}

/// Rounds of [`envtest_and_floor`]: each server's creates alternate in this many slices. Many
/// short ones: this VM's speed moves by up to 60 % within minutes (the same loop's CPU time
/// reads 500-800 ms), and slices of tens of milliseconds see both servers at nearly the same
/// speed.
const ROUNDS: usize = 20;

/// ConfigMap creates measured on ctrl-envtest and on the floor by [`envtest_and_floor`].
struct Alternated {
    /// Wall and CPU time of all of ctrl-envtest's creates.
    env: (Duration, Duration),
    /// Wall and CPU time of all of the floor's creates.
    floor: (Duration, Duration),
    /// floor / envtest CPU per create in each round: the spread the verdict is read against.
    by_round: Vec<f64>,
}

/// Wall and CPU time of `n` ConfigMap creates on ctrl-envtest (`env_api`) and on the floor
/// (`floor_api`, the bare server), through the same client: after a warm-up of each (connections,
/// buffers), in [`ROUNDS`] alternating slices, so that a change in the machine's load while the
/// table runs weighs on both alike.
async fn envtest_and_floor(
    env_api: &Api<ConfigMap>,
    floor_api: &Api<ConfigMap>,
    n: usize,
) -> Alternated {
    creates(env_api, "warm", n / 100 + 16, 16).await;
    creates(floor_api, "warm", n / 100 + 16, 16).await;
    let zero = (Duration::ZERO, Duration::ZERO);
    let mut out = Alternated {
        env: zero,
        floor: zero,
        by_round: Vec::new(),
    };
    let slice = n / ROUNDS;
    for r in 0..ROUNDS {
        let (te, ce) = creates(env_api, &format!("par{r}"), slice, 16).await;
        let (tf, cf) = creates(floor_api, &format!("par{r}"), slice, 16).await;
        out.env = (out.env.0 + te, out.env.1 + ce);
        out.floor = (out.floor.0 + tf, out.floor.1 + cf);
        out.by_round
            .push(cpu_per(slice, cf) / cpu_per(slice, ce).max(1e-9));
    }
    out
}

/// The middle half of `v`: its lower and upper quartiles.
fn middle_half(v: &[f64]) -> (f64, f64) {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let at = |q: f64| {
        v.get((v.len().saturating_sub(1) as f64 * q).round() as usize)
            .copied()
    };
    (at(0.25).unwrap_or(0.0), at(0.75).unwrap_or(0.0))
}

/// The CPU table: per ConfigMap create against the floor (a bare hyper server answering the same
/// client), per Widget status patch against a Widget create, side by side.
fn cpu_rows(n: usize, alt: &Alternated, widgets: (Duration, Duration, Vec<f64>)) {
    let (par_rate, par_cpu) = (rate(n, alt.env.0), alt.env.1);
    let (bare_rate, bare_cpu) = (rate(n, alt.floor.0), alt.floor.1);
    row(
        "  baseline: bare hyper server, same client, 16 in flight",
        &fmt_rate(bare_rate),
        "",
        None,
    );
    row(
        "  envtest / bare baseline (wall, load-dependent)",
        &format!("{:.2}×", par_rate / bare_rate.max(1e-9)),
        "",
        None,
    );
    let (env_cpu, bare_cpu) = (cpu_per(n, par_cpu), cpu_per(n, bare_cpu));
    let wn = n / 2 / ROUNDS * ROUNDS;
    let (w_create, w_patch) = (cpu_per(wn, widgets.0), cpu_per(wn, widgets.1));
    let us = |v: f64| format!("{v:.1} µs");
    row(
        "CPU per request, client + server, 16 in flight:",
        "",
        "",
        None,
    );
    row(
        "  create, bare hyper server (the floor)",
        &us(bare_cpu),
        "",
        None,
    );
    row("  create, ConfigMap", &us(env_cpu), "", None);
    let floor = bare_cpu / env_cpu.max(1e-9);
    let (lo, hi) = middle_half(&alt.by_round);
    row(
        &format!("  floor / envtest, ConfigMap create (rounds' mid {lo:.2}–{hi:.2})"),
        &format!("{floor:.2}×"),
        "≥ 0.6×",
        Some(floor >= 0.6),
    );
    row(
        "  create, Widget (custom resource, /status)",
        &us(w_create),
        "",
        None,
    );
    row("  status merge patch, Widget", &us(w_patch), "", None);
    let ratio = w_patch / w_create.max(1e-9);
    let (lo, hi) = middle_half(&widgets.2);
    row(
        &format!("  Widget status patch / Widget create (rounds' mid {lo:.2}–{hi:.2})"),
        &format!("{ratio:.2}×"),
        "≤ 1.3×",
        Some(ratio <= 1.3),
    );
    row(
        "  floor / envtest, Widget create",
        &format!("{:.2}×", bare_cpu / w_create.max(1e-9)),
        "",
        None,
    );
}

fn main() {
    if let Some(n) = std::env::var(MEMORY_CHILD)
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let (rss, json) = rt.block_on(memory(n));
        println!("MEMORY {rss} {json}");
        return;
    }
    let full = std::env::args().any(|a| a == "--bench");
    let sizes = if full { FULL } else { QUICK };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let mode = if full { "full" } else { "quick (pass --bench for full sizes)" };
        let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
        println!("ctrl-envtest bench — {mode}, {profile} build, {} CPUs", std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
        println!();
        println!("| {:<58} | {:>22} | {:>12} | {:>4} |", "measurement", "result", "aim", "met");
        println!("|{}|{}|{}|{}|", "-".repeat(60), "-".repeat(24), "-".repeat(14), "-".repeat(6));

        let cpu_only = std::env::var_os("CTRL_BENCH_ENVTEST_CPU_ONLY").is_some();
        if !cpu_only {
            let starts = start_times(sizes.starts).await;
            let med = median(starts.clone());
            row(
                &format!("start → first successful request, median of {}", sizes.starts),
                &ms(med),
                "< 20 ms",
                Some(med < Duration::from_millis(20)),
            );
            row("start → first successful request, p90", &ms(percentile(starts, 0.9)), "", None);
        }

        let env = Environment::builder()
            .history_window(sizes.creates * 5 + 1_000)
            .crd_yaml(patch::CRD)
            .start()
            .await
            .expect("start");
        let api: Api<ConfigMap> = Api::namespaced(client(&env.url(), env.admin_token()), "default");
        if !cpu_only {
            let (seq, _) = creates(&api, "seq", sizes.creates / 4, 1).await;
            let seq_rate = rate(sizes.creates / 4, seq);
            row("creates/s, one client, sequential", &fmt_rate(seq_rate), "", None);
        }
        // The floor answers every create with what ctrl-envtest answered for one (the same
        // fields, managedFields included), so the client decodes the same response from both.
        let sample = api
            .create(&PostParams::default(), &cm("floor-sample", &"x".repeat(64)))
            .await
            .expect("create");
        let sample = Bytes::from(serde_json::to_vec(&sample).expect("serialize"));
        let (addr, bare) = bare_server(sample).await;
        let floor_api: Api<ConfigMap> =
            Api::namespaced(client(&format!("http://{addr}"), env.admin_token()), "default");
        let alt = envtest_and_floor(&api, &floor_api, sizes.creates).await;
        bare.abort();
        let par = alt.env.0;
        let par_rate = rate(sizes.creates, par);
        row(
            &format!(
                "creates/s, one client, 16 in flight ({} objects)",
                thousands(sizes.creates)
            ),
            &fmt_rate(par_rate),
            "≥ 5,000/s",
            Some(par_rate >= 5_000.0),
        );
        if !cpu_only {
            wire_rows(&env, sizes.creates / 2).await;
        }
        let widgets = patch::create_then_patch(&env, sizes.creates / 2, ROUNDS).await;
        drop(env);
        cpu_rows(sizes.creates, &alt, widgets);
        if cpu_only {
            return;
        }

        let (t, n) = fan_out(sizes.watch_events, sizes.watchers, true).await;
        let live = rate(n, t);
        row(
            &format!(
                "watch events/s, {} watchers, live ({} creates)",
                sizes.watchers,
                thousands(sizes.watch_events)
            ),
            &fmt_rate(live),
            "≥ 50,000/s",
            Some(live >= 50_000.0),
        );
        let (t, n) = fan_out(sizes.watch_events, sizes.watchers, false).await;
        let replay = rate(n, t);
        row(
            &format!("watch events/s, {} watchers, replayed from history", sizes.watchers),
            &fmt_rate(replay),
            "≥ 50,000/s",
            Some(replay >= 50_000.0),
        );

        let (rss, json) = memory_in_child(sizes.memory_objects);
        let ratio = rss as f64 / json.max(1) as f64;
        row(
            &format!(
                "memory, {} ConfigMaps of 1 KiB: RSS growth / JSON",
                thousands(sizes.memory_objects)
            ),
            &format!(
                "{:.1} / {:.1} MiB = {ratio:.2}×",
                rss as f64 / 1048576.0,
                json as f64 / 1048576.0
            ),
            "< 3×",
            Some(ratio < 3.0),
        );
        println!();
        println!(
            "RSS growth is measured in a fresh child process: everything it gained while the objects were created (store, history, client and server buffers)."
        );
    });
}
