//! Leader election customisation: a lock of your own (Go's
//! `LeaderElectionResourceLockInterface`) and a separate client configuration for
//! the Lease (Go's `LeaderElectionConfig`), each electing a manager on envtest.

use crate::leaderelection_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use ctrl_runtime::leaderelection::{
    self, Error, LeaderElectionRecord, LeaseLock, Lock, ResourceLock,
};
use ctrl_runtime::manager::{Error as ManagerError, Manager};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use leaderelection_common::{Audit, Replica, env, le_options};

/// A lock of the user's: the stock Lease lock under another name, counting the
/// writes it is asked for.
struct Counting {
    inner: LeaseLock,
    writes: Arc<AtomicUsize>,
}

#[async_trait]
impl Lock for Counting {
    async fn get(&mut self) -> Result<Option<LeaderElectionRecord>, Error> {
        self.inner.get().await
    }
    async fn create(&mut self, rec: &LeaderElectionRecord) -> Result<LeaderElectionRecord, Error> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.create(rec).await
    }
    async fn update(&mut self, rec: &LeaderElectionRecord) -> Result<LeaderElectionRecord, Error> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.update(rec).await
    }
    fn identity(&self) -> &str {
        self.inner.identity()
    }
    fn describe(&self) -> String {
        format!("counting {}", self.inner.describe())
    }
}

async fn holder(client: kube::Client, name: &str) -> Option<String> {
    let api: Api<Lease> = Api::namespaced(client, "default");
    let lease = api.get_opt(name).await.expect("read lease")?;
    lease.spec?.holder_identity
}

#[tokio::test]
async fn a_custom_lock_elects_the_manager_and_is_used_once() {
    let env = env().await;
    let writes = Arc::new(AtomicUsize::new(0));
    let inner = LeaseLock::new(
        env.client(),
        "default",
        "my-own-lock",
        "replica-a",
        Duration::from_secs(5),
    );
    let lock = ResourceLock::new(Counting {
        inner,
        writes: writes.clone(),
    });
    let mut opts = le_options("lease-not-used", true);
    opts.leader_election_resource_lock = Some(lock.clone());
    let audit = Audit::default();
    let replica = Replica::start(&env, 0, opts.clone(), &audit);
    tokio::time::timeout(Duration::from_secs(10), replica.mgr.elected())
        .await
        .expect("elected through the custom lock");
    assert_eq!(replica.mgr.leader_election_identity(), Some("replica-a"));
    assert!(writes.load(Ordering::SeqCst) >= 1);
    assert_eq!(
        holder(env.client(), "my-own-lock").await.as_deref(),
        Some("replica-a")
    );
    assert_eq!(holder(env.client(), "lease-not-used").await, None);
    // The lock is one object: a second manager cannot use it too.
    let again = Manager::new(env.client(), opts);
    assert!(
        matches!(again, Err(ManagerError::ResourceLockTaken)),
        "{again:?}"
    );
    replica.stop().await.expect("clean stop");
}

#[tokio::test]
async fn the_lease_lives_where_leader_election_config_points() {
    let (env, lease_env) = (env().await, env().await);
    let mut opts = le_options("elsewhere", true);
    opts.leader_election_config = Some(lease_env.config());
    let audit = Audit::default();
    let replica = Replica::start(&env, 0, opts, &audit);
    tokio::time::timeout(Duration::from_secs(10), replica.mgr.elected())
        .await
        .expect("elected through the other server");
    let identity = replica.mgr.leader_election_identity().map(str::to_string);
    assert!(identity.is_some());
    assert_eq!(holder(lease_env.client(), "elsewhere").await, identity);
    assert_eq!(holder(env.client(), "elsewhere").await, None);
    assert_eq!(leaderelection::master_status("elsewhere"), 1);
    replica.stop().await.expect("clean stop");
}
