//! The local demo's script: create an AppService, scale it, delete it — three
//! events, of which only the create becomes a reconcile.

use std::time::Duration;

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::crd::{AppService, AppServiceSpec};

/// The AppService the demo creates, scales and deletes.
pub const SAMPLE: &str = "example-appservice";

/// Runs the script in namespace `default`, pausing `pause` between steps so that a
/// person can follow the log.
pub async fn run(client: kube::Client, pause: Duration) -> Result<(), kube::Error> {
    let api: Api<AppService> = Api::namespaced(client, "default");
    let app = AppService::new(
        SAMPLE,
        AppServiceSpec {
            size: 3,
            ..Default::default()
        },
    );
    tracing::info!("creating AppService default/{SAMPLE} (size 3): a create event, reconciled");
    api.create(&PostParams::default(), &app).await?;
    tokio::time::sleep(pause).await;

    tracing::info!("scaling default/{SAMPLE} to 5: an update event, only logged");
    let patch = json!({ "spec": { "size": 5 } });
    api.patch(SAMPLE, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    tokio::time::sleep(pause).await;

    tracing::info!("deleting default/{SAMPLE}: a delete event, only logged");
    api.delete(SAMPLE, &DeleteParams::default()).await?;
    Ok(())
}
