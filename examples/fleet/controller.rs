//! The fleet controller: one reconcile per (member cluster, FleetConfigMap), run by
//! the replica that owns the member (the multi-cluster coordinator decides).
//!
//! A reconcile of `cluster://<member>/<ns>/<name>` reads the FleetConfigMap on the hub
//! and the member's kubeconfig Secret (whose labels the selector matches); if the
//! member is selected it applies the ConfigMap `<ns>/<name>` there (server-side apply,
//! with `fleet.example.com/written-by: <replica>`) and records the member in
//! `status.clusters`, else it deletes the copy it wrote and drops the entry. Entries
//! of members whose Secret is gone are dropped too, by whichever reconcile sees them.
//! The status is updated with the object's resourceVersion, so two replicas writing
//! entries of different members never lose one another's (a conflict is requeued).
//!
//! Events: a FleetConfigMap on the hub is watched once per member (a `Kind` over the
//! hub's cache for each engaged member, so a member that joins gets every existing
//! FleetConfigMap); a kubeconfig Secret changing (a member joining, leaving or
//! relabelled) brings every FleetConfigMap back in every member; and the ConfigMaps the operator wrote in each member bring their
//! FleetConfigMap back when someone edits or deletes them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ctrl::MultiClusterBuilder;
use ctrl::handler::{EnqueueRequestForObject, EnqueueRequestsFromMapFunc};
use ctrl::multicluster::{self, Cluster, ClusterRequest, DEFAULT_KUBECONFIG_SECRET_LABEL};
use ctrl::predicate::LabelSelectorPredicate;
use ctrl::rbac;
use ctrl::reconcile::{self, Action, Reconciler, Request};
use ctrl::source::{BoxSource, Kind};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};

use super::crd::{ClusterStatus, FleetConfigMap, WRITTEN_BY};

/// How often every FleetConfigMap is reconciled again in every member (a safety net:
/// the watches above see every change).
pub const RESYNC: Duration = Duration::from_secs(30);

/// The field manager of the ConfigMaps written in members.
const FIELD_MANAGER: &str = "fleet";

/// The reconciler: the hub's client, where the members' Secrets live, who this
/// replica is.
pub struct Fleet {
    /// The multi-cluster manager (members by name).
    pub mgr: multicluster::Manager,
    /// The hub's client.
    pub hub: kube::Client,
    /// The namespace of the members' kubeconfig Secrets.
    pub secrets_namespace: String,
    /// This replica's identity (the written-by annotation).
    pub identity: String,
}

/// Registers the controller on `mgr`'s local manager.
pub fn setup(fleet: Fleet) -> Result<(), ctrl::builder::Error> {
    let mgr = fleet.mgr.clone();
    mgr.local().add_rbac_rules(rules(&fleet.secrets_namespace));
    let hub_cache = mgr.local().cache();
    let secrets_cache = hub_cache.clone();
    let written = EnqueueRequestsFromMapFunc::new(|cm: &Arc<ConfigMap>| {
        let ours = cm
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(WRITTEN_BY));
        if ours {
            vec![Request::from_obj(cm.as_ref())]
        } else {
            Vec::new()
        }
    });
    let written = Arc::new(written);
    MultiClusterBuilder::new(&mgr)
        .named("fleet")
        .watches_per_cluster("fleetconfigmaps", move |_member: &Cluster| {
            Arc::new(Kind::<FleetConfigMap, Request>::new(
                &hub_cache,
                EnqueueRequestForObject,
            )) as BoxSource<Request>
        })
        .watches_per_cluster("kubeconfig-secrets", move |_member: &Cluster| {
            Arc::new(Kind::<Secret, Request>::new(
                &secrets_cache,
                every_fleet_config_map(&secrets_cache),
            )) as BoxSource<Request>
        })
        .watches_per_cluster("configmaps", move |member: &Cluster| {
            Arc::new(Kind::<ConfigMap, Request>::new(
                &member.cache(),
                written.clone(),
            )) as BoxSource<Request>
        })
        .with_options(ctrl::controller::Options {
            max_concurrent_reconciles: 4,
            ..Default::default()
        })
        .complete(fleet)?;
    Ok(())
}

/// What the operator needs on the hub (the members' RBAC is their kubeconfigs'):
/// FleetConfigMaps and their status, the kubeconfig Secrets (watched through the hub's
/// cache), and the coordinator's peer and fence Leases in `namespace`.
fn rules(namespace: &str) -> Vec<rbac::Rule> {
    vec![
        rbac::rule()
            .groups(["fleet.example.com"])
            .resources(["fleetconfigmaps"])
            .verbs(["get", "list", "watch"]),
        rbac::rule()
            .groups(["fleet.example.com"])
            .resources(["fleetconfigmaps/status"])
            .verbs(["update"]),
        rbac::rule()
            .groups([""])
            .resources(["secrets"])
            .verbs(["get", "list", "watch"]),
        rbac::rule()
            .groups(["coordination.k8s.io"])
            .resources(["leases"])
            .verbs(["get", "list", "watch", "create", "update"])
            .namespace(namespace),
    ]
}

#[async_trait]
impl Reconciler<ClusterRequest> for Fleet {
    async fn reconcile(
        &self,
        _ctx: ctrl::CancellationToken,
        req: ClusterRequest,
    ) -> Result<Action, reconcile::Error> {
        let fcms: Api<FleetConfigMap> = Api::namespaced(self.hub.clone(), &req.namespace);
        let member = self.mgr.cluster(&req.cluster)?;
        let copies: Api<ConfigMap> = Api::namespaced(member.kube_client(), &req.namespace);
        let Some(fcm) = fcms.get_opt(&req.name).await? else {
            delete_copy(&copies, &req.name).await?;
            return Ok(Action::done());
        };
        if fcm.metadata.deletion_timestamp.is_some() {
            delete_copy(&copies, &req.name).await?;
            return Ok(Action::done());
        }
        let entry = if self.selected(&fcm, req.cluster.as_str()).await? {
            let written = self.write_copy(&member, &fcm).await;
            if let Err(error) = &written {
                tracing::warn!(cluster = %req.cluster, %error, "writing the ConfigMap failed");
            }
            Some(ClusterStatus {
                name: req.cluster.to_string(),
                current: written.is_ok(),
                message: written.err().map(|e| e.to_string()),
            })
        } else {
            delete_copy(&copies, &req.name).await?;
            None
        };
        match self
            .update_status(&fcms, fcm, req.cluster.as_str(), entry)
            .await
        {
            // Another member's reconcile wrote the status first: read it again.
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(Action::requeue()),
            Err(e) => Err(e.into()),
            Ok(()) => Ok(Action::requeue_after(RESYNC)),
        }
    }
}

impl Fleet {
    /// Whether `member`'s Secret exists and its labels match the selector.
    async fn selected(&self, fcm: &FleetConfigMap, member: &str) -> Result<bool, reconcile::Error> {
        let secrets: Api<Secret> = Api::namespaced(self.hub.clone(), &self.secrets_namespace);
        let Some(secret) = secrets.get_opt(member).await? else {
            return Ok(false);
        };
        let Some(selector) = &fcm.spec.cluster_selector else {
            return Ok(true);
        };
        let pred = LabelSelectorPredicate::new(selector).map_err(reconcile::Error::terminal)?;
        Ok(pred.matches(&secret))
    }

    /// Applies the member's ConfigMap (creating its namespace if missing).
    async fn write_copy(&self, member: &Cluster, fcm: &FleetConfigMap) -> Result<(), kube::Error> {
        let ns = fcm.metadata.namespace.clone().unwrap_or_default();
        let name = fcm.metadata.name.clone().unwrap_or_default();
        let namespaces: Api<Namespace> = Api::all(member.kube_client());
        if namespaces.get_opt(&ns).await?.is_none() {
            let obj = Namespace {
                metadata: ObjectMeta {
                    name: Some(ns.clone()),
                    ..Default::default()
                },
                ..Default::default()
            };
            match namespaces.create(&PostParams::default(), &obj).await {
                Err(kube::Error::Api(e)) if e.code == 409 => {}
                other => drop(other?),
            }
        }
        let copy = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": { "name": name, "namespace": ns, "annotations": { WRITTEN_BY: self.identity } },
            "data": fcm.spec.data,
        });
        let copies: Api<ConfigMap> = Api::namespaced(member.kube_client(), &ns);
        let pp = PatchParams::apply(FIELD_MANAGER).force();
        copies.patch(&name, &pp, &Patch::Apply(copy)).await?;
        Ok(())
    }

    /// Sets `member`'s entry (or drops it), drops entries of members whose Secret is
    /// gone, and writes the status if that changed it.
    async fn update_status(
        &self,
        fcms: &Api<FleetConfigMap>,
        mut fcm: FleetConfigMap,
        member: &str,
        entry: Option<ClusterStatus>,
    ) -> Result<(), kube::Error> {
        let before = fcm.status.clone().unwrap_or_default();
        let mut by_name: BTreeMap<String, ClusterStatus> = before
            .clusters
            .iter()
            .map(|c| (c.name.clone(), c.clone()))
            .collect();
        by_name.remove(member);
        if let Some(entry) = entry {
            by_name.insert(member.to_string(), entry);
        }
        let secrets: Api<Secret> = Api::namespaced(self.hub.clone(), &self.secrets_namespace);
        let mut clusters = Vec::new();
        for (name, entry) in by_name {
            if name == member || secrets.get_opt(&name).await?.is_some() {
                clusters.push(entry);
            }
        }
        if clusters == before.clusters {
            return Ok(());
        }
        let name = fcm.metadata.name.clone().unwrap_or_default();
        fcm.status = Some(super::crd::FleetConfigMapStatus { clusters });
        fcms.replace_status(&name, &PostParams::default(), &fcm)
            .await?;
        Ok(())
    }
}

/// A kubeconfig Secret changed (a member joined, left or was relabelled): every
/// FleetConfigMap of the hub, from its cache.
fn every_fleet_config_map(hub: &ctrl::cache::Cache) -> EnqueueRequestsFromMapFunc<Secret> {
    let fcms = hub.get_informer::<FleetConfigMap>();
    EnqueueRequestsFromMapFunc::new(move |secret: &Arc<Secret>| {
        let member = secret
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key(DEFAULT_KUBECONFIG_SECRET_LABEL));
        if !member {
            return Vec::new();
        }
        fcms.store()
            .list()
            .iter()
            .map(|f| Request::from_obj(f.as_ref()))
            .collect()
    })
}

/// Deletes the ConfigMap `name` if this operator wrote it.
async fn delete_copy(copies: &Api<ConfigMap>, name: &str) -> Result<(), kube::Error> {
    let Some(cm) = copies.get_opt(name).await? else {
        return Ok(());
    };
    if cm
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(WRITTEN_BY))
    {
        match copies.delete(name, &DeleteParams::default()).await {
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            other => drop(other?),
        }
    }
    Ok(())
}
