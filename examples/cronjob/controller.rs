//! The CronJob controller (kubebuilder's `internal/controller/cronjob_controller.go`):
//! each reconcile lists the CronJob's Jobs through a field index on their controller,
//! rebuilds the status from them (active Jobs, last scheduled time), deletes finished
//! Jobs beyond the history limits, and — unless suspended — runs the most recent missed
//! time of the schedule, as the starting deadline and the concurrency policy allow.
//! It then asks to be called again at the next scheduled time.
//!
//! Time is read from [`ctrl::clock`], the tutorial's `Clock` interface: the system clock
//! when deployed, a fake one on a paused runtime in the tests (`tests/integration/cronjob.rs`).

use std::sync::Arc;
use std::time::Duration;

use ctrl::CancellationToken;
use ctrl::ControllerBuilder;
use ctrl::async_trait;
use ctrl::clock::{self, Timestamp};
use ctrl::controllerutil;
use ctrl::manager::{BoxError, Manager};
use ctrl::prelude::{Client, ListOptions, ObjectWriter, Reader, ignore_already_exists};
use ctrl::rbac;
use ctrl::reconcile::{self, Action, Reconciler};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::DeleteParams;
use kube::{Resource, ResourceExt};

use super::api::{ConcurrencyPolicy, CronJob, CronJobStatus};
use super::schedule;

/// The annotation each Job carries: the scheduled time it runs for (RFC 3339).
pub const SCHEDULED_TIME_ANNOTATION: &str = "batch.tutorial.kubebuilder.io/scheduled-at";

/// The field index on Jobs: the name of the CronJob that controls them.
pub const JOB_OWNER_KEY: &str = ".metadata.controller";

/// Adds the field index and the CronJob controller to `mgr` (the tutorial's
/// `SetupWithManager`).
pub fn setup(mgr: &Manager) -> Result<(), BoxError> {
    mgr.cache().index_field::<Job>(JOB_OWNER_KEY, |job: &Job| {
        let Some(owner) = controllerutil::get_controller_of(job) else {
            return Vec::new();
        };
        let ours = owner.api_version == CronJob::api_version(&()) && owner.kind == "CronJob";
        if ours {
            vec![owner.name.clone()]
        } else {
            Vec::new()
        }
    })?;
    let plural = CronJob::plural(&());
    ControllerBuilder::new(mgr)
        .for_::<CronJob>()
        .owns::<Job>()
        // The tutorial's +kubebuilder:rbac markers, beyond what watching needs.
        .permissions([
            rbac::rule()
                .groups(["batch"])
                .resources(["jobs"])
                .verbs(["create", "delete"]),
            rbac::rule()
                .groups([CronJob::group(&())])
                .resources([format!("{plural}/status")])
                .verbs(["update"]),
        ])
        .named("cronjob")
        .complete(CronJobReconciler {
            client: mgr.client(),
        })?;
    Ok(())
}

/// Reconciles CronJobs.
pub struct CronJobReconciler {
    client: Client,
}

/// A CronJob's Jobs, split as the tutorial splits them.
#[derive(Default)]
struct ChildJobs {
    active: Vec<Arc<Job>>,
    successful: Vec<Arc<Job>>,
    failed: Vec<Arc<Job>>,
    /// The latest scheduled time of any of them.
    most_recent: Option<Timestamp>,
}

#[async_trait]
impl Reconciler<Arc<CronJob>> for CronJobReconciler {
    async fn reconcile(
        &self,
        _ctx: CancellationToken,
        cron_job: Arc<CronJob>,
    ) -> Result<Action, reconcile::Error> {
        // 1-2: the Jobs, and the status rebuilt from them.
        let jobs = self.child_jobs(&cron_job).await?;
        let cron_job = self.update_status(&cron_job, &jobs).await?;
        // 3: old Jobs beyond the history limits (best effort).
        let limits = &cron_job.spec;
        self.clean_up(jobs.failed.clone(), limits.failed_jobs_history_limit)
            .await;
        self.clean_up(
            jobs.successful.clone(),
            limits.successful_jobs_history_limit,
        )
        .await;
        // 4: suspended: nothing runs.
        if cron_job.spec.suspend == Some(true) {
            tracing::debug!("cronjob suspended, skipping");
            return Ok(Action::done());
        }
        // 5-7: run what is due, then wait for the next time.
        self.run_due(&cron_job, &jobs).await
    }
}

impl CronJobReconciler {
    /// The Jobs `cron_job` controls (the field index), split into active, successful and
    /// failed.
    async fn child_jobs(&self, cron_job: &CronJob) -> Result<ChildJobs, reconcile::Error> {
        let opts = ListOptions::new()
            .in_namespace(cron_job.namespace().unwrap_or_default())
            .matching_field(JOB_OWNER_KEY, cron_job.name_any());
        let mut out = ChildJobs::default();
        for job in self.client.list::<Job>(&opts).await? {
            let scheduled = scheduled_time(&job);
            if scheduled > out.most_recent {
                out.most_recent = scheduled;
            }
            match finished(&job) {
                None => out.active.push(job),
                Some("Failed") => out.failed.push(job),
                Some(_) => out.successful.push(job),
            }
        }
        tracing::debug!(
            active = out.active.len(),
            successful = out.successful.len(),
            failed = out.failed.len(),
            "job count"
        );
        Ok(out)
    }

    /// Writes the status the Jobs say (`active`, `lastScheduleTime`) if it changed;
    /// returns the CronJob as written.
    async fn update_status(
        &self,
        cron_job: &Arc<CronJob>,
        jobs: &ChildJobs,
    ) -> Result<Arc<CronJob>, reconcile::Error> {
        let status = CronJobStatus {
            active: jobs.active.iter().map(|j| reference(j)).collect(),
            last_schedule_time: jobs.most_recent.map(Time),
        };
        if cron_job.status.as_ref() == Some(&status) {
            return Ok(cron_job.clone());
        }
        let mut updated = cron_job.as_ref().clone();
        updated.status = Some(status);
        Ok(Arc::new(self.client.status().update(&updated).await?))
    }

    /// Deletes the oldest of `finished` (by start time) beyond `limit`; a failure is
    /// logged, not retried (the tutorial's "best effort").
    async fn clean_up(&self, mut finished: Vec<Arc<Job>>, limit: Option<i32>) {
        let Some(limit) = limit else { return };
        finished.sort_by_key(|j| {
            j.status
                .as_ref()
                .and_then(|s| s.start_time.clone())
                .map(|t| t.0)
        });
        let excess = finished
            .len()
            .saturating_sub(usize::try_from(limit).unwrap_or(0));
        for job in &finished[..excess] {
            let name = job.name_any();
            match self
                .client
                .delete(job.as_ref(), &DeleteParams::background())
                .await
            {
                Ok(()) => tracing::info!(job = %name, "deleted old finished job"),
                Err(e) => {
                    tracing::warn!(job = %name, error = %e, "unable to delete old finished job")
                }
            }
        }
    }

    /// Runs the most recent missed time, if the deadline and the concurrency policy
    /// allow; requeues at the next time.
    async fn run_due(
        &self,
        cron_job: &CronJob,
        jobs: &ChildJobs,
    ) -> Result<Action, reconcile::Error> {
        let now = clock::now();
        let since = (cron_job
            .status
            .as_ref()
            .and_then(|s| s.last_schedule_time.clone()))
        .or_else(|| cron_job.metadata.creation_timestamp.clone())
        .map_or(now, |t| t.0);
        let deadline = cron_job.spec.starting_deadline_seconds;
        let runs = match schedule::parse(&cron_job.spec.schedule)
            .and_then(|cron| schedule::runs(&cron, since, deadline, now))
        {
            Ok(runs) => runs,
            Err(error) => {
                // Not retried: only a change to the schedule fixes it.
                tracing::error!(%error, "unable to figure out CronJob schedule");
                return Ok(Action::done());
            }
        };
        let scheduled = Action::requeue_after(until(runs.next));
        let Some(missed) = runs.missed else {
            tracing::debug!(next = %runs.next, "no upcoming scheduled times, sleeping until next");
            return Ok(scheduled);
        };
        let too_late = deadline.is_some_and(|d| now.duration_since(missed).as_secs() > d);
        if too_late {
            tracing::debug!(%missed, "missed starting deadline for last run, sleeping till next");
            return Ok(scheduled);
        }
        match cron_job.spec.concurrency_policy.unwrap_or_default() {
            ConcurrencyPolicy::Forbid if !jobs.active.is_empty() => {
                tracing::debug!(
                    active = jobs.active.len(),
                    "concurrency policy blocks concurrent runs, skipping"
                );
                return Ok(scheduled);
            }
            ConcurrencyPolicy::Replace => self.delete_active(jobs).await?,
            _ => {}
        }
        let job = job_for(cron_job, missed)?;
        ignore_already_exists(self.client.create(&job).await)?;
        tracing::info!(job = %job.name_any(), scheduled = %missed, "created Job for CronJob run");
        Ok(scheduled)
    }

    /// Deletes the active Jobs (`Replace`); one already gone is fine.
    async fn delete_active(&self, jobs: &ChildJobs) -> Result<(), reconcile::Error> {
        for job in &jobs.active {
            let deleted = self
                .client
                .delete(job.as_ref(), &DeleteParams::background())
                .await;
            ctrl::prelude::ignore_not_found(deleted)?;
            tracing::info!(job = %job.name_any(), "deleted active job to replace it");
        }
        Ok(())
    }
}

/// `Some("Complete")` or `Some("Failed")` once a Job has finished (that condition is
/// `True`), `None` while it runs.
fn finished(job: &Job) -> Option<&str> {
    let conditions = job.status.as_ref()?.conditions.as_deref()?;
    conditions
        .iter()
        .find(|c| matches!(c.type_.as_str(), "Complete" | "Failed") && c.status == "True")
        .map(|c| c.type_.as_str())
}

/// The scheduled time a Job was made for ([`SCHEDULED_TIME_ANNOTATION`]).
fn scheduled_time(job: &Job) -> Option<Timestamp> {
    let raw = job.annotations().get(SCHEDULED_TIME_ANNOTATION)?;
    match raw.parse() {
        Ok(t) => Some(t),
        Err(error) => {
            tracing::warn!(job = %job.name_any(), %error, "unable to parse schedule time for child job");
            None
        }
    }
}

/// A reference to `job` for `status.active` (client-go's `reference.GetReference`).
fn reference(job: &Job) -> ObjectReference {
    ObjectReference {
        api_version: Some(Job::api_version(&()).into()),
        kind: Some(Job::kind(&()).into()),
        name: job.metadata.name.clone(),
        namespace: job.metadata.namespace.clone(),
        uid: job.metadata.uid.clone(),
        resource_version: job.metadata.resource_version.clone(),
        field_path: None,
    }
}

/// How long until `t` (zero if it passed).
fn until(t: Timestamp) -> Duration {
    Duration::try_from(t.duration_since(clock::now())).unwrap_or_default()
}

/// The Job of `cron_job` for scheduled time `at`: its template's spec, labels and
/// annotations, the scheduled time, a name that is the same for the same time (so a
/// time is never run twice), and `cron_job` as its controller.
fn job_for(cron_job: &CronJob, at: Timestamp) -> Result<Job, reconcile::Error> {
    let template = &cron_job.spec.job_template;
    let template_meta = template.metadata.clone().unwrap_or_default();
    let mut annotations = template_meta.annotations.unwrap_or_default();
    annotations.insert(SCHEDULED_TIME_ANNOTATION.into(), at.to_string());
    let mut job = Job {
        metadata: ObjectMeta {
            name: Some(format!("{}-{}", cron_job.name_any(), at.as_second())),
            namespace: cron_job.namespace(),
            labels: template_meta.labels,
            annotations: Some(annotations),
            ..Default::default()
        },
        spec: template.spec.clone(),
        status: None,
    };
    controllerutil::set_controller_reference(cron_job, &mut job).map_err(reconcile::Error::new)?;
    Ok(job)
}
