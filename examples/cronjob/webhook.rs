//! The CronJob webhooks (kubebuilder's `internal/webhook/v1/cronjob_webhook.go`): a
//! defaulting webhook that fills in the concurrency policy, `suspend` and the history
//! limits, and a validating webhook that rejects a schedule that does not parse and a
//! name too long for the Jobs' names. [`setup`] registers both under kubebuilder's paths;
//! their webhook configurations are generated from that registration (`ctrl::cli` installs
//! them in the local demo, `--print-manifests` prints them).

use ctrl::WebhookBuilder;
use ctrl::async_trait;
use ctrl::manager::{BoxError, Manager};
use ctrl::webhook::admission::field::{FieldError, Path};
use ctrl::webhook::admission::{
    CustomDefaulter, CustomValidator, Request, ValidationError, Warnings,
};
use kube::{Resource, ResourceExt};

use super::api::{ConcurrencyPolicy, CronJob};
use super::schedule;

/// The longest CronJob name: a Job is named `<cronjob>-<time>` and the time takes up to
/// 11 characters of a DNS-1035 label's 63.
pub const MAX_NAME_LENGTH: usize = 63 - 11;

/// Registers the defaulting and validating webhooks on `mgr`'s webhook server (the
/// tutorial's `SetupCronJobWebhookWithManager`).
pub fn setup(mgr: &Manager) -> Result<(), BoxError> {
    WebhookBuilder::new(mgr)
        .for_::<CronJob>()
        .with_defaulter(CronJobDefaulter::default())
        .with_validator(CronJobValidator)
        .complete()?;
    Ok(())
}

/// Fills in what a CronJob leaves unset, with these values.
#[derive(Clone, Debug)]
pub struct CronJobDefaulter {
    /// `spec.concurrencyPolicy` (`Allow`).
    pub concurrency_policy: ConcurrencyPolicy,
    /// `spec.suspend` (false).
    pub suspend: bool,
    /// `spec.successfulJobsHistoryLimit` (3).
    pub successful_jobs_history_limit: i32,
    /// `spec.failedJobsHistoryLimit` (1).
    pub failed_jobs_history_limit: i32,
}

impl Default for CronJobDefaulter {
    fn default() -> Self {
        Self {
            concurrency_policy: ConcurrencyPolicy::Allow,
            suspend: false,
            successful_jobs_history_limit: 3,
            failed_jobs_history_limit: 1,
        }
    }
}

#[async_trait]
impl CustomDefaulter<CronJob> for CronJobDefaulter {
    async fn set_defaults(&self, _req: &Request, obj: &mut CronJob) -> Result<(), ValidationError> {
        tracing::info!(name = %obj.name_any(), "defaulting for CronJob");
        let spec = &mut obj.spec;
        spec.concurrency_policy
            .get_or_insert(self.concurrency_policy);
        spec.suspend.get_or_insert(self.suspend);
        (spec.successful_jobs_history_limit).get_or_insert(self.successful_jobs_history_limit);
        (spec.failed_jobs_history_limit).get_or_insert(self.failed_jobs_history_limit);
        Ok(())
    }
}

/// Rejects a CronJob whose schedule does not parse or whose name is longer than
/// [`MAX_NAME_LENGTH`], on create and update.
pub struct CronJobValidator;

/// The CronJob's field errors, as one `Invalid` answer.
pub fn validate(obj: &CronJob) -> Result<Warnings, ValidationError> {
    let mut errors = Vec::new();
    let name = obj.name_any();
    if name.len() > MAX_NAME_LENGTH {
        let path = Path::new("metadata").child("name");
        let detail = format!("must be no more than {MAX_NAME_LENGTH} characters");
        errors.push(FieldError::invalid(&path, name.as_str(), &detail));
    }
    if let Err(e) = schedule::parse(&obj.spec.schedule) {
        let path = Path::new("spec").child("schedule");
        errors.push(FieldError::invalid(&path, obj.spec.schedule.as_str(), &e));
    }
    if errors.is_empty() {
        return Ok(Vec::new());
    }
    let group = CronJob::group(&());
    Err(ValidationError::invalid_fields(
        &group, "CronJob", &name, &errors,
    ))
}

#[async_trait]
impl CustomValidator<CronJob> for CronJobValidator {
    async fn validate_create(
        &self,
        _req: &Request,
        obj: &CronJob,
    ) -> Result<Warnings, ValidationError> {
        validate(obj)
    }

    async fn validate_update(
        &self,
        _req: &Request,
        _old: &CronJob,
        obj: &CronJob,
    ) -> Result<Warnings, ValidationError> {
        validate(obj)
    }
}
