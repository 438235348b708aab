//! The `CronJob` custom resource (`batch.tutorial.kubebuilder.io/v1`), kubebuilder's
//! tutorial type (`api/v1/cronjob_types.go`): the spec holds a schedule and a Job
//! template with the extras that make it usable (a starting deadline, a concurrency
//! policy, suspend, history limits); the status holds what the controller observed
//! (the active Jobs, the last scheduled time) and is rebuilt from the Jobs on every
//! reconcile, never read back as input.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{JobSpec, JobTemplateSpec};
use k8s_openapi::api::core::v1::{Container, ObjectReference, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a `CronJob` asks for: a Job made from `jobTemplate` at each time of `schedule`.
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[kube(
    group = "batch.tutorial.kubebuilder.io",
    version = "v1",
    kind = "CronJob",
    namespaced,
    status = "CronJobStatus",
    doc = "CronJob is the Schema for the cronjobs API.",
    printcolumn(name = "Schedule", type_ = "string", json_path = ".spec.schedule"),
    printcolumn(name = "Suspend", type_ = "boolean", json_path = ".spec.suspend"),
    printcolumn(
        name = "Last Schedule",
        type_ = "date",
        json_path = ".status.lastScheduleTime"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct CronJobSpec {
    /// The schedule in Cron format, see <https://en.wikipedia.org/wiki/Cron> (five
    /// fields or an `@hourly`-style alias; this example also takes a leading seconds
    /// field, `*/2 * * * * *`, which upstream's `cron.ParseStandard` rejects).
    #[schemars(length(min = 0))]
    pub schedule: String,

    /// Optional deadline in seconds for starting the job if it misses scheduled time
    /// for any reason. Missed jobs executions will be counted as failed ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub starting_deadline_seconds: Option<i64>,

    /// Specifies how to treat concurrent executions of a Job: `Allow` (the default),
    /// `Forbid` (skip the next run while the previous one has not finished), `Replace`
    /// (cancel the running Job and start a new one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_policy: Option<ConcurrencyPolicy>,

    /// Suspends subsequent executions; does not apply to executions already started.
    /// Defaults to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,

    /// The Job that will be created when executing a CronJob.
    pub job_template: JobTemplateSpec,

    /// The number of successful finished jobs to retain (unset: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub successful_jobs_history_limit: Option<i32>,

    /// The number of failed finished jobs to retain (unset: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub failed_jobs_history_limit: Option<i32>,
}

/// How concurrent executions of a Job are handled (`+kubebuilder:validation:Enum`).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum ConcurrencyPolicy {
    /// CronJobs may run concurrently.
    #[default]
    Allow,
    /// Concurrent runs are forbidden: the next run is skipped while one is active.
    Forbid,
    /// The running Job is deleted and replaced by the new one.
    Replace,
}

/// What the controller observed.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CronJobStatus {
    /// References to the currently running Jobs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub active: Vec<ObjectReference>,

    /// When a Job was last scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_schedule_time: Option<Time>,
}

/// A CronJob named `name` in `default` running `schedule`, whose Job runs busybox to
/// completion (the tutorial's `config/samples/batch_v1_cronjob.yaml`).
pub fn cron_job(name: &str, schedule: &str) -> CronJob {
    let container = Container {
        name: "hello".into(),
        image: Some("busybox".into()),
        args: Some(
            [
                "/bin/sh",
                "-c",
                "date; echo Hello from the Kubernetes cluster",
            ]
            .map(String::from)
            .into(),
        ),
        ..Default::default()
    };
    let template = PodTemplateSpec {
        metadata: None,
        spec: Some(PodSpec {
            containers: vec![container],
            restart_policy: Some("OnFailure".into()),
            ..Default::default()
        }),
    };
    let spec = CronJobSpec {
        schedule: schedule.into(),
        job_template: JobTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(BTreeMap::from([("app".into(), name.into())])),
                ..Default::default()
            }),
            spec: Some(JobSpec {
                template,
                ..Default::default()
            }),
        },
        ..Default::default()
    };
    let mut obj = CronJob::new(name, spec);
    obj.metadata.namespace = Some("default".into());
    obj
}

/// The sample of `config/samples/`: every minute, a deadline of 60 s, `Allow`.
pub fn sample() -> CronJob {
    let mut obj = cron_job("cronjob-sample", "*/1 * * * *");
    obj.spec.starting_deadline_seconds = Some(60);
    obj.spec.concurrency_policy = Some(ConcurrencyPolicy::Allow);
    obj
}
