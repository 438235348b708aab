//! The profiling server (controller-runtime's `Options.PprofBindAddress`, which
//! serves Go's `net/http/pprof`): a CPU profile in pprof's protobuf format and a
//! heap summary, off by default.
//!
//! The manager binds it on its `Options::pprof_bind_address` (the
//! `--pprof-bind-address` flag) and runs it in its HTTP-servers group, an ordinary
//! [`http::Server`](crate::http::Server) with [`router`]:
//!
//! | path | answer |
//! |---|---|
//! | `/debug/pprof/` | an index of the two below |
//! | `/debug/pprof/profile?seconds=N` | samples the whole process for `N` s (default 30, as Go) at 100 Hz with the `pprof` crate and answers the profile as protobuf, which `go tool pprof` and Google's `pprof` read |
//! | `/debug/pprof/heap` | a text summary of the process' memory from `/proc/self/status`: Rust's global allocator keeps no allocation profile, so there is no Go-style heap profile |
//!
//! Only one CPU profile runs at a time; a second request gets `500`, as Go answers
//! `cpu profiling already in use`.
//!
//! CPU profiles need the crate feature `pprof` (`ctrl/pprof`): the `pprof` crate and its
//! symbolizer are a good part of an operator's cold build, and most operators never take a
//! profile. Without it the server still serves the index and the heap summary and answers
//! `/debug/pprof/profile` with `501 Not Implemented` naming the feature.

use std::time::Duration;

use async_trait::async_trait;
use http::StatusCode;

use crate::http::{self as h, Handler, Router};

/// Where the profiling endpoints are served.
pub const PPROF_PATH: &str = "/debug/pprof/";

/// How long a CPU profile samples without `?seconds=` (Go's default).
pub const DEFAULT_PROFILE_SECONDS: u64 = 30;

/// The longest CPU profile served (an hour).
pub const MAX_PROFILE_SECONDS: u64 = 3600;

/// Samples per second of a CPU profile (Go's default rate).
#[cfg(feature = "pprof")]
const FREQUENCY: i32 = 100;

/// The profiling server's routes.
pub fn router() -> Router {
    let mut r = Router::new();
    r.handle(PPROF_PATH, Pprof);
    r
}

/// The `/debug/pprof/` subtree.
struct Pprof;

#[async_trait]
impl Handler for Pprof {
    async fn call(&self, req: h::Request) -> h::Response {
        match req.uri().path().strip_prefix(PPROF_PATH).unwrap_or("") {
            "" => h::text(
                StatusCode::OK,
                "/debug/pprof/\n\nprofile: CPU profile (?seconds=N, default 30), protobuf\nheap: memory summary, text\n",
            ),
            "profile" => match seconds(req.uri().query()) {
                Ok(secs) => cpu_profile(Duration::from_secs(secs)).await,
                Err(msg) => h::text(StatusCode::BAD_REQUEST, msg),
            },
            "heap" => h::text(StatusCode::OK, heap_summary()),
            _ => h::text(StatusCode::NOT_FOUND, "Unknown profile\n"),
        }
    }
}

/// The `seconds` query parameter: 1 ..= [`MAX_PROFILE_SECONDS`], default 30.
fn seconds(query: Option<&str>) -> Result<u64, String> {
    let value = query
        .unwrap_or("")
        .split('&')
        .find_map(|kv| kv.strip_prefix("seconds="));
    let Some(value) = value else {
        return Ok(DEFAULT_PROFILE_SECONDS);
    };
    match value.parse::<u64>() {
        Ok(n) if (1..=MAX_PROFILE_SECONDS).contains(&n) => Ok(n),
        _ => Err(format!(
            "Bad Request: seconds must be an integer from 1 to {MAX_PROFILE_SECONDS}, not {value:?}\n"
        )),
    }
}

/// Without the `pprof` feature: `501`, naming the feature that serves CPU profiles.
#[cfg(not(feature = "pprof"))]
async fn cpu_profile(_duration: Duration) -> h::Response {
    h::text(
        StatusCode::NOT_IMPLEMENTED,
        "CPU profiles need ctrl's `pprof` feature (ctrl-runtime/pprof)\n",
    )
}

/// Samples the process for `duration` on a blocking thread (the profiler guard is
/// not `Send`) and answers the profile as protobuf.
#[cfg(feature = "pprof")]
async fn cpu_profile(duration: Duration) -> h::Response {
    let profiled = tokio::task::spawn_blocking(move || -> Result<Vec<u8>, String> {
        use pprof::protos::Message;
        let guard = pprof::ProfilerGuardBuilder::default()
            .frequency(FREQUENCY)
            .blocklist(&["libc", "libgcc", "pthread", "vdso"])
            .build()
            .map_err(|e| format!("Could not enable CPU profiling: {e}"))?;
        std::thread::sleep(duration);
        let report = guard.report().build().map_err(|e| e.to_string())?;
        let profile = report.pprof().map_err(|e| e.to_string())?;
        Ok(profile.encode_to_vec())
    })
    .await;
    match profiled {
        Ok(Ok(bytes)) => protobuf(bytes),
        Ok(Err(msg)) => {
            tracing::error!(error = %msg, "CPU profile failed");
            h::text(StatusCode::INTERNAL_SERVER_ERROR, format!("{msg}\n"))
        }
        Err(e) => h::text(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")),
    }
}

/// `200` with a profile, typed and named as Go's handler answers it.
#[cfg(feature = "pprof")]
fn protobuf(bytes: Vec<u8>) -> h::Response {
    use bytes::Bytes;
    use http::{HeaderValue, header};
    use http_body_util::Full;
    let mut resp = http::Response::new(Full::new(Bytes::from(bytes)));
    let hs = resp.headers_mut();
    hs.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    hs.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"profile\""),
    );
    resp
}

/// The memory lines of `/proc/self/status` (`VmPeak`, `VmSize`, `VmHWM`, `VmRSS`,
/// `VmData`, `RssAnon`, …), or a note off Linux.
fn heap_summary() -> String {
    match std::fs::read_to_string("/proc/self/status") {
        Ok(s) => {
            let mut out = String::from("# memory of this process (from /proc/self/status)\n");
            for line in s
                .lines()
                .filter(|l| l.starts_with("Vm") || l.starts_with("Rss"))
            {
                out.push_str(line);
                out.push('\n');
            }
            out
        }
        Err(_) => "no memory summary on this platform\n".to_string(),
    }
}
