//! The CronJob controller (upstream's `pkg/controller/cronjob/cronjob_controllerv2.go` and
//! `utils.go`): at each time of `spec.schedule` (standard five-field cron with the `@hourly`
//! style aliases, parsed by the `croner` crate; in `spec.timeZone` when the system knows it,
//! else UTC) a Job is made from `jobTemplate`, named `<cronjob>-<scheduled time in unix
//! minutes>`, annotated `batch.kubernetes.io/cronjob-scheduled-timestamp` and controlled by
//! the CronJob. Only the most recent missed time is run (as upstream), and not if it is
//! more than `startingDeadlineSeconds` late. `concurrencyPolicy`: `Allow` (the default),
//! `Forbid` (skip while a Job is active), `Replace` (delete the active Jobs first).
//! `suspend` stops new Jobs. Status: `active` (references to the running Jobs),
//! `lastScheduleTime`, `lastSuccessfulTime`. Finished Jobs beyond
//! `successfulJobsHistoryLimit` (3) and `failedJobsHistoryLimit` (1) are deleted, oldest
//! first.
//!
//! An extension for tests: a six-field schedule's first field is seconds (`*/2 * * * * *`),
//! which upstream's validation rejects; its Jobs are named by unix seconds instead of minutes.
//! No Events; no warning for too many missed times.

use std::time::Duration;

use croner::Cron;
use croner::parser::CronParser;
use k8s_openapi::jiff::{SignedDuration, Timestamp, tz::TimeZone};
use serde_json::{Value, json};

use super::client::{self, CRONJOBS, Client, JOBS, Key, parse_time};
use super::runner::Reconciler;
use crate::api::meta;
use crate::api::status::ApiError;

/// The CronJob controller.
pub(crate) struct CronJobs;

/// The annotation a scheduled Job carries.
const SCHEDULED_AT: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

impl Reconciler for CronJobs {
    fn name(&self) -> &'static str {
        "cronjob"
    }

    fn watches(&self) -> Vec<client::Res> {
        vec![CRONJOBS, JOBS]
    }

    fn reconcile(&self, c: &Client<'_>, key: &Key) -> Option<Duration> {
        let cj = c.get_value(&CRONJOBS, &key.0, &key.1)?;
        if meta::meta_str(&cj, "deletionTimestamp").is_some() {
            return None;
        }
        match sync(c, &cj) {
            Ok(next) => next,
            Err(e) => {
                tracing::debug!(namespace = %key.0, cronjob = %key.1, error = %e.message, "cronjob sync failed; retrying");
                Some(Duration::from_millis(200))
            }
        }
    }
}

/// The schedule in its time zone; `None` if it does not parse.
fn schedule(cj: &Value) -> Option<(Cron, TimeZone)> {
    let text = cj.pointer("/spec/schedule").and_then(Value::as_str)?;
    let cron = CronParser::builder().build().parse(text).ok()?;
    let tz = (cj.pointer("/spec/timeZone").and_then(Value::as_str))
        .and_then(|z| TimeZone::get(z).ok())
        .unwrap_or(TimeZone::UTC);
    Some((cron, tz))
}

/// One sync: status from the Jobs, a Job if one is due, the history trimmed; when the
/// next time is.
fn sync(c: &Client<'_>, cj: &Value) -> Result<Option<Duration>, ApiError> {
    let jobs = owned_jobs(c, cj);
    let mut status = cj.get("status").cloned().unwrap_or_else(|| json!({}));
    track(&jobs, &mut status);
    let Some((cron, tz)) = schedule(cj) else {
        write_status(c, cj, status)?;
        return Ok(None);
    };
    let now = ctrl_clock::now();
    let since = (status.get("lastScheduleTime").and_then(Value::as_str))
        .or_else(|| meta::meta_str(cj, "creationTimestamp"))
        .and_then(parse_time)
        .unwrap_or(now);
    let suspended = cj.pointer("/spec/suspend") == Some(&json!(true));
    if !suspended && let Some(at) = most_recent(&cron, &tz, since, now) {
        run(c, cj, &jobs, &mut status, at)?;
    }
    write_status(c, cj, status)?;
    trim_history(c, cj, &owned_jobs(c, cj))?;
    let next = cron.find_next_occurrence(&now.to_zoned(tz), false).ok();
    Ok(next.map(|n| {
        let left = n.timestamp().duration_since(ctrl_clock::now());
        Duration::try_from(left).unwrap_or_default() + Duration::from_millis(100)
    }))
}

/// The latest schedule time after `since` and not after `now` (upstream's
/// `mostRecentScheduleTime`).
fn most_recent(cron: &Cron, tz: &TimeZone, since: Timestamp, now: Timestamp) -> Option<Timestamp> {
    let start = since.to_zoned(tz.clone());
    let mut last = None;
    for t in cron.clone().iter_after(start).take(100_000) {
        if t.timestamp() > now {
            break;
        }
        last = Some(t.timestamp());
    }
    last
}

/// Makes the Job of time `at`, as `concurrencyPolicy` and `startingDeadlineSeconds` allow.
fn run(
    c: &Client<'_>,
    cj: &Value,
    jobs: &[Value],
    status: &mut Value,
    at: Timestamp,
) -> Result<(), ApiError> {
    let late = ctrl_clock::now().duration_since(at);
    let deadline = cj
        .pointer("/spec/startingDeadlineSeconds")
        .and_then(Value::as_i64);
    if deadline.is_some_and(|d| late > SignedDuration::from_secs(d)) {
        return Ok(());
    }
    let active: Vec<&Value> = jobs.iter().filter(|j| !finished(j)).collect();
    match cj
        .pointer("/spec/concurrencyPolicy")
        .and_then(Value::as_str)
    {
        Some("Forbid") if !active.is_empty() => return Ok(()),
        Some("Replace") => {
            for j in &active {
                c.delete(&JOBS, j, Some("Background"))?;
            }
        }
        _ => {}
    }
    let job = job_for(cj, at);
    let created = match c.create(&JOBS, meta::namespace(cj), job) {
        Ok(j) => Some(j),
        Err(e) if e.code == 409 => None,
        Err(e) => return Err(e),
    };
    if let Some(j) = created {
        let refs = status["active"].as_array().cloned().unwrap_or_default();
        status["active"] = json!(refs.into_iter().chain([reference(&j)]).collect::<Vec<_>>());
    }
    status["lastScheduleTime"] = json!(fmt(at));
    Ok(())
}

/// The Job of the CronJob for time `at` (upstream's `getJobFromTemplate2`).
fn job_for(cj: &Value, at: Timestamp) -> Value {
    let t = cj.pointer("/spec/jobTemplate").cloned().unwrap_or_default();
    let fields = (cj.pointer("/spec/schedule").and_then(Value::as_str))
        .map_or(5, |s| s.split_whitespace().count());
    let stamp = if fields == 6 {
        at.as_second()
    } else {
        at.as_second().div_euclid(60)
    };
    let name = format!("{}-{stamp}", meta::name(cj));
    let mut m =
        json!({"name": name, "ownerReferences": [client::new_controller_ref(cj, &CRONJOBS)]});
    for f in ["labels", "annotations"] {
        if let Some(v) = t.pointer(&format!("/metadata/{f}")) {
            m[f] = v.clone();
        }
    }
    if !m["annotations"].is_object() {
        m["annotations"] = json!({});
    }
    m["annotations"][SCHEDULED_AT] = json!(fmt(at));
    json!({"metadata": m, "spec": t.get("spec").cloned().unwrap_or_else(|| json!({}))})
}

fn fmt(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// An `ObjectReference` to a Job, as `status.active` lists them.
fn reference(j: &Value) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "name": meta::name(j), "namespace": meta::namespace(j),
        "uid": meta::meta_str(j, "uid"), "resourceVersion": meta::meta_str(j, "resourceVersion")})
}

/// The Jobs the CronJob controls.
fn owned_jobs(c: &Client<'_>, cj: &Value) -> Vec<Value> {
    let uid = meta::meta_str(cj, "uid").unwrap_or("");
    (c.list_values(&JOBS, Some(meta::namespace(cj))).into_iter())
        .filter(|j| client::controller_ref_value(j).is_some_and(|r| r["uid"] == uid))
        .collect()
}

/// A Job's terminal condition type (`Complete` or `Failed`), if it has one.
fn finished_as(job: &Value) -> Option<&str> {
    let cs = job
        .pointer("/status/conditions")
        .and_then(Value::as_array)?;
    cs.iter()
        .find(|c| {
            matches!(c["type"].as_str(), Some("Complete" | "Failed")) && c["status"] == "True"
        })
        .and_then(|c| c["type"].as_str())
}

fn finished(job: &Value) -> bool {
    finished_as(job).is_some()
}

/// `active` lists the running Jobs; `lastSuccessfulTime` follows the latest completion.
fn track(jobs: &[Value], status: &mut Value) {
    let active: Vec<Value> = jobs
        .iter()
        .filter(|j| !finished(j))
        .map(reference)
        .collect();
    if active.is_empty() {
        if let Some(s) = status.as_object_mut() {
            s.remove("active");
        }
    } else {
        status["active"] = json!(active);
    }
    let latest = (jobs.iter().filter(|j| finished_as(j) == Some("Complete")))
        .filter_map(|j| j.pointer("/status/completionTime").and_then(Value::as_str))
        .max();
    let known = status.get("lastSuccessfulTime").and_then(Value::as_str);
    if let Some(t) = latest.filter(|t| known.is_none_or(|k| *t > k)) {
        status["lastSuccessfulTime"] = json!(t);
    }
}

fn write_status(c: &Client<'_>, cj: &Value, status: Value) -> Result<(), ApiError> {
    if cj.get("status") == Some(&status) {
        return Ok(());
    }
    c.update(&CRONJOBS, cj, Some("status"), |v| v["status"] = status)
        .map(|_| ())
}

/// Deletes finished Jobs beyond the history limits, oldest first.
fn trim_history(c: &Client<'_>, cj: &Value, jobs: &[Value]) -> Result<(), ApiError> {
    for (kind, field, default) in [
        ("Complete", "successfulJobsHistoryLimit", 3),
        ("Failed", "failedJobsHistoryLimit", 1),
    ] {
        let limit = cj
            .pointer(&format!("/spec/{field}"))
            .and_then(Value::as_i64)
            .unwrap_or(default);
        let mut done: Vec<&Value> = jobs
            .iter()
            .filter(|j| finished_as(j) == Some(kind))
            .collect();
        let extra = done
            .len()
            .saturating_sub(usize::try_from(limit).unwrap_or(0));
        done.sort_by_key(|j| {
            meta::meta_str(j, "creationTimestamp")
                .unwrap_or("")
                .to_string()
        });
        for j in done.into_iter().take(extra) {
            c.delete(&JOBS, j, Some("Background"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_recent_missed_time_is_the_one_run() {
        let cron = CronParser::builder()
            .build()
            .parse("*/5 * * * *")
            .expect("parse");
        let since: Timestamp = "2026-01-01T00:01:00Z".parse().expect("time");
        let now: Timestamp = "2026-01-01T00:17:00Z".parse().expect("time");
        let at = most_recent(&cron, &TimeZone::UTC, since, now).expect("due");
        assert_eq!(fmt(at), "2026-01-01T00:15:00Z");
        assert_eq!(most_recent(&cron, &TimeZone::UTC, now, now), None);
        let job = job_for(
            &json!({"metadata": {"name": "c", "uid": "u"}, "spec": {}}),
            at,
        );
        assert_eq!(meta::name(&job), format!("c-{}", at.as_second() / 60));
    }
}
