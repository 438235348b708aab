//! The profiling server (Go's `PprofBindAddress`): off by default, and when bound it
//! answers a CPU profile that decodes as pprof's protobuf `Profile`, a heap summary,
//! and a 400 for a bad `seconds`.

use crate::manager_common;

use clap::Parser;
use ctrl_runtime::manager::Args;
use manager_common::{env, finished, get, get_bytes, manager, quiet, run};
use pprof::protos::{Message, Profile};
use tokio_util::sync::CancellationToken;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    manager: Args,
}

#[tokio::test]
async fn pprof_is_off_by_default_and_the_flag_turns_it_on() {
    let env = env().await;
    assert_eq!(manager(&env, quiet()).pprof_addr(), None);
    let cli = Cli::parse_from(["op", "--pprof-bind-address", "127.0.0.1:0"]);
    let opts = cli.manager.apply(quiet());
    assert_eq!(opts.pprof_bind_address, "127.0.0.1:0");
    assert!(manager(&env, opts).pprof_addr().is_some());
}

#[tokio::test]
async fn the_cpu_profile_is_a_parsable_pprof_profile() {
    let env = env().await;
    let mgr = manager(
        &env,
        ctrl_runtime::manager::Options {
            pprof_bind_address: "127.0.0.1:0".into(),
            ..quiet()
        },
    );
    let addr = mgr.pprof_addr().expect("pprof bound");
    let ctx = CancellationToken::new();
    let h = run(&mgr, &ctx);

    let (status, headers, body) = get_bytes(addr, "/debug/pprof/profile?seconds=1")
        .await
        .expect("GET profile");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(
        headers[http::header::CONTENT_TYPE],
        "application/octet-stream"
    );
    let profile = Profile::decode(body).expect("a pprof protobuf Profile");
    let strings = &profile.string_table;
    let types: Vec<&str> = profile
        .sample_type
        .iter()
        .filter_map(|t| strings.get(usize::try_from(t.ty).ok()?).map(String::as_str))
        .collect();
    assert!(types.contains(&"cpu"), "sample types {types:?}");
    assert!(profile.duration_nanos > 0);

    let heap = get(addr, "/debug/pprof/heap").await;
    assert_eq!(heap.status, 200);
    assert!(heap.body.contains("VmRSS"), "{}", heap.body);
    assert_eq!(
        get(addr, "/debug/pprof/profile?seconds=x").await.status,
        400
    );
    assert_eq!(get(addr, "/debug/pprof/").await.status, 200);

    ctx.cancel();
    finished(h).await.expect("clean stop");
}
