//! The [`CertRotator`]'s run (cert-controller's `CertRotator.Start` and its `ReconcileWH`
//! controller in one loop): a first sync that must succeed (retried with upstream's
//! back-off: 10 ms doubling, ten tries), then a sync on every change of the Secret or a
//! target (each watched by name, kube's watcher on the runtime's
//! [`WatchBackoff`](crate::cache::WatchBackoff)), on every `rotation_check_frequency` tick,
//! on a forced rotation, and after a failed sync (1 s doubling to 5 min).
//!
//! One sync: read the Secret; if its CA or serving certificate is bad or near its end (or a
//! rotation is forced), write new material with the Secret's resourceVersion (a conflict
//! means another replica wrote: read again); inject the bundle into every target; *then*
//! write the files that differ (key, certificate, CA), so that a certificate is served only
//! once the API server trusts its CA.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::{BoxStream, SelectAll};
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use tokio_util::sync::CancellationToken;

use super::inject::{self, Outcome};
use super::keypair::{Artifacts, Policy, Rotation};
use super::{CertRotator, Files, Inner};
use crate::cache::WatchBackoff;
use crate::error::BoxError;
use crate::manager::{Group, Runnable};
use crate::webhook::certs::{CA_CERT_NAME, write_atomic};

/// How many times a Secret write that conflicts is tried again on a fresh read.
const CONFLICT_RETRIES: usize = 5;

#[async_trait]
impl Runnable for CertRotator {
    async fn start(&self, ctx: CancellationToken) -> Result<(), BoxError> {
        let inner = &self.inner;
        tracing::info!(secret = %inner.secret_ref(), "starting cert rotator");
        if let Err(error) = bootstrap(inner, &ctx).await {
            inner.files.send_replace(Files::Failed);
            return Err(error);
        }
        run(inner, ctx).await;
        tracing::info!("stopping cert rotator");
        Ok(())
    }
    fn need_leader_election(&self) -> bool {
        false
    }
    fn group(&self) -> Group {
        Group::HttpServers
    }
    async fn wait_ready(&self, ctx: CancellationToken) -> bool {
        let mut rx = self.inner.files.subscribe();
        tokio::select! {
            r = rx.wait_for(|f| *f != Files::Pending) => r.is_ok_and(|f| *f == Files::Written),
            _ = ctx.cancelled() => false,
        }
    }
    fn name(&self) -> String {
        "cert rotator".into()
    }
}

/// The first sync, retried as upstream's `refreshCertIfNeeded` is on start.
async fn bootstrap(inner: &Inner, ctx: &CancellationToken) -> Result<(), BoxError> {
    let mut delay = Duration::from_millis(10);
    for attempt in 1..=10 {
        match inner.sync(Rotation::None).await {
            Ok(()) => return Ok(()),
            Err(error) if attempt == 10 => return Err(error),
            Err(error) => {
                tracing::info!(%error, attempt, "could not refresh the certificates on start")
            }
        }
        tokio::select! {
            _ = ctx.cancelled() => return Ok(()),
            _ = tokio::time::sleep(delay) => {}
        }
        delay *= 2;
    }
    Ok(())
}

async fn run(inner: &Inner, ctx: CancellationToken) {
    let mut changes = inner.watches();
    let mut tick = tokio::time::interval(inner.opts.rotation_check_frequency);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    let mut retry: Option<Duration> = None;
    loop {
        let wait = retry.unwrap_or(Duration::MAX);
        tokio::select! {
            _ = ctx.cancelled() => return,
            _ = tick.tick() => {}
            _ = inner.force.notified() => {}
            Some(()) = changes.next() => {
                // Coalesce what arrived together into one sync.
                while let Some(Some(())) = changes.next().now_or_never() {}
            }
            _ = tokio::time::sleep(wait) => {}
        }
        let forced = std::mem::replace(&mut *inner.forced.lock(), Rotation::None);
        retry = match inner.sync(forced).await {
            Ok(()) => None,
            Err(error) => {
                let next = retry.map_or(Duration::from_secs(1), |d| {
                    (d * 2).min(Duration::from_secs(300))
                });
                tracing::error!(%error, retry_in = ?next, "cert rotator sync failed");
                let mut f = inner.forced.lock();
                *f = (*f).max(forced);
                Some(next)
            }
        };
    }
}

impl Inner {
    fn secret_ref(&self) -> String {
        format!("{}/{}", self.opts.secret_namespace, self.opts.secret_name)
    }

    fn policy(&self) -> Policy<'_> {
        let o = &self.opts;
        Policy {
            ca_name: &o.ca_name,
            ca_organization: &o.ca_organization,
            hosts: &self.hosts,
            ca_validity: o.ca_validity,
            server_validity: o.server_validity,
            lookahead: o.lookahead,
        }
    }

    /// One event per change of the Secret or a target, from watches by name.
    fn watches(&self) -> SelectAll<BoxStream<'static, ()>> {
        let by_name =
            |name: &str| watcher::Config::default().fields(&format!("metadata.name={name}"));
        let secrets: Api<Secret> =
            Api::namespaced(self.client.clone(), &self.opts.secret_namespace);
        let mut all: Vec<BoxStream<'static, ()>> =
            vec![events(watcher(secrets, by_name(&self.opts.secret_name)))];
        for t in &self.opts.targets {
            let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &t.api_resource());
            all.push(events(watcher(api, by_name(&t.name))));
        }
        futures::stream::select_all(all)
    }

    /// Brings the Secret, the targets and the files in line (see the module doc).
    pub(super) async fn sync(&self, forced: Rotation) -> Result<(), BoxError> {
        let material = self.refresh(forced).await?;
        let injected = self.inject(&material.ca_bundle).await;
        self.write_files(&material)?;
        self.files.send_replace(Files::Written);
        injected
    }

    /// The Secret's material, renewed first if it needs it or `forced` says so.
    async fn refresh(&self, forced: Rotation) -> Result<Artifacts, BoxError> {
        let o = &self.opts;
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &o.secret_namespace);
        let mut attempt = 0;
        loop {
            let mut secret = api.get(&o.secret_name).await.map_err(|e| {
                format!("reading the certificate Secret {}: {e}", self.secret_ref())
            })?;
            let mut data = secret.data.take().unwrap_or_default();
            let current = Artifacts::from_data(&data, &o.cert_name, &o.key_name);
            let need = current
                .needs(&self.policy(), crate::clock::system_now())
                .max(forced);
            if need == Rotation::None {
                return Ok(current);
            }
            tracing::info!(rotation = ?need, secret = %self.secret_ref(), "refreshing certificates");
            let next = current.rotated(need, &self.policy(), crate::clock::system_now())?;
            next.write_into(&mut data, &o.cert_name, &o.key_name);
            secret.data = Some(data);
            match api
                .replace(&o.secret_name, &PostParams::default(), &secret)
                .await
            {
                Ok(_) => return Ok(next),
                Err(kube::Error::Api(e)) if e.code == 409 && attempt < CONFLICT_RETRIES => {
                    // Another replica rotated: take what it wrote, unless forced.
                    attempt += 1;
                }
                Err(e) => {
                    return Err(format!(
                        "updating the certificate Secret {}: {e}",
                        self.secret_ref()
                    )
                    .into());
                }
            }
        }
    }

    /// Injects the bundle into every target; ready once all that exist carry it.
    async fn inject(&self, bundle: &str) -> Result<(), BoxError> {
        let mut failed = None;
        for t in &self.opts.targets {
            match inject::ensure(&self.client, t, bundle).await {
                Ok(Outcome::Injected) => {}
                Ok(outcome) => {
                    tracing::info!(kind = ?t.kind, name = %t.name, ?outcome, "CA bundle not injected")
                }
                Err(error) => {
                    tracing::error!(kind = ?t.kind, name = %t.name, %error, "injecting the CA bundle");
                    failed = Some(format!("injecting the CA bundle into {}: {error}", t.name));
                }
            }
        }
        match failed {
            Some(e) => Err(e.into()),
            None => {
                self.injected.store(true, Ordering::Release);
                Ok(())
            }
        }
    }

    /// Writes the files that differ: the key before the certificate (the certwatcher keeps
    /// the old pair while they disagree).
    fn write_files(&self, a: &Artifacts) -> Result<(), BoxError> {
        let o = &self.opts;
        std::fs::create_dir_all(&o.cert_dir)?;
        for (name, content) in [
            (&*o.key_name, &a.key),
            (&*o.cert_name, &a.cert),
            (CA_CERT_NAME, &a.ca_bundle),
        ] {
            let path = o.cert_dir.join(name);
            if !same(&path, content) {
                write_atomic(&path, content)?;
            }
        }
        Ok(())
    }
}

fn same(path: &Path, content: &str) -> bool {
    std::fs::read(path).is_ok_and(|b| b == content.as_bytes())
}

/// A watch as a stream of "something changed", errors logged (the watcher backs off).
fn events<K>(
    stream: impl futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
) -> BoxStream<'static, ()>
where
    K: Send + 'static,
{
    stream
        .backoff(WatchBackoff::default())
        .filter_map(|e| async move {
            match e {
                Ok(_) => Some(()),
                Err(error) => {
                    tracing::debug!(%error, "cert rotator watch error");
                    None
                }
            }
        })
        .boxed()
}
