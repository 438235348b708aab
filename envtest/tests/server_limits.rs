//! The transport holds against hostile clients (issue 23, findings 6–9): the request log is
//! bounded in bytes, a half-sent request head or an idle connection is closed at the
//! head-read timeout, an early 413 says `Connection: close`, anonymous clients may read the
//! health endpoints of a server that requires a token, and a server out of file descriptors
//! backs off instead of spinning and serves again once descriptors are free.

mod common;

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Reads until the server closes the connection; fails if it is still open after 10 s.
async fn read_until_closed(s: &mut TcpStream, what: &str) -> Vec<u8> {
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out))
        .await
        .unwrap_or_else(|_| panic!("{what}: the server still holds the connection"))
        .ok();
    out
}

#[tokio::test]
async fn the_request_log_is_bounded_in_bytes() {
    let env = common::env().await;
    let long = "q".repeat(60 * 1024);
    let n = 700; // 41 MiB of query strings
    for i in 0..n {
        let path = format!("/healthz?i={i}&pad={long}");
        let (code, _, _) = common::raw_full(&env, "GET", &path, None, "", &[]).await;
        assert_eq!(code, 200);
    }
    let log = env.faults().requests();
    let bytes: usize = log.iter().map(|r| r.size()).sum();
    assert!(
        bytes <= ctrl_envtest::REQUEST_LOG_MAX_BYTES,
        "{bytes} bytes logged"
    );
    assert!(log.len() < n, "old records were dropped: {}", log.len());
    let last = log.last().expect("the newest request is kept");
    assert!(
        last.query.starts_with(&format!("i={}&", n - 1)),
        "newest kept"
    );
    assert!(
        !log.iter().any(|r| r.query.starts_with("i=0&")),
        "the oldest went first"
    );
}

#[tokio::test]
async fn a_half_sent_head_and_an_idle_connection_are_closed_at_the_timeout() {
    let env = ctrl_envtest::Environment::builder()
        .header_read_timeout(Duration::from_millis(500))
        .start()
        .await
        .unwrap();
    // Slowloris: a request head that never ends.
    let mut s = TcpStream::connect(env.addr()).await.unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
        .await
        .unwrap();
    read_until_closed(&mut s, "half-sent head").await;
    // A connection that never sends anything.
    let mut idle = TcpStream::connect(env.addr()).await.unwrap();
    read_until_closed(&mut idle, "silent connection").await;
    // A kept-alive connection after its answer.
    let mut kept = TcpStream::connect(env.addr()).await.unwrap();
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let out = read_until_closed(&mut kept, "idle kept-alive connection").await;
    assert_eq!(common::parse_response(&out).0, 200);
    // The server serves the next client.
    let (code, _, body) = common::raw_full(&env, "GET", "/healthz", None, "", &[]).await;
    assert_eq!((code, body.as_str()), (200, "ok"));
}

#[tokio::test]
async fn an_early_413_closes_the_connection_and_says_so() {
    let env = common::env().await;
    let mut s = TcpStream::connect(env.addr()).await.unwrap();
    // Keep-alive (no Connection: close), a declared 4 MiB body that is never sent.
    let head = format!(
        "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: 4194304\r\n\r\n",
        env.admin_token()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let out = read_until_closed(&mut s, "early 413").await;
    let (code, headers, _) = common::parse_response(&out);
    assert_eq!(code, 413);
    assert!(
        headers
            .iter()
            .any(|(k, v)| k == "connection" && v.eq_ignore_ascii_case("close")),
        "{headers:?}"
    );
}

#[tokio::test]
async fn with_a_token_health_and_version_are_public_and_the_rest_is_not() {
    let env = ctrl_envtest::Environment::builder()
        .bearer_token("secret")
        .start()
        .await
        .unwrap();
    let wrong = [("Authorization", "Bearer wrong")];
    for path in ["/healthz", "/readyz", "/livez", "/readyz/ping", "/version"] {
        let (code, _, body) = common::raw_anonymous(&env, "GET", path, None, "", &[]).await;
        assert_eq!(code, 200, "anonymous {path}: {body}");
        let (code, _, _) = common::raw_full(&env, "GET", path, None, "", &wrong).await;
        assert_eq!(code, 401, "a wrong token on {path}");
    }
    for path in ["/api/v1/namespaces", "/apis", "/api"] {
        let (code, _, _) = common::raw_anonymous(&env, "GET", path, None, "", &[]).await;
        assert_eq!(code, 401, "anonymous {path}");
    }
    let ok = [("Authorization", "Bearer secret")];
    let (code, _, _) = common::raw_full(&env, "GET", "/api/v1/namespaces", None, "", &ok).await;
    assert_eq!(code, 200);
}

/// User plus system CPU time of a process, in clock ticks (`/proc/<pid>/stat`).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("process stat");
    let after_comm = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    // Fields after the command name start at `state` (field 3); utime and stime are 14 and 15.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// `ctrl-envtest serve` under `ulimit -n 64`: `(child, address)`.
async fn serve_with_few_fds(dir: &std::path::Path) -> (tokio::process::Child, String) {
    let bin = env!("CARGO_BIN_EXE_ctrl-envtest");
    let kc = dir.join("kc");
    let script = format!(
        "ulimit -n 64 && exec '{bin}' serve --kubeconfig-out '{}'",
        kc.display()
    );
    let mut child = tokio::process::Command::new("sh")
        .args(["-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn ctrl-envtest serve");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (tx, rx) = tokio::sync::oneshot::channel();
    // Keep reading stdout for the child's life: a closed pipe would fail its later prints.
    tokio::spawn(async move {
        let mut tx = Some(tx);
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(url) = line.strip_prefix("ctrl-envtest serving http://")
                && let Some(tx) = tx.take()
            {
                let _ = tx.send(url.trim().to_string());
            }
        }
    });
    let addr = tokio::time::timeout(Duration::from_secs(30), rx)
        .await
        .expect("serve prints its address")
        .expect("serve is running");
    (child, addr)
}

#[tokio::test]
async fn out_of_file_descriptors_the_server_backs_off_and_recovers() {
    if !std::path::Path::new("/proc/self/stat").exists() {
        return; // needs /proc to read the server's CPU time
    }
    let dir = tempfile::tempdir().unwrap();
    let (child, addr) = serve_with_few_fds(dir.path()).await;
    let pid = child.id().expect("pid");
    // More connections than the server has descriptors: it accepts until EMFILE.
    let mut conns = Vec::new();
    for _ in 0..96 {
        conns.push(
            TcpStream::connect(&addr)
                .await
                .expect("queued by the kernel"),
        );
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let t0 = cpu_ticks(pid);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let used = cpu_ticks(pid) - t0;
    // A spinning accept loop burns a core (about 200 ticks in 2 s); back-off next to nothing.
    assert!(
        used < 60,
        "the server used {used} CPU ticks in 2 s while out of fds"
    );
    drop(conns);
    // With descriptors free again, the server answers.
    let mut answered = false;
    for _ in 0..50 {
        if let Ok(Ok(mut s)) =
            tokio::time::timeout(Duration::from_secs(2), TcpStream::connect(&addr)).await
        {
            let req = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
            let mut out = Vec::new();
            if s.write_all(req).await.is_ok()
                && tokio::time::timeout(Duration::from_secs(2), s.read_to_end(&mut out))
                    .await
                    .is_ok()
                && common::parse_response(&out).0 == 200
            {
                answered = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        answered,
        "the server serves again once descriptors are free"
    );
}
