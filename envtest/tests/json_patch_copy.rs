//! JSON-patch `copy` cannot amplify memory (issue 23, finding 5): the growth `copy` operations
//! may cause is capped at upstream's `JSONPatchMaxCopyBytes` (3 MiB), so a short patch whose
//! copies would double a document into hundreds of MiB is refused with a 422 and peak memory
//! stays bounded. The whole test process (client and embedded server) runs under a counting
//! allocator whose limit is set a few tens of MiB above the memory in use: exceeding it aborts
//! the test.

mod common;

use cap::Cap;
use common::{Untouched, cm};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};

#[global_allocator]
static ALLOC: Cap<std::alloc::System> = Cap::new(std::alloc::System, usize::MAX);

const MIB: usize = 1024 * 1024;

#[tokio::test]
async fn copy_amplification_is_refused_within_bounded_memory() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let big = "a".repeat(64 * 1024);
    api.create(&PostParams::default(), &cm("x", &[("k", &big)]))
        .await
        .unwrap();
    let before = Untouched::take(&env, &["/api/v1/configmaps"]).await;
    // Each op copies the whole data map into itself: 64 KiB doubled 12 times is 256 MiB.
    let ops: Vec<String> = (0..12)
        .map(|i| format!(r#"{{"op":"copy","from":"/data","path":"/data/c{i}"}}"#))
        .collect();
    let patch = format!("[{}]", ops.join(","));
    assert!(patch.len() < 1024, "a short patch");

    let headroom = 48 * MIB;
    let base = ALLOC.allocated();
    ALLOC.set_limit(base + headroom).expect("set the limit");
    let (code, status) = common::raw(
        &env,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/x",
        Some(&patch),
        "application/json-patch+json",
    )
    .await;
    ALLOC.set_limit(usize::MAX).expect("lift the limit");

    assert_eq!(code, 422, "{status}");
    let message = status["message"].as_str().unwrap_or("");
    assert!(
        message.contains("accumulated size increase of copy") && message.contains("3145728"),
        "{message}"
    );
    before.check(&env, "copy amplification").await;
    before.check_no_events(&env, "after-copies").await;

    // Copies within the limit still work.
    let (code, status) = common::raw(
        &env,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/x",
        Some(r#"[{"op":"copy","from":"/data/k","path":"/data/k2"}]"#),
        "application/json-patch+json",
    )
    .await;
    assert_eq!(code, 200, "{status}");
    assert_eq!(status["data"]["k2"].as_str().map(str::len), Some(big.len()));
}
