//! The manager's HTTP servers over real HTTP: `/healthz` and `/readyz` with
//! controller-runtime's bodies and codes (its `healthz_test.go` cases, and the probe
//! cases of `manager_test.go`), `/metrics` with the process-wide registry, extra
//! handlers, and garbage requests that get 4xx while the server keeps serving.

mod manager_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use ctrl_runtime::healthz::{self, CheckError};
use ctrl_runtime::http::{Handler as _, handler_fn, text};
use ctrl_runtime::manager::{Error, Manager, Options};
use http::StatusCode;
use manager_common::{env, get, launch, manager, quiet, raw, status_of, try_get, with_metrics};

const TEXT: &str = "text/plain; charset=utf-8";

fn probes() -> Options {
    Options {
        health_probe_bind_address: "127.0.0.1:0".into(),
        ..quiet()
    }
}

fn failing(msg: &'static str) -> impl healthz::Checker {
    healthz::from_fn(move |_| Err(msg.into()))
}

fn toggled(ok: &Arc<AtomicBool>, msg: &'static str) -> impl healthz::Checker {
    let ok = ok.clone();
    healthz::from_fn(move |_| -> Result<(), CheckError> {
        if ok.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err(msg.into())
        }
    })
}

#[tokio::test]
async fn readyz_and_healthz_answer_like_controller_runtime() {
    let env = env().await;
    let mgr = manager(&env, probes());
    let ready = Arc::new(AtomicBool::new(false));
    mgr.add_readyz_check("check", toggled(&ready, "not ready yet"))
        .unwrap();
    mgr.add_healthz_check("ping", healthz::ping()).unwrap();
    let addr = mgr.health_probe_addr().expect("probe address");
    let running = launch(&mgr).await;

    let r = get(addr, "/readyz").await;
    assert_eq!(r.status, 500);
    assert_eq!(r.content_type, TEXT);
    assert_eq!(
        r.body,
        "[+]cache-sync ok\n[-]check failed: reason withheld\nhealthz check failed\n"
    );
    let r = get(addr, "/readyz/check").await;
    assert_eq!(
        (r.status, r.body.as_str()),
        (500, "internal server error: not ready yet\n")
    );
    let r = get(addr, "/readyz?exclude=check").await;
    assert_eq!((r.status, r.body.as_str()), (200, "ok"));

    ready.store(true, Ordering::SeqCst);
    let r = get(addr, "/readyz").await;
    assert_eq!((r.status, r.body.as_str()), (200, "ok"));
    assert_eq!(r.content_type, TEXT);
    assert_eq!(
        get(addr, "/readyz/").await.body,
        "ok",
        "trailing slash, no redirect"
    );
    let r = get(addr, "/readyz?verbose=true").await;
    assert_eq!(
        r.body,
        "[+]cache-sync ok\n[+]check ok\nhealthz check passed\n"
    );
    let r = get(addr, "/readyz?verbose&exclude=check&exclude=nope").await;
    assert_eq!(
        r.body,
        "[+]cache-sync ok\n[+]check excluded: ok\nwarn: some health checks cannot be excluded: no matches for \"nope\"\nhealthz check passed\n"
    );
    let r = get(addr, "/readyz/check").await;
    assert_eq!((r.status, r.body.as_str()), (200, "ok"));
    let r = get(addr, "/readyz/cache-sync").await;
    assert_eq!((r.status, r.body.as_str()), (200, "ok"));

    let r = get(addr, "/healthz").await;
    assert_eq!((r.status, r.body.as_str()), (200, "ok"));
    assert_eq!(get(addr, "/healthz/ping").await.status, 200);
    let r = get(addr, "/healthz/doesnotexist").await;
    assert_eq!((r.status, r.body.as_str()), (404, "404 page not found\n"));
    assert_eq!(get(addr, "/").await.status, 404);

    let err = mgr.add_readyz_check("late", healthz::ping()).unwrap_err();
    assert!(matches!(err, Error::CheckAfterStart));
    running.stop().await.unwrap();
    assert!(
        try_get(addr, "/readyz").await.is_err(),
        "the probe server stopped"
    );
}

#[tokio::test]
async fn healthz_without_checks_is_not_served() {
    let env = env().await;
    let mgr = manager(&env, probes());
    let addr = mgr.health_probe_addr().unwrap();
    let running = launch(&mgr).await;
    assert_eq!(get(addr, "/healthz").await.status, 404);
    assert_eq!(get(addr, "/readyz").await.body, "ok");
    running.stop().await.unwrap();
}

#[tokio::test]
async fn metrics_serve_the_registry_process_metrics_and_extra_handlers() {
    let one = prometheus::Counter::new("test_one", "test metric for testing").unwrap();
    one.inc();
    ctrl_runtime::metrics::registry()
        .register(Box::new(one.clone()))
        .unwrap();

    let env = env().await;
    let mgr = manager(&env, with_metrics());
    assert!(
        mgr.health_probe_addr().is_none(),
        "probes are off unless set"
    );
    let debug = || handler_fn(|_req| text(StatusCode::OK, "Some debug info"));
    mgr.add_metrics_extra_handler("/debug", debug()).unwrap();
    let dup = mgr
        .add_metrics_extra_handler("/debug", debug())
        .unwrap_err();
    assert_eq!(
        dup.to_string(),
        "can't register extra handler by duplicate path \"/debug\" on metrics http server"
    );
    let builtin = mgr
        .add_metrics_extra_handler("/metrics", debug())
        .unwrap_err();
    assert_eq!(
        builtin.to_string(),
        "overriding builtin /metrics endpoint is not allowed"
    );

    let addr = mgr.metrics_addr().expect("metrics address");
    let running = launch(&mgr).await;

    let r = get(addr, "/metrics").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
    assert!(
        r.body.contains(
            "# HELP test_one test metric for testing\n# TYPE test_one counter\ntest_one 1\n"
        ),
        "{}",
        r.body
    );
    if cfg!(target_os = "linux") {
        for m in [
            "process_cpu_seconds_total",
            "process_resident_memory_bytes",
            "process_open_fds",
            "process_max_fds",
            "process_start_time_seconds",
            "process_virtual_memory_bytes",
        ] {
            assert!(r.body.contains(&format!("# TYPE {m} ")), "{m} missing");
        }
    }
    let r = get(addr, "/debug").await;
    assert_eq!((r.status, r.body.as_str()), (200, "Some debug info"));
    let r = get(addr, "/should-not-exist").await;
    assert_eq!((r.status, r.body.as_str()), (404, "404 page not found\n"));
    assert!(matches!(
        mgr.add_metrics_extra_handler("/late", debug()),
        Err(Error::MetricsHandlerAfterStart)
    ));

    running.stop().await.unwrap();
    assert!(
        try_get(addr, "/metrics").await.is_err(),
        "the metrics server stopped"
    );
    ctrl_runtime::metrics::registry()
        .unregister(Box::new(one))
        .unwrap();
}

#[tokio::test]
async fn garbage_gets_4xx_and_the_servers_keep_serving() {
    let env = env().await;
    let mgr = manager(
        &env,
        Options {
            metrics_bind_address: "127.0.0.1:0".into(),
            ..probes()
        },
    );
    let running = launch(&mgr).await;
    for (addr, good) in [
        (mgr.metrics_addr().unwrap(), "/metrics"),
        (mgr.health_probe_addr().unwrap(), "/readyz"),
    ] {
        let huge = format!(
            "GET {good} HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
            "a".repeat(2 << 20)
        );
        assert_eq!(
            status_of(&raw(addr, huge.as_bytes()).await),
            431,
            "huge header"
        );
        let many: String = (0..200).map(|i| format!("X-H{i}: v\r\n")).collect();
        let many = format!("GET {good} HTTP/1.1\r\nHost: x\r\n{many}\r\n");
        assert_eq!(
            status_of(&raw(addr, many.as_bytes()).await),
            431,
            "too many headers"
        );
        assert_eq!(
            status_of(&raw(addr, b"GARBAGE\r\n\r\n").await),
            400,
            "bad request line"
        );
        assert_eq!(
            status_of(&raw(addr, b"GET /\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n").await),
            400,
            "bytes that are not a path"
        );
        let body = format!(
            "POST {good} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
            2 << 20,
            "b".repeat(2 << 20)
        );
        assert_eq!(
            status_of(&raw(addr, body.as_bytes()).await),
            413,
            "huge body"
        );
        let r = get(addr, &format!("/{good}")).await;
        assert_eq!(
            (r.status, r.location.as_deref()),
            (301, Some(good)),
            "unclean path"
        );
        let r = get(addr, "/../../etc/passwd").await;
        assert_eq!(r.status, 301);
        assert_eq!(get(addr, "/etc/passwd").await.status, 404);
        assert_eq!(get(addr, "/nope").await.status, 404);
        assert_eq!(get(addr, good).await.status, 200, "still serving");
    }
    running.stop().await.unwrap();
}

#[tokio::test]
async fn the_metrics_server_can_be_disabled_and_bind_failures_are_reported() {
    let env = env().await;
    let mgr = Manager::new(env.client(), quiet()).unwrap();
    assert!(mgr.metrics_addr().is_none());
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let err = Manager::new(
        env.client(),
        Options {
            metrics_bind_address: taken.local_addr().unwrap().to_string(),
            ..quiet()
        },
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Bind {
                kind: "metrics",
                ..
            }
        ),
        "{err:?}"
    );
}

/// controller-runtime's `healthz_test.go`, against the handler directly.
mod handler {
    use super::*;

    /// Status, content type and body of a GET to `path`.
    async fn call(h: &healthz::Handler, path: &str) -> (u16, String, String) {
        let req = http::Request::get(path).body(Bytes::new()).unwrap();
        let resp = h.call(req).await;
        let status = resp.status().as_u16();
        let ct = resp
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let body = http_body_util::BodyExt::collect(resp.into_body())
            .await
            .unwrap()
            .to_bytes();
        (status, ct, String::from_utf8_lossy(&body).into_owned())
    }

    fn two_ok() -> healthz::Handler {
        let mut h = healthz::Handler::new();
        h.add_check("ok1", healthz::ping())
            .add_check("ok2", healthz::ping());
        h
    }

    fn one_bad() -> healthz::Handler {
        let mut h = healthz::Handler::new();
        h.add_check("ok1", healthz::ping())
            .add_check("bad1", failing("blech"));
        h
    }

    #[tokio::test]
    async fn aggregated_endpoint() {
        assert_eq!(call(&two_ok(), "/").await, (200, TEXT.into(), "ok".into()));
        assert_eq!(call(&one_bad(), "/").await.0, 500);
        assert_eq!(call(&one_bad(), "/?exclude=bad1").await.0, 200);
        assert_eq!(call(&two_ok(), "/?exclude=nonexistant").await.0, 200);
        assert_eq!(
            call(&two_ok(), "/?verbose=true").await,
            (
                200,
                TEXT.into(),
                "[+]ok1 ok\n[+]ok2 ok\nhealthz check passed\n".into()
            )
        );
        let failed = "[-]bad1 failed: reason withheld\n[+]ok1 ok\nhealthz check failed\n";
        assert_eq!(
            call(&one_bad(), "/?verbose=true").await,
            (500, TEXT.into(), failed.into())
        );
        assert_eq!(
            call(&one_bad(), "/").await.2,
            failed,
            "always verbose on failure"
        );
        assert_eq!(
            call(&healthz::Handler::new(), "/?verbose=true").await,
            (
                200,
                TEXT.into(),
                "[+]ping ok\nhealthz check passed\n".into()
            )
        );
    }

    #[tokio::test]
    async fn per_check_endpoints() {
        let mut h = healthz::Handler::new();
        h.add_check("okcheck", healthz::ping())
            .add_check("failcheck", failing("blech"));
        assert_eq!(call(&h, "/okcheck").await, (200, TEXT.into(), "ok".into()));
        assert_eq!(
            call(&h, "/failcheck").await,
            (500, TEXT.into(), "internal server error: blech\n".into())
        );
        assert_eq!(call(&healthz::Handler::new(), "/doesnotexist").await.0, 404);
        assert_eq!(call(&healthz::Handler::new(), "/ping").await.0, 200);
        assert_eq!(
            call(&h, "/ping").await.0,
            404,
            "ping only stands in when there are no checks"
        );
    }

    #[tokio::test]
    async fn checks_run_concurrently() {
        /// Passes only once all five checks are running at the same time.
        struct Together(Arc<tokio::sync::Barrier>);
        #[async_trait::async_trait]
        impl healthz::Checker for Together {
            async fn check(&self, _req: &ctrl_runtime::http::Request) -> Result<(), CheckError> {
                self.0.wait().await;
                Ok(())
            }
        }
        let barrier = Arc::new(tokio::sync::Barrier::new(5));
        let mut h = healthz::Handler::new();
        for i in 0..5 {
            h.add_check(format!("c{i}"), Together(barrier.clone()));
        }
        let r = tokio::time::timeout(Duration::from_secs(10), call(&h, "/"))
            .await
            .expect("checks ran concurrently (sequential checks would never pass the barrier)");
        assert_eq!(r.0, 200);
    }
}

/// The server helper on its own: a stalled request head is cut off after the header
/// read timeout, a panicking handler is a `500`, and the server keeps serving.
#[tokio::test]
async fn stalled_heads_are_cut_off_and_handler_panics_are_500() {
    use ctrl_runtime::http::{Router, Server, ServerOptions, bind};
    let mut router = Router::new();
    router.handle("/ok", handler_fn(|_| text(StatusCode::OK, "fine")));
    router.handle("/panic", handler_fn(|_| panic!("handler bug")));
    let opts = ServerOptions {
        header_read_timeout: Duration::from_millis(200),
        ..Default::default()
    };
    let server = Arc::new(Server::new("test", bind("127.0.0.1:0").unwrap(), router, opts).unwrap());
    let addr = server.local_addr();
    let ctx = tokio_util::sync::CancellationToken::new();
    let serving = {
        let (server, ctx) = (server.clone(), ctx.clone());
        tokio::spawn(async move { server.serve(ctx).await })
    };

    // `raw` reads until the server closes the connection (or gives up after 5 s).
    let t = tokio::time::Instant::now();
    let stalled = raw(addr, b"GET /ok HTTP/1.1\r\nHost: x\r\n").await;
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "closed by the server: {stalled:?}"
    );
    let r = get(addr, "/panic").await;
    assert_eq!(
        (r.status, r.body.as_str()),
        (500, "500 Internal Server Error\n")
    );
    assert_eq!(get(addr, "/ok").await.body, "fine");
    assert!(
        server.serve(ctx.clone()).await.is_err(),
        "a server serves once"
    );

    ctx.cancel();
    serving.await.unwrap().unwrap();
}
