//! How a Deployment's ReplicaSets are sized: upstream's `rolling.go` (`rolloutRolling`,
//! `reconcileNewReplicaSet`, `reconcileOldReplicaSets`, `cleanupUnhealthyReplicas`,
//! `scaleDownOldReplicaSetsForRollingUpdate`), `recreate.go`, `sync.go` (`scale` with
//! proportional scaling, `cleanupDeployment`, `scaleReplicaSet`) and `progress.go`
//! (`syncRolloutStatus`), as methods of the sync of [`super`].

use std::time::Duration;

use serde_json::{Value, json};

use super::Sync;
use super::util::{self, get_condition, set_condition, spec_replicas, status_count};
use crate::api::meta;
use crate::api::status::ApiError;
use crate::controllers::client::{PODS, REPLICASETS, controller_ref_value};

type Step = Result<Option<Duration>, ApiError>;

impl Sync<'_> {
    /// Upstream's `rolloutRolling`.
    pub(super) fn rolling(&mut self) -> Step {
        let new = self.new_and_old(true)?;
        let Some(new) = new else {
            return self.sync_rollout_status(None);
        };
        if self.reconcile_new(new)? || self.reconcile_old(new)? {
            return self.sync_rollout_status(Some(new));
        }
        if util::complete(&self.d, self.replicas, &self.status) {
            self.cleanup(Some(new))?;
        }
        self.sync_rollout_status(Some(new))
    }

    /// Upstream's `rolloutRecreate`: old ReplicaSets to zero, wait for their Pods to go, then
    /// the new one up.
    pub(super) fn recreate(&mut self) -> Step {
        let new = self.new_and_old(false)?;
        let mut scaled = false;
        for i in self.old_indices(new) {
            if spec_replicas(&self.rss[i]) > 0 {
                scaled |= self.scale_rs(i, 0)?;
            }
        }
        if scaled || self.old_pods_running(new) {
            return self.sync_rollout_status(new);
        }
        let new = match new {
            Some(i) => i,
            None => match self.new_and_old(true)? {
                Some(i) => i,
                None => return Ok(None),
            },
        };
        self.scale_rs(new, self.replicas)?;
        if util::complete(&self.d, self.replicas, &self.status) {
            self.cleanup(Some(new))?;
        }
        self.sync_rollout_status(Some(new))
    }

    fn old_indices(&self, new: Option<usize>) -> Vec<usize> {
        (0..self.rss.len()).filter(|i| Some(*i) != new).collect()
    }

    /// Whether a Pod of an old ReplicaSet has not finished (upstream's `oldPodsRunning`).
    fn old_pods_running(&self, new: Option<usize>) -> bool {
        let old: Vec<&str> = (self.old_indices(new).into_iter())
            .filter_map(|i| meta::meta_str(&self.rss[i], "uid"))
            .collect();
        let pods = self.c.list_values(&PODS, Some(meta::namespace(&self.dv)));
        pods.iter().any(|p| {
            let owner = controller_ref_value(p).and_then(|r| r["uid"].as_str());
            owner.is_some_and(|u| old.contains(&u))
                && !matches!(
                    crate::controllers::client::pod_phase(p),
                    "Succeeded" | "Failed"
                )
        })
    }

    /// Upstream's `NewRSNewReplicas` for the new ReplicaSet now at `current` replicas.
    pub(super) fn new_rs_replicas(&self, current: i64) -> i64 {
        if !util::rolling(&self.dv) {
            return self.replicas;
        }
        let total: i64 = self.rss.iter().map(spec_replicas).sum::<i64>() + current
            - self.find_new().map_or(0, |i| spec_replicas(&self.rss[i]));
        let max_total = self.replicas + util::max_surge(&self.dv);
        if total >= max_total {
            return current;
        }
        current + (max_total - total).min(self.replicas - current)
    }

    /// Upstream's `reconcileNewReplicaSet`; whether it scaled.
    fn reconcile_new(&mut self, new: usize) -> Result<bool, ApiError> {
        let cur = spec_replicas(&self.rss[new]);
        if cur == self.replicas {
            return Ok(false);
        }
        if cur > self.replicas {
            return self.scale_rs(new, self.replicas);
        }
        let n = self.new_rs_replicas(cur);
        self.scale_rs(new, n)
    }

    /// Upstream's `reconcileOldReplicaSets`; whether it scaled down.
    fn reconcile_old(&mut self, new: usize) -> Result<bool, ApiError> {
        let old = self.old_indices(Some(new));
        let old_pods: i64 = old.iter().map(|i| spec_replicas(&self.rss[*i])).sum();
        if old_pods == 0 {
            return Ok(false);
        }
        let all_pods: i64 = self.rss.iter().map(spec_replicas).sum();
        let min_available = self.replicas - util::max_unavailable(&self.dv);
        let new_unavailable =
            spec_replicas(&self.rss[new]) - status_count(&self.rss[new], "availableReplicas");
        let max_scaled_down = all_pods - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return Ok(false);
        }
        let cleaned = self.cleanup_unhealthy(&old, max_scaled_down)?;
        let scaled = self.scale_down_old(&old, min_available)?;
        Ok(cleaned + scaled > 0)
    }

    /// Upstream's `cleanupUnhealthyReplicas`: old ReplicaSets lose their unavailable
    /// replicas first, oldest first, `max` in all.
    fn cleanup_unhealthy(&mut self, old: &[usize], max: i64) -> Result<i64, ApiError> {
        let mut total = 0;
        for &i in old {
            if total >= max {
                break;
            }
            let (replicas, available) = (
                spec_replicas(&self.rss[i]),
                status_count(&self.rss[i], "availableReplicas"),
            );
            if replicas == 0 || available == replicas {
                continue;
            }
            let n = (max - total).min(replicas - available);
            self.scale_rs(i, replicas - n)?;
            total += n;
        }
        Ok(total)
    }

    /// Upstream's `scaleDownOldReplicaSetsForRollingUpdate`: down to `min_available`
    /// available Pods, oldest ReplicaSets first.
    fn scale_down_old(&mut self, old: &[usize], min_available: i64) -> Result<i64, ApiError> {
        let available: i64 = self
            .rss
            .iter()
            .map(|r| status_count(r, "availableReplicas"))
            .sum();
        if available <= min_available {
            return Ok(0);
        }
        let target = available - min_available;
        let mut total = 0;
        for &i in old {
            let replicas = spec_replicas(&self.rss[i]);
            if total >= target {
                break;
            }
            if replicas == 0 {
                continue;
            }
            let n = replicas.min(target - total);
            self.scale_rs(i, replicas - n)?;
            total += n;
        }
        Ok(total)
    }

    /// Upstream's `scaleReplicaSet`: `spec.replicas` and the replicas annotations; whether
    /// the size changed.
    pub(super) fn scale_rs(&mut self, i: usize, n: i64) -> Result<bool, ApiError> {
        let mut rs = self.rss[i].clone();
        let resize = spec_replicas(&rs) != n;
        if !util::set_replicas_annotations(&mut rs, &self.dv) && !resize {
            return Ok(false);
        }
        let annotations = rs
            .pointer("/metadata/annotations")
            .cloned()
            .unwrap_or_default();
        let out = self.c.update(&REPLICASETS, &self.rss[i], None, |v| {
            v["spec"]["replicas"] = json!(n);
            meta::set_meta(v, "annotations", annotations);
        })?;
        tracing::debug!(
            namespace = meta::namespace(&self.dv),
            replicaset = meta::name(&out),
            replicas = n,
            "scaled replica set"
        );
        self.rss[i] = Value::clone(&out);
        Ok(resize)
    }

    /// Upstream's `scale`: the one active ReplicaSet takes `replicas`; a saturated new one
    /// leaves the old ones none; otherwise the difference is shared in proportion.
    pub(super) fn scale(&mut self, new: Option<usize>) -> Result<(), ApiError> {
        let active: Vec<usize> = (0..self.rss.len())
            .filter(|i| spec_replicas(&self.rss[*i]) > 0)
            .collect();
        let single = match active.len() {
            0 => new.or_else(|| self.rss.len().checked_sub(1)),
            1 => Some(active[0]),
            _ => None,
        };
        if let Some(i) = single {
            self.scale_rs(i, self.replicas)?;
            return Ok(());
        }
        if let Some(n) = new
            && spec_replicas(&self.rss[n]) == self.replicas
            && status_count(&self.rss[n], "availableReplicas") == self.replicas
        {
            for i in self.old_indices(new) {
                self.scale_rs(i, 0)?;
            }
            return Ok(());
        }
        self.scale_proportionally(active)
    }

    /// Shares `replicas + maxSurge` minus what the active ReplicaSets have among them in
    /// proportion to their `max-replicas` annotations (upstream's `GetProportion`); the
    /// rounding leftover goes to the largest.
    fn scale_proportionally(&mut self, mut active: Vec<usize>) -> Result<(), ApiError> {
        let surge = util::max_surge(&self.dv);
        let allowed = if self.replicas > 0 {
            self.replicas + surge
        } else {
            0
        };
        let have: i64 = active.iter().map(|i| spec_replicas(&self.rss[*i])).sum();
        let to_add = allowed - have;
        let up = to_add > 0;
        active.sort_by(|a, b| {
            let (ra, rb) = (&self.rss[*a], &self.rss[*b]);
            let by_age = super::created(ra).cmp(&super::created(rb));
            let by_age = if up { by_age.reverse() } else { by_age };
            spec_replicas(rb).cmp(&spec_replicas(ra)).then(by_age)
        });
        let mut added = 0;
        let mut sizes: Vec<(usize, i64)> = Vec::new();
        for &i in &active {
            let r = spec_replicas(&self.rss[i]);
            let annotated = util::annotation(&self.rss[i], util::MAX_REPLICAS)
                .and_then(|a| a.parse::<i64>().ok())
                .unwrap_or_else(|| i64::from(self.status.replicas.unwrap_or(0)));
            let fraction = if self.replicas == 0 || annotated == 0 {
                -r
            } else {
                ((r * (self.replicas + surge)) as f64 / annotated as f64).round() as i64 - r
            };
            let allowed = to_add - added;
            let p = if to_add == 0 || r == 0 {
                0
            } else if up {
                fraction.min(allowed)
            } else {
                fraction.max(allowed)
            };
            added += p;
            sizes.push((i, r + p));
        }
        if let Some(first) = sizes.first_mut() {
            first.1 = (first.1 + to_add - added).max(0);
        }
        for (i, n) in sizes {
            self.scale_rs(i, n)?;
        }
        Ok(())
    }

    /// Upstream's `cleanupDeployment`: old ReplicaSets beyond `revisionHistoryLimit` (10),
    /// lowest revision first, if they have no Pods and are up to date.
    pub(super) fn cleanup(&mut self, new: Option<usize>) -> Result<(), ApiError> {
        let limit = self
            .dv
            .pointer("/spec/revisionHistoryLimit")
            .and_then(Value::as_i64)
            .unwrap_or(10);
        let mut old: Vec<Value> = (self.old_indices(new).into_iter())
            .map(|i| self.rss[i].clone())
            .filter(|rs| meta::meta_str(rs, "deletionTimestamp").is_none())
            .collect();
        let extra = i64::try_from(old.len()).unwrap_or(0) - limit;
        if extra <= 0 {
            return Ok(());
        }
        old.sort_by_key(|rs| (util::revision(rs), super::created(rs)));
        for rs in old.iter().take(usize::try_from(extra).unwrap_or(0)) {
            let busy = status_count(rs, "replicas") != 0
                || spec_replicas(rs) != 0
                || meta::generation(rs) > status_count(rs, "observedGeneration");
            if !busy {
                self.c.delete(&REPLICASETS, rs, None)?;
                self.rss.retain(|r| meta::name(r) != meta::name(rs));
            }
        }
        Ok(())
    }

    /// Upstream's `syncRolloutStatus`: the status with the `Progressing` condition, and when
    /// to look again for the progress deadline.
    pub(super) fn sync_rollout_status(&mut self, new: Option<usize>) -> Step {
        let old = self.status.clone();
        self.calculate_status(new);
        let deadline = util::progress_deadline(&self.d);
        if deadline.is_none() {
            util::remove_condition(&mut self.status, "Progressing");
        }
        let cur = get_condition(&old, "Progressing").cloned();
        let done = self.status.replicas == self.status.updated_replicas
            && cur.as_ref().and_then(|c| c.reason.as_deref()) == Some("NewReplicaSetAvailable");
        if deadline.is_some() && !done {
            self.progress(new, &old, cur);
        }
        self.write_status()?;
        Ok(util::until_deadline(&self.d, &self.status).map(|left| {
            let left = Duration::try_from(left).unwrap_or_default();
            left.max(Duration::from_millis(100)) + Duration::from_millis(50)
        }))
    }

    /// The `Progressing` condition after a sync that changed `old` into `self.status`.
    fn progress(
        &mut self,
        new: Option<usize>,
        old: &k8s_openapi::api::apps::v1::DeploymentStatus,
        cur: Option<k8s_openapi::api::apps::v1::DeploymentCondition>,
    ) {
        let who = match new {
            Some(i) => format!("ReplicaSet {:?}", meta::name(&self.rss[i])),
            None => format!("Deployment {:?}", meta::name(&self.dv)),
        };
        if util::complete(&self.d, self.replicas, &self.status) {
            let c = util::condition(
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                format!("{who} has successfully progressed."),
            );
            set_condition(&mut self.status, c);
        } else if util::progressing(old, &self.status) {
            let mut c = util::condition(
                "Progressing",
                "True",
                "ReplicaSetUpdated",
                format!("{who} is progressing."),
            );
            if let Some(cur) = cur {
                if cur.status == "True" {
                    c.last_transition_time = cur.last_transition_time;
                }
                util::remove_condition(&mut self.status, "Progressing");
            }
            set_condition(&mut self.status, c);
        } else if util::until_deadline(&self.d, &self.status).is_some_and(|d| d.is_negative()) {
            let c = util::condition(
                "Progressing",
                "False",
                "ProgressDeadlineExceeded",
                format!("{who} has timed out progressing."),
            );
            set_condition(&mut self.status, c);
        }
    }
}
