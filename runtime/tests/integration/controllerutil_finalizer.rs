//! The finalizer registry (`controllerutil::Finalizers`, controller-runtime's
//! `pkg/finalizer`): ported cases from `finalizer_test.go`, then a round trip on
//! envtest where deletion waits for the finalizer.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use ctrl_envtest::Environment;
use ctrl_runtime::controllerutil::{
    FinalizeError, FinalizeResult, Finalizer, Finalizers, add_finalizer, contains_finalizer,
    remove_finalizer,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, PostParams};

struct Mock {
    calls: Arc<AtomicUsize>,
    result: FinalizeResult,
    fail: bool,
}

#[async_trait]
impl Finalizer<ConfigMap> for Mock {
    async fn finalize(&self, _obj: &mut ConfigMap) -> Result<FinalizeResult, FinalizeError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.fail {
            return Err(FinalizeError::new("finalizer failed").with_result(self.result));
        }
        Ok(self.result)
    }
}

fn mock(result: FinalizeResult, fail: bool) -> (Mock, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let m = Mock {
        calls: calls.clone(),
        result,
        fail,
    };
    (m, calls)
}

fn deleting(finalizers: &[&str]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
    cm.metadata.finalizers = Some(finalizers.iter().map(|f| f.to_string()).collect());
    cm
}

#[tokio::test]
async fn register_rejects_duplicate_keys() {
    let mut f = Finalizers::<ConfigMap>::new();
    f.register("finalizer", mock(FinalizeResult::default(), false).0)
        .expect("first");
    let err = f
        .register("finalizer", mock(FinalizeResult::default(), false).0)
        .expect_err("duplicate");
    assert_eq!(
        err.to_string(),
        "finalizer for key \"finalizer\" already registered"
    );
}

#[tokio::test]
async fn live_objects_get_the_keys_once() {
    let mut f = Finalizers::<ConfigMap>::new();
    let (m, calls) = mock(FinalizeResult::default(), false);
    f.register("finalizer", m).expect("register");
    let mut cm = ConfigMap::default();
    let res = f.finalize(&mut cm).await.expect("add");
    assert_eq!(
        res,
        FinalizeResult {
            updated: true,
            status_updated: false
        }
    );
    assert!(contains_finalizer(&cm, "finalizer"));
    let res = f.finalize(&mut cm).await.expect("again");
    assert_eq!(res, FinalizeResult::default(), "idempotent");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn deleting_objects_run_finalizers_and_lose_their_keys() {
    let mut f = Finalizers::<ConfigMap>::new();
    let status = FinalizeResult {
        updated: false,
        status_updated: true,
    };
    let (ok, ok_calls) = mock(status, false);
    f.register("ok", ok).expect("register");
    let mut cm = deleting(&["ok", "other"]);
    let res = f.finalize(&mut cm).await.expect("finalize");
    assert_eq!(
        res,
        FinalizeResult {
            updated: true,
            status_updated: true
        }
    );
    assert_eq!(ok_calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        cm.metadata.finalizers.as_deref(),
        Some(&["other".to_string()][..])
    );
    // Nothing left to do: no call, no change.
    let res = f.finalize(&mut cm).await.expect("again");
    assert_eq!(res, FinalizeResult::default());
    assert_eq!(ok_calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn failing_finalizers_keep_their_key_and_report_what_changed() {
    let mut f = Finalizers::<ConfigMap>::new();
    let partial = FinalizeResult {
        updated: false,
        status_updated: true,
    };
    let (bad, _) = mock(partial, true);
    let (good, good_calls) = mock(FinalizeResult::default(), false);
    f.register("bad", bad).expect("bad");
    f.register("good", good).expect("good");
    let mut cm = deleting(&["bad", "good"]);
    let err = f.finalize(&mut cm).await.expect_err("one failed");
    assert_eq!(
        err.to_string(),
        "finalizer \"bad\" failed: finalizer failed"
    );
    assert_eq!(
        err.result,
        FinalizeResult {
            updated: true,
            status_updated: true
        }
    );
    assert_eq!(good_calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        cm.metadata.finalizers.as_deref(),
        Some(&["bad".to_string()][..])
    );
}

#[tokio::test]
async fn deletion_waits_for_the_finalizer_on_envtest() {
    let env = Environment::start().await.expect("envtest");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let mut f = Finalizers::<ConfigMap>::new();
    let (m, calls) = mock(FinalizeResult::default(), false);
    f.register("example.com/cleanup", m).expect("register");

    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("guarded".into());
    let mut cm = api
        .create(&PostParams::default(), &cm)
        .await
        .expect("create");
    assert!(f.finalize(&mut cm).await.expect("add").updated);
    let cm = api
        .replace("guarded", &PostParams::default(), &cm)
        .await
        .expect("update");
    assert!(contains_finalizer(&cm, "example.com/cleanup"));

    api.delete("guarded", &DeleteParams::default())
        .await
        .expect("delete");
    let mut cm = api.get("guarded").await.expect("kept by the finalizer");
    assert!(cm.metadata.deletion_timestamp.is_some());
    let res = f.finalize(&mut cm).await.expect("finalize");
    assert!(res.updated);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    api.replace("guarded", &PostParams::default(), &cm)
        .await
        .expect("remove the finalizer");
    assert!(
        api.get_opt("guarded").await.expect("get").is_none(),
        "deleted"
    );
}

#[test]
fn add_and_remove_report_changes() {
    let mut cm = ConfigMap::default();
    assert!(add_finalizer(&mut cm, "a"));
    assert!(!add_finalizer(&mut cm, "a"));
    assert!(remove_finalizer(&mut cm, "a"));
    assert!(!remove_finalizer(&mut cm, "a"));
    assert!(!contains_finalizer(&cm, "a"));
}
