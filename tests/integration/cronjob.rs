//! The CronJob example (kubebuilder's tutorial) on ctrl-envtest, its Job controller and
//! simulated kubelet. The schedule tests run under the deterministic simulation
//! (`ctrl_envtest::sim`): one thread, a paused tokio clock, and `ctrl::clock` following it,
//! so "a minute later" is `sim.advance(60 s)` and costs no wall time. The simulation starts
//! at 2026-01-01T00:00:00Z; a `*/1 * * * *` CronJob runs at 00:01:00 (unix 1767225660),
//! 00:02:00 (…720), and so on. The webhook test runs the manager's webhook server for
//! real (TLS on loopback), called by the API server.

use crate::examples_cronjob as operator;

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use ctrl::cli::envtest::LocalWebhooks;
use ctrl::manager::Options;
use ctrl_envtest::Environment;
use ctrl_envtest::sim::{self, Replica, Simulation, SimulationBuilder};
use k8s_openapi::api::batch::v1::Job;
use kube::CustomResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use operator::api::{ConcurrencyPolicy, CronJob};
use operator::controller::SCHEDULED_TIME_ANNOTATION;

/// The simulation's start, in unix seconds (2026-01-01T00:00:00Z).
const START: i64 = 1_767_225_600;

/// The operator's manager (no webhooks: the simulation's API server calls none), as
/// `main` wires it, until the simulation stops it.
async fn replica(r: Replica) {
    let opts = Options {
        metrics_bind_address: "0".into(),
        controller: ctrl::config::Controller {
            // The tests of this file share one process.
            skip_name_validation: Some(true),
            ..Default::default()
        },
        ..Default::default()
    };
    match operator::manager_with(r.client.clone(), opts, false) {
        Ok(mgr) => {
            if let Err(e) = mgr.start(r.shutdown.clone()).await {
                r.note(format_args!("stopped: {e}"));
            }
        }
        Err(e) => r.note(format_args!("manager: {e}")),
    }
}

/// The API server with the CRD and the simulated kubelet (Jobs make Pods, Pods run to
/// completion after their `envtest.ctrl/run-seconds`).
fn simulation(seed: u64) -> SimulationBuilder {
    Simulation::builder(seed).environment(|env| env.crd(CronJob::crd()).simulate_pods(true))
}

/// Runs `scenario` with one replica for a few seeds (each seed orders requests and watch
/// events its own way).
fn check<S, Fut>(scenario: S)
where
    S: Fn(Simulation) -> Fut + Sync,
    Fut: Future<Output = Result<(), String>>,
{
    let run = |sim: Simulation| {
        sim.add_replica("r1", replica);
        scenario(sim)
    };
    if let Err(failure) = sim::check(0..3, simulation, run) {
        panic!("{failure}");
    }
}

/// A CronJob `name` every minute whose Pods run `run_seconds` and exit with `exit_code`.
fn every_minute(name: &str, run_seconds: u32, exit_code: u8) -> CronJob {
    let mut cj = operator::api::cron_job(name, "*/1 * * * *");
    let annotations = BTreeMap::from([
        (
            "envtest.ctrl/run-seconds".to_string(),
            run_seconds.to_string(),
        ),
        ("envtest.ctrl/exit-code".to_string(), exit_code.to_string()),
    ]);
    let job = cj.spec.job_template.spec.as_mut().expect("job spec");
    job.backoff_limit = Some(0);
    job.template.metadata.get_or_insert_default().annotations = Some(annotations);
    let pod = job.template.spec.as_mut().expect("pod spec");
    pod.restart_policy = Some("Never".into());
    cj
}

/// Creates `cj` through the simulation's client.
async fn create(sim: &Simulation, cj: &CronJob) -> Result<(), String> {
    let api: Api<CronJob> = Api::default_namespaced(sim.client());
    api.create(&PostParams::default(), cj)
        .await
        .map_err(|e| format!("create: {e}"))?;
    Ok(())
}

/// Merge-patches CronJob `name`'s spec with `spec`.
async fn patch_spec(sim: &Simulation, name: &str, spec: serde_json::Value) -> Result<(), String> {
    let api: Api<CronJob> = Api::default_namespaced(sim.client());
    let patch = Patch::Merge(serde_json::json!({ "spec": spec }));
    api.patch(name, &PatchParams::default(), &patch)
        .await
        .map_err(|e| format!("patch: {e}"))?;
    Ok(())
}

/// Lets virtual time run until `secs` after the start.
async fn advance_to(sim: &Simulation, secs: f64) -> Result<(), String> {
    let at = Duration::from_secs_f64(secs);
    sim.advance(at.saturating_sub(sim.elapsed())).await
}

/// The Jobs of CronJob `name` that are not being deleted, sorted by name.
fn jobs_of(sim: &Simulation, name: &str) -> Vec<Job> {
    let mut jobs: Vec<Job> = (sim.env().stored::<Job>().into_iter())
        .filter(|j| j.metadata.deletion_timestamp.is_none())
        .filter(|j| ctrl::controllerutil::get_controller_of(j).is_some_and(|o| o.name == name))
        .collect();
    jobs.sort_by_key(|j| j.metadata.name.clone());
    jobs
}

/// The names of [`jobs_of`].
fn job_names(sim: &Simulation, name: &str) -> Vec<String> {
    jobs_of(sim, name)
        .into_iter()
        .filter_map(|j| j.metadata.name)
        .collect()
}

/// The name of `cronjob`'s Job for the `minute`th minute after the start.
fn job_at(cronjob: &str, minute: i64) -> String {
    format!("{cronjob}-{}", START + 60 * minute)
}

/// The CronJob `name` as stored.
fn stored(sim: &Simulation, name: &str) -> Result<CronJob, String> {
    (sim.env().stored::<CronJob>().into_iter())
        .find(|c| c.metadata.name.as_deref() == Some(name))
        .ok_or_else(|| format!("no CronJob {name}"))
}

/// Fails with `what` and the state when `ok` is false.
fn expect(ok: bool, what: &str, state: impl std::fmt::Debug) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("{what}: {state:?}"))
    }
}

#[test]
fn a_schedule_fires_a_job_at_the_scheduled_time() {
    check(|sim| async move {
        create(&sim, &every_minute("tick", 5, 0)).await?;
        advance_to(&sim, 59.5).await?;
        expect(
            job_names(&sim, "tick").is_empty(),
            "a Job before 00:01:00",
            job_names(&sim, "tick"),
        )?;
        advance_to(&sim, 61.0).await?;
        let jobs = jobs_of(&sim, "tick");
        let names = job_names(&sim, "tick");
        expect(names == [job_at("tick", 1)], "one Job for 00:01:00", &names)?;
        let job = &jobs[0];
        let at = job
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(SCHEDULED_TIME_ANNOTATION));
        expect(
            at.map(String::as_str) == Some("2026-01-01T00:01:00Z"),
            "the scheduled-at annotation",
            at,
        )?;
        let created = job
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string());
        expect(
            created.as_deref() == Some("2026-01-01T00:01:00Z"),
            "created at 00:01:00",
            created,
        )?;
        // The Job runs 5 s; then the status has no active Job and the last time.
        advance_to(&sim, 70.0).await?;
        let status = stored(&sim, "tick")?.status.unwrap_or_default();
        let last = status.last_schedule_time.as_ref().map(|t| t.0.to_string());
        expect(
            status.active.is_empty(),
            "no active Job after it completed",
            &status,
        )?;
        expect(
            last.as_deref() == Some("2026-01-01T00:01:00Z"),
            "lastScheduleTime",
            &status,
        )?;
        advance_to(&sim, 121.0).await?;
        let names = job_names(&sim, "tick");
        expect(
            names == [job_at("tick", 1), job_at("tick", 2)],
            "a second Job at 00:02:00",
            names,
        )
    });
}

#[test]
fn forbid_skips_a_run_while_a_job_is_active() {
    check(|sim| async move {
        let mut cj = every_minute("forbid", 90, 0);
        cj.spec.concurrency_policy = Some(ConcurrencyPolicy::Forbid);
        cj.spec.starting_deadline_seconds = Some(10);
        create(&sim, &cj).await?;
        advance_to(&sim, 130.0).await?;
        // 00:02:00 came while the 00:01:00 Job ran (90 s): skipped.
        let names = job_names(&sim, "forbid");
        expect(
            names == [job_at("forbid", 1)],
            "only the 00:01:00 Job",
            &names,
        )?;
        let status = stored(&sim, "forbid")?.status.unwrap_or_default();
        expect(
            status.active.len() == 1,
            "one active Job in the status",
            &status,
        )?;
        // It finished at about 00:02:31, past 00:02:00's deadline: the next run is 00:03:00.
        advance_to(&sim, 181.0).await?;
        let names = job_names(&sim, "forbid");
        expect(
            names == [job_at("forbid", 1), job_at("forbid", 3)],
            "00:02:00 never ran",
            names,
        )
    });
}

#[test]
fn replace_deletes_the_active_job() {
    check(|sim| async move {
        let mut cj = every_minute("replace", 600, 0);
        cj.spec.concurrency_policy = Some(ConcurrencyPolicy::Replace);
        create(&sim, &cj).await?;
        advance_to(&sim, 61.0).await?;
        let names = job_names(&sim, "replace");
        expect(names == [job_at("replace", 1)], "the 00:01:00 Job", &names)?;
        advance_to(&sim, 121.0).await?;
        let names = job_names(&sim, "replace");
        expect(
            names == [job_at("replace", 2)],
            "00:01:00's Job replaced by 00:02:00's",
            names,
        )
    });
}

#[test]
fn history_limits_prune_the_oldest_finished_jobs() {
    check(|sim| async move {
        let mut ok = every_minute("ok", 1, 0);
        ok.spec.successful_jobs_history_limit = Some(2);
        let mut bad = every_minute("bad", 1, 1);
        bad.spec.failed_jobs_history_limit = Some(1);
        create(&sim, &ok).await?;
        create(&sim, &bad).await?;
        advance_to(&sim, 330.0).await?;
        // Five runs each by 00:05:30, each finished a few seconds after it started.
        let names = job_names(&sim, "ok");
        expect(
            names == [job_at("ok", 4), job_at("ok", 5)],
            "the two latest successful Jobs",
            names,
        )?;
        let names = job_names(&sim, "bad");
        expect(names == [job_at("bad", 5)], "the latest failed Job", names)
    });
}

#[test]
fn suspend_stops_new_runs() {
    check(|sim| async move {
        create(&sim, &every_minute("pause", 1, 0)).await?;
        advance_to(&sim, 70.0).await?;
        patch_spec(&sim, "pause", serde_json::json!({ "suspend": true })).await?;
        advance_to(&sim, 250.0).await?;
        let names = job_names(&sim, "pause");
        expect(
            names == [job_at("pause", 1)],
            "no run while suspended",
            &names,
        )?;
        // Resumed: only the most recent missed time runs (00:04:00), at once.
        patch_spec(&sim, "pause", serde_json::json!({ "suspend": false })).await?;
        advance_to(&sim, 252.0).await?;
        let names = job_names(&sim, "pause");
        expect(
            names == [job_at("pause", 1), job_at("pause", 4)],
            "the latest missed run",
            names,
        )
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhooks_default_and_reject_a_bad_schedule() {
    let env = Environment::builder()
        .crd(CronJob::crd())
        .start()
        .await
        .expect("envtest");
    let webhooks = LocalWebhooks::new(Default::default()).expect("webhook server");
    let opts = Options {
        metrics_bind_address: "0".into(),
        webhook_server: Some(webhooks.server.clone()),
        controller: ctrl::config::Controller {
            skip_name_validation: Some(true),
            ..Default::default()
        },
        ..Default::default()
    };
    let mgr = operator::manager_with(env.client(), opts, true).expect("manager");
    webhooks
        .install(env.client(), &mgr, "cronjob")
        .await
        .expect("webhooks");
    let stop = ctrl::CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    mgr.elected().await;
    let api: Api<CronJob> = Api::default_namespaced(env.client());
    let pp = PostParams::default();

    let created = api
        .create(&pp, &operator::api::cron_job("defaults", "@hourly"))
        .await
        .expect("create");
    let spec = &created.spec;
    assert_eq!(spec.concurrency_policy, Some(ConcurrencyPolicy::Allow));
    assert_eq!(spec.suspend, Some(false));
    assert_eq!(
        (
            spec.successful_jobs_history_limit,
            spec.failed_jobs_history_limit
        ),
        (Some(3), Some(1))
    );

    let rejected = |r: Result<CronJob, kube::Error>| match r {
        Err(kube::Error::Api(s)) => (s.code, s.message),
        other => panic!("expected a rejection, got {other:?}"),
    };
    let (code, message) = rejected(
        api.create(&pp, &operator::api::cron_job("bad", "every day"))
            .await,
    );
    assert_eq!(code, 422, "{message}");
    assert!(
        message.contains("spec.schedule") && message.contains("every day"),
        "{message}"
    );
    let long = "x".repeat(operator::webhook::MAX_NAME_LENGTH + 1);
    let (code, message) = rejected(
        api.create(&pp, &operator::api::cron_job(&long, "*/5 * * * *"))
            .await,
    );
    assert_eq!(code, 422, "{message}");
    assert!(message.contains("metadata.name"), "{message}");
    // An update is validated too.
    let bad = PatchParams::default();
    let patch = Patch::Merge(serde_json::json!({ "spec": { "schedule": "61 * * * *" } }));
    match api.patch("defaults", &bad, &patch).await {
        Err(kube::Error::Api(s)) => assert!(s.message.contains("spec.schedule"), "{}", s.message),
        other => panic!("expected a rejection, got {other:?}"),
    }
    assert_eq!(
        api.get("defaults").await.expect("get").spec.schedule,
        "@hourly"
    );

    stop.cancel();
    running
        .await
        .expect("manager task")
        .expect("manager stopped cleanly");
}
