//! The Deployment controller (upstream's `pkg/controller/deployment/`: `deployment_controller.go`,
//! `sync.go`, `rolling.go`, `recreate.go`, `progress.go`): a Deployment owns the ReplicaSets
//! its selector matches (adoption and release as for Pods). The ReplicaSet whose template is
//! the Deployment's (ignoring the `pod-template-hash` label) is the new one; when there is
//! none it is created as `<deployment>-<pod-template-hash>` with the hash in its labels,
//! selector and template, revision = highest old revision + 1, the Deployment's annotations
//! and `desired-replicas` / `max-replicas`. A rollback (the template set back to an old
//! ReplicaSet's, which is what `kubectl rollout undo` does) finds that old ReplicaSet and
//! raises its revision, keeping the former one in `revision-history`.
//!
//! `RollingUpdate` (the default: maxSurge / maxUnavailable 25 %) scales the new ReplicaSet
//! up within `replicas + maxSurge` and the old ones down while `replicas - maxUnavailable`
//! stay available; `Recreate` scales the old ones to zero, waits for their Pods to go, then
//! scales the new one up. A paused Deployment and a change of `replicas` alone only scale
//! (proportionally across the active ReplicaSets); old ReplicaSets beyond
//! `revisionHistoryLimit` (10) are deleted once the rollout is complete. Status as
//! upstream's `calculateStatus` / `syncRolloutStatus`: `observedGeneration`, `replicas`,
//! `updatedReplicas`, `readyReplicas`, `availableReplicas`, `unavailableReplicas`,
//! `collisionCount`, and the `Available` (`MinimumReplicasAvailable` /
//! `MinimumReplicasUnavailable`) and `Progressing` (`NewReplicaSetCreated`,
//! `FoundNewReplicaSet`, `ReplicaSetUpdated`, `NewReplicaSetAvailable`,
//! `ProgressDeadlineExceeded`, `DeploymentPaused`, `DeploymentResumed`) conditions with
//! upstream's messages; `progressDeadlineSeconds` (600) is timed from the condition's
//! `lastUpdateTime`.
//!
//! Differences: the pod-template-hash is computed over the template's JSON, not Go's struct
//! dump (`util::compute_hash`), so its value differs from a real cluster's; the status is
//! written once per sync where upstream may write it twice; no Events; no
//! `ReplicaFailure` condition; the deprecated `spec.rollbackTo` is not served.

mod rollout;
pub(crate) mod util;

use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use serde::Deserialize;
use serde_json::Value;

use super::client::{self, Client, DEPLOYMENTS, Key, PODS, REPLICASETS};
use super::runner::{Reconciler, owner_key};
use crate::api::meta;
use crate::api::status::ApiError;
use util::{REVISION, get_condition, set_condition, spec_replicas};

/// The Deployment controller.
pub(crate) struct Deployments;

impl Reconciler for Deployments {
    fn name(&self) -> &'static str {
        "deployment"
    }

    fn watches(&self) -> Vec<client::Res> {
        vec![DEPLOYMENTS, REPLICASETS, PODS]
    }

    /// A ReplicaSet maps to its Deployment (an orphan to those selecting it), a Pod to the
    /// Deployment of its ReplicaSet (Recreate waits for old Pods to go).
    fn keys(&self, c: &Client<'_>, index: usize, obj: &Value) -> Vec<Key> {
        match index {
            0 => vec![client::key_of(obj)],
            1 if client::controller_ref_value(obj).is_none() => {
                let ns = meta::namespace(obj);
                (c.list::<Deployment>(&DEPLOYMENTS, Some(ns)).into_iter())
                    .filter(|d| client::selects(d.spec.as_ref().map(|s| &s.selector), obj))
                    .map(|d| (ns.to_string(), d.metadata.name.unwrap_or_default()))
                    .collect()
            }
            1 => owner_key(obj, &DEPLOYMENTS).into_iter().collect(),
            _ => owner_key(obj, &REPLICASETS)
                .and_then(|(ns, rs)| c.get_value(&REPLICASETS, &ns, &rs))
                .and_then(|rs| owner_key(&rs, &DEPLOYMENTS))
                .into_iter()
                .collect(),
        }
    }

    fn reconcile(&self, c: &Client<'_>, key: &Key) -> Option<Duration> {
        let mut s = Sync::load(*c, key)?;
        match s.run() {
            Ok(again) => again,
            Err(e) => {
                tracing::debug!(namespace = %key.0, deployment = %key.1, error = %e.message, "deployment sync failed; retrying");
                Some(Duration::from_millis(100))
            }
        }
    }
}

/// One sync of one Deployment: what it is, the ReplicaSets it owns (kept current as they
/// are written), and the status being built.
pub(super) struct Sync<'a> {
    c: Client<'a>,
    /// The Deployment as stored (updated after each write of it).
    dv: Value,
    d: Deployment,
    replicas: i64,
    /// The status as it will be written: conditions and collisionCount change on the way.
    status: DeploymentStatus,
    /// The owned ReplicaSets, oldest first.
    rss: Vec<Value>,
}

impl<'a> Sync<'a> {
    fn load(c: Client<'a>, key: &Key) -> Option<Self> {
        let dv = c.get_value(&DEPLOYMENTS, &key.0, &key.1)?;
        let d = Deployment::deserialize(&dv).ok()?;
        let status = d.status.clone().unwrap_or_default();
        let mut s = Sync {
            c,
            replicas: spec_replicas(&dv),
            dv,
            d,
            status,
            rss: Vec::new(),
        };
        s.rss = s.owned_replicasets();
        Some(s)
    }

    /// Upstream's `syncDeployment`.
    fn run(&mut self) -> Result<Option<Duration>, ApiError> {
        if self.d.metadata.deletion_timestamp.is_some() {
            let new = self.find_new();
            return self.sync_status(new);
        }
        self.paused_conditions();
        let paused = self.d.spec.as_ref().and_then(|s| s.paused) == Some(true);
        if paused || self.scaling_event()? {
            return self.sync_scale(paused);
        }
        if util::rolling(&self.dv) {
            self.rolling()
        } else {
            self.recreate()
        }
    }

    /// The ReplicaSets of the namespace the Deployment owns after adoption and release,
    /// oldest first.
    fn owned_replicasets(&self) -> Vec<Value> {
        let sel = self.d.spec.as_ref().map(|s| &s.selector);
        let all = self
            .c
            .list_values(&REPLICASETS, Some(meta::namespace(&self.dv)));
        let mut owned = client::claim_all(
            &self.c,
            &REPLICASETS,
            &self.dv,
            &DEPLOYMENTS,
            |rs| client::selects(sel, rs),
            all,
        );
        owned.sort_by_key(created);
        owned
    }

    /// The template of the Deployment.
    fn template(&self) -> Value {
        self.dv
            .pointer("/spec/template")
            .cloned()
            .unwrap_or_default()
    }

    /// The index of the new ReplicaSet: the oldest whose template is the Deployment's,
    /// ignoring the hash (upstream's `FindNewReplicaSet`).
    fn find_new(&self) -> Option<usize> {
        let want = util::without_hash(&self.template());
        (self.rss.iter()).position(|rs| {
            util::without_hash(rs.pointer("/spec/template").unwrap_or(&Value::Null)) == want
        })
    }

    /// Upstream's `getAllReplicaSetsAndSyncRevision` / `getNewReplicaSet`: finds the new
    /// ReplicaSet and brings its annotations and the Deployment's revision up to date, or
    /// (with `create`) creates it. Returns its index.
    fn new_and_old(&mut self, create: bool) -> Result<Option<usize>, ApiError> {
        let new = self.find_new();
        let max_old = (self.rss.iter().enumerate())
            .filter(|(i, _)| Some(*i) != new)
            .map(|(_, rs)| util::revision(rs))
            .max()
            .unwrap_or(0);
        let Some(i) = new else {
            return if create {
                self.create_new(max_old + 1).map(Some)
            } else {
                Ok(None)
            };
        };
        let mut rs = self.rss[i].clone();
        let min_ready = self.dv.pointer("/spec/minReadySeconds").cloned();
        let changed = util::set_new_rs_annotations(&self.dv, &mut rs, max_old + 1, true);
        if changed || rs.pointer("/spec/minReadySeconds") != min_ready.as_ref() {
            let annotations = rs.pointer("/metadata/annotations").cloned();
            let out = self.c.update(&REPLICASETS, &self.rss[i], None, |v| {
                if let Some(a) = annotations {
                    meta::set_meta(v, "annotations", a);
                }
                match min_ready {
                    Some(m) => v["spec"]["minReadySeconds"] = m,
                    None => drop(
                        v["spec"]
                            .as_object_mut()
                            .map(|s| s.remove("minReadySeconds")),
                    ),
                }
            })?;
            self.rss[i] = Value::clone(&out);
        }
        let revision = util::annotation(&self.rss[i], REVISION)
            .unwrap_or("")
            .to_string();
        self.set_revision(&revision)?;
        if get_condition(&self.status, "Progressing").is_none() {
            let msg = format!("Found new replica set {:?}", meta::name(&self.rss[i]));
            set_condition(
                &mut self.status,
                util::condition("Progressing", "True", "FoundNewReplicaSet", msg),
            );
        }
        Ok(Some(i))
    }

    /// Creates the new ReplicaSet at `revision` (upstream's `getNewReplicaSet`, create half);
    /// a name taken by a ReplicaSet of another template raises `collisionCount`.
    fn create_new(&mut self, revision: i64) -> Result<usize, ApiError> {
        let rs = self.new_replicaset(revision);
        let name = meta::name(&rs).to_string();
        match self.c.create(&REPLICASETS, meta::namespace(&self.dv), rs) {
            Ok(out) => {
                self.rss.push(Value::clone(&out));
                let msg = format!("Created new replica set {name:?}");
                set_condition(
                    &mut self.status,
                    util::condition("Progressing", "True", "NewReplicaSetCreated", msg),
                );
                self.set_revision(&revision.to_string())?;
                tracing::debug!(namespace = meta::namespace(&self.dv), replicaset = %name, revision, "new replica set");
                Ok(self.rss.len() - 1)
            }
            Err(e) if e.code == 409 => {
                let n = self.status.collision_count.unwrap_or(0);
                self.status.collision_count = Some(n.saturating_add(1));
                self.write_status()?;
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// The new ReplicaSet object for `revision`, sized by upstream's `NewRSNewReplicas`.
    fn new_replicaset(&self, revision: i64) -> Value {
        let mut template = self.template();
        let hash = util::compute_hash(&template, self.status.collision_count.map(i64::from));
        if !template
            .pointer("/metadata/labels")
            .is_some_and(Value::is_object)
        {
            template["metadata"]["labels"] = serde_json::json!({});
        }
        template["metadata"]["labels"][util::HASH_LABEL] = serde_json::json!(hash);
        let mut selector = self
            .dv
            .pointer("/spec/selector")
            .cloned()
            .unwrap_or_default();
        if !selector.get("matchLabels").is_some_and(Value::is_object) {
            selector["matchLabels"] = serde_json::json!({});
        }
        selector["matchLabels"][util::HASH_LABEL] = serde_json::json!(hash);
        let mut rs = serde_json::json!({
            "metadata": {"name": format!("{}-{hash}", meta::name(&self.dv)),
                "namespace": meta::namespace(&self.dv),
                "labels": template["metadata"]["labels"].clone(),
                "ownerReferences": [client::new_controller_ref(&self.dv, &DEPLOYMENTS)]},
            "spec": {"replicas": 0, "selector": selector, "template": template},
        });
        if let Some(m) = self.dv.pointer("/spec/minReadySeconds") {
            rs["spec"]["minReadySeconds"] = m.clone();
        }
        rs["spec"]["replicas"] = serde_json::json!(self.new_rs_replicas(0));
        util::set_new_rs_annotations(&self.dv, &mut rs, revision, false);
        rs
    }

    /// Upstream's `SetDeploymentRevision`: the Deployment's revision annotation follows its
    /// new ReplicaSet's (written at once, as upstream writes it).
    fn set_revision(&mut self, revision: &str) -> Result<(), ApiError> {
        if revision.is_empty() || util::annotation(&self.dv, REVISION) == Some(revision) {
            return Ok(());
        }
        let out = self.c.update(&DEPLOYMENTS, &self.dv, None, |v| {
            util::set_annotation(v, REVISION, revision);
        })?;
        self.dv = Value::clone(&out);
        Ok(())
    }

    /// Upstream's `checkPausedConditions`: `Progressing` is `Unknown` with `DeploymentPaused`
    /// while paused and `DeploymentResumed` once resumed.
    fn paused_conditions(&mut self) {
        if util::progress_deadline(&self.d).is_none() {
            return;
        }
        let reason = get_condition(&self.status, "Progressing").and_then(|c| c.reason.clone());
        if reason.as_deref() == Some("ProgressDeadlineExceeded") {
            return;
        }
        let paused_cond = reason.as_deref() == Some("DeploymentPaused");
        let paused = self.d.spec.as_ref().and_then(|s| s.paused) == Some(true);
        let c = match (paused, paused_cond) {
            (true, false) => util::condition(
                "Progressing",
                "Unknown",
                "DeploymentPaused",
                "Deployment is paused".into(),
            ),
            (false, true) => util::condition(
                "Progressing",
                "Unknown",
                "DeploymentResumed",
                "Deployment is resumed".into(),
            ),
            _ => return,
        };
        set_condition(&mut self.status, c);
    }

    /// Upstream's `isScalingEvent`: an active ReplicaSet's `desired-replicas` is not the
    /// Deployment's `replicas`.
    fn scaling_event(&mut self) -> Result<bool, ApiError> {
        self.new_and_old(false)?;
        let want = self.replicas.to_string();
        Ok((self.rss.iter())
            .filter(|rs| spec_replicas(rs) > 0)
            .any(|rs| util::annotation(rs, util::DESIRED_REPLICAS).is_some_and(|d| d != want)))
    }

    /// Upstream's `sync`: scale only (paused, or `replicas` changed), then the status.
    fn sync_scale(&mut self, paused: bool) -> Result<Option<Duration>, ApiError> {
        let new = self.new_and_old(false)?;
        self.scale(new)?;
        if paused {
            self.cleanup(new)?;
        }
        self.sync_status(new)
    }

    /// Upstream's `syncDeploymentStatus`: counts and `Available`, written if changed.
    fn sync_status(&mut self, new: Option<usize>) -> Result<Option<Duration>, ApiError> {
        self.calculate_status(new);
        self.write_status()?;
        Ok(None)
    }

    /// Upstream's `calculateStatus` into `self.status`.
    fn calculate_status(&mut self, new: Option<usize>) {
        let all: Vec<&Value> = self.rss.iter().collect();
        let new_rs = new.map(|i| &self.rss[i]);
        util::counts(&self.dv, &all, new_rs, &mut self.status);
        let available = i64::from(self.status.available_replicas.unwrap_or(0));
        let c = if available >= self.replicas - util::max_unavailable(&self.dv) {
            util::condition(
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.".into(),
            )
        } else {
            util::condition(
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.".into(),
            )
        };
        set_condition(&mut self.status, c);
    }

    /// Writes `self.status` to `/status` if it differs from what is stored.
    fn write_status(&mut self) -> Result<(), ApiError> {
        if self.d.status.as_ref() == Some(&self.status) {
            return Ok(());
        }
        let status = serde_json::to_value(&self.status).unwrap_or_default();
        let out = self.c.update(&DEPLOYMENTS, &self.dv, Some("status"), |v| {
            v["status"] = status
        })?;
        self.dv = Value::clone(&out);
        self.d.status = Some(self.status.clone());
        Ok(())
    }
}

/// A ReplicaSet's creation time and name, the order upstream sorts by.
fn created(rs: &Value) -> (String, String) {
    let t = meta::meta_str(rs, "creationTimestamp")
        .unwrap_or("")
        .to_string();
    (t, meta::name(rs).to_string())
}
