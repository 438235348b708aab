//! [`LeaderElector`]: acquires, renews and releases a [`Lock`] (a Lease, unless you
//! bring your own) with client-go's
//! semantics (`tools/leaderelection`): try-acquire-or-renew against the last
//! observed record, a candidate retrying every retry period (with jitter), a leader
//! renewing every retry period and giving up once the renew deadline passes without
//! a successful renewal, and an optional release on cancel.
//!
//! The manager drives it: [`LeaderElector::acquire`], then the
//! leader-election runnables start while [`LeaderElector::renew`] runs; a `false`
//! from `renew` is "leader election lost". What it has seen of the lock lives in
//! `observe`; the `leader_election_master_status` gauge in `metrics`.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::observe::{self, Observed};
use super::{Error, LeaderElectionRecord, Lock, metrics};

/// client-go's jitter factor: a candidate waits between `retry_period` and
/// `retry_period * (1 + JITTER_FACTOR)` between attempts.
pub const JITTER_FACTOR: f64 = 1.2;

/// How an elector times its attempts (client-go's `LeaderElectionConfig`).
#[derive(Clone, Debug)]
pub struct ElectorConfig {
    /// How long candidates wait, after last observing the record change, before they
    /// may take the lease over (written to the Lease as `leaseDurationSeconds`,
    /// rounded up to whole seconds).
    pub lease_duration: Duration,
    /// How long the leader keeps retrying a renewal before it gives up leading.
    pub renew_deadline: Duration,
    /// How long to wait between attempts.
    pub retry_period: Duration,
    /// Whether [`LeaderElector::renew`] releases the lease when cancelled.
    pub release_on_cancel: bool,
    /// The name in logs and in the `leader_election_master_status` gauge.
    pub name: String,
}

impl ElectorConfig {
    /// Checks the timings the way client-go's `NewLeaderElector` does.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |msg: &'static str| Err(Error::InvalidTimings(msg));
        if self.lease_duration.is_zero() {
            return bad("leaseDuration must be greater than zero");
        }
        if self.renew_deadline.is_zero() {
            return bad("renewDeadline must be greater than zero");
        }
        if self.retry_period.is_zero() {
            return bad("retryPeriod must be greater than zero");
        }
        if self.lease_duration <= self.renew_deadline {
            return bad("leaseDuration must be greater than renewDeadline");
        }
        if self.renew_deadline <= self.retry_period.mul_f64(JITTER_FACTOR) {
            return bad("renewDeadline must be greater than retryPeriod*JitterFactor");
        }
        Ok(())
    }

    fn lease_duration_seconds(&self) -> i32 {
        let secs =
            self.lease_duration.as_secs() + u64::from(self.lease_duration.subsec_nanos() > 0);
        i32::try_from(secs).unwrap_or(i32::MAX)
    }

    fn jittered_retry(&self) -> Duration {
        self.retry_period
            + self
                .retry_period
                .mul_f64(JITTER_FACTOR * ctrl_clock::random_f64())
    }
}

/// A leader-election client on one lock (client-go's `LeaderElector`).
pub struct LeaderElector {
    cfg: ElectorConfig,
    lock: Box<dyn Lock>,
    observed: Arc<Observed>,
    reported_leader: String,
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("cfg", &self.cfg)
            .field("lock", &self.lock.describe())
            .field("identity", &self.lock.identity())
            .finish_non_exhaustive()
    }
}

impl LeaderElector {
    /// An elector for `lock` (a [`LeaseLock`](super::LeaseLock) or your own
    /// [`Lock`]); fails if the timings are inconsistent.
    pub fn new(lock: impl Lock, cfg: ElectorConfig) -> Result<Self, Error> {
        Self::new_boxed(Box::new(lock), cfg)
    }

    /// [`LeaderElector::new`] for a boxed lock.
    pub fn new_boxed(lock: Box<dyn Lock>, cfg: ElectorConfig) -> Result<Self, Error> {
        cfg.validate()?;
        metrics::leader_off(&cfg.name);
        Ok(Self {
            cfg,
            lock,
            observed: Arc::default(),
            reported_leader: String::new(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ElectorConfig {
        &self.cfg
    }

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        self.lock.identity()
    }

    /// The holder last observed (empty if none was observed or the lease is free).
    pub fn leader(&self) -> String {
        self.observed
            .get()
            .map(|o| o.record.holder_identity)
            .unwrap_or_default()
    }

    /// Whether the last observed holder is this candidate.
    pub fn is_leader(&self) -> bool {
        self.observed
            .get()
            .is_some_and(|o| o.record.holder_identity == self.lock.identity())
    }

    /// One attempt: read the lock, create it if missing, take it over if it is free
    /// or its holder has not renewed for its lease duration (by this process's
    /// clock), renew it if held here. True if this candidate holds the lease now.
    pub async fn try_acquire_or_renew(&mut self) -> bool {
        let now = ctrl_clock::now();
        let mut rec = LeaderElectionRecord {
            holder_identity: self.lock.identity().to_string(),
            lease_duration_seconds: self.cfg.lease_duration_seconds(),
            acquire_time: Some(now),
            renew_time: Some(now),
            leader_transitions: 0,
        };
        let old = match self.lock.get().await {
            Ok(Some(old)) => old,
            Ok(None) => {
                return match self.lock.create(&rec).await {
                    Ok(stored) => {
                        self.observed.set(stored);
                        true
                    }
                    Err(error) => {
                        tracing::error!(lease = %self.lock.describe(), %error, "error initially creating leader election record");
                        false
                    }
                };
            }
            Err(error) => {
                tracing::error!(lease = %self.lock.describe(), %error, "error retrieving resource lock");
                return false;
            }
        };
        self.observed.observe(old.clone());
        let leader = self.is_leader();
        if !old.holder_identity.is_empty()
            && !leader
            && self
                .observed
                .get()
                .is_some_and(|o| o.expiry() > Instant::now())
        {
            tracing::trace!(lease = %self.lock.describe(), holder = %old.holder_identity, "lock is held and has not yet expired");
            return false;
        }
        if leader {
            rec.acquire_time = old.acquire_time;
            rec.leader_transitions = old.leader_transitions;
        } else {
            rec.leader_transitions = old.leader_transitions.saturating_add(1);
        }
        match self.lock.update(&rec).await {
            Ok(stored) => {
                self.observed.set(stored);
                true
            }
            Err(error) => {
                tracing::error!(lease = %self.lock.describe(), %error, "failed to update lock");
                false
            }
        }
    }

    /// Retries [`LeaderElector::try_acquire_or_renew`] until it succeeds (true) or
    /// `ctx` is cancelled (false). Between attempts it waits the jittered retry
    /// period, less if the holder's lease expires sooner or the lease is released.
    pub async fn acquire(&mut self, ctx: &CancellationToken) -> bool {
        let lease = self.lock.describe();
        tracing::info!(%lease, identity = %self.identity(), "attempting to acquire leader lease");
        let _abort = self
            .lock
            .lease()
            .map(|(api, name)| AbortOnDrop(observe::spawn_watch(api, name, self.observed.clone())));
        loop {
            let ok = tokio::select! {
                _ = ctx.cancelled() => return false,
                ok = self.try_acquire_or_renew() => ok,
            };
            self.maybe_report_transition();
            if ok {
                metrics::leader_on(&self.cfg.name);
                tracing::info!(%lease, identity = %self.identity(), "successfully acquired lease");
                return true;
            }
            let mut until = Instant::now() + self.cfg.jittered_retry();
            if let Some(o) = self
                .observed
                .get()
                .filter(|o| !o.record.holder_identity.is_empty())
            {
                until = until.min(o.expiry() + Duration::from_millis(1));
            }
            tokio::select! {
                _ = ctx.cancelled() => return false,
                _ = tokio::time::sleep_until(until) => {}
                _ = self.observed.released() => {}
            }
        }
    }

    /// Renews every retry period while this candidate leads. Returns true when `ctx`
    /// is cancelled (releasing the lease first if configured), false when leadership
    /// is lost: no renewal succeeded within the renew deadline, or another holder
    /// was observed.
    pub async fn renew(&mut self, ctx: &CancellationToken) -> bool {
        let renewed = tokio::select! {
            _ = ctx.cancelled() => None,
            lost = self.renew_until_lost() => Some(lost),
        };
        self.maybe_report_transition();
        match renewed {
            Some(error) => {
                metrics::leader_off(&self.cfg.name);
                tracing::info!(lease = %self.lock.describe(), identity = %self.identity(), %error, "failed to renew lease");
                false
            }
            None => {
                if self.cfg.release_on_cancel {
                    self.release().await;
                }
                metrics::leader_off(&self.cfg.name);
                true
            }
        }
    }

    async fn renew_until_lost(&mut self) -> String {
        loop {
            let deadline = Instant::now() + self.cfg.renew_deadline;
            loop {
                match tokio::time::timeout_at(deadline, self.try_acquire_or_renew()).await {
                    Ok(true) => break,
                    Ok(false) => {}
                    Err(_) => return "timed out waiting for the renewal".into(),
                }
                if !self.is_leader() && !self.leader().is_empty() {
                    return format!("the lease is held by {}", self.leader());
                }
                tokio::time::sleep_until(deadline.min(Instant::now() + self.cfg.retry_period))
                    .await;
                if Instant::now() >= deadline {
                    return "the renew deadline passed".into();
                }
            }
            tracing::trace!(lease = %self.lock.describe(), "successfully renewed lease");
            tokio::time::sleep(self.cfg.retry_period).await;
        }
    }

    /// Gives the lease up if this candidate holds it: clears the holder and sets a
    /// one-second lease duration, so others take over at once. True on success (or
    /// if not the holder).
    ///
    /// Unlike client-go it reads the Lease first: a renewal cancelled in flight may
    /// have been written without this elector seeing the new `resourceVersion`, and
    /// the release must not then fail with a conflict (leaving standbys to wait for
    /// the lease to expire) nor clear a holder other than this one.
    pub async fn release(&mut self) -> bool {
        if !self.is_leader() {
            return true;
        }
        // A renewal dropped in flight can still land after our read: retry a conflict.
        for _ in 0..3 {
            let o = match self.lock.get().await {
                Ok(Some(rec)) if rec.holder_identity == self.lock.identity() => rec,
                Ok(_) => return true,
                Err(error) => {
                    tracing::error!(lease = %self.lock.describe(), %error, "failed to release lock");
                    return false;
                }
            };
            let now = ctrl_clock::now();
            let rec = LeaderElectionRecord {
                holder_identity: String::new(),
                lease_duration_seconds: 1,
                acquire_time: Some(now),
                renew_time: Some(now),
                leader_transitions: o.leader_transitions,
            };
            match self.lock.update(&rec).await {
                Ok(stored) => {
                    self.observed.set(stored);
                    tracing::info!(lease = %self.lock.describe(), identity = %self.identity(), "released leader lease");
                    return true;
                }
                Err(Error::Api(kube::Error::Api(s))) if s.is_conflict() => {}
                Err(error) => {
                    tracing::error!(lease = %self.lock.describe(), %error, "failed to release lock");
                    return false;
                }
            }
        }
        tracing::error!(lease = %self.lock.describe(), "failed to release lock: conflicts");
        false
    }

    fn maybe_report_transition(&mut self) {
        let leader = self.leader();
        if leader == self.reported_leader {
            return;
        }
        tracing::info!(lease = %self.lock.describe(), leader = %leader, identity = %self.identity(), "new leader observed");
        self.reported_leader = leader;
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
