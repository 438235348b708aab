//! `Manager::rbac_rules`: the minimal RBAC rules of what this manager runs
//! ([`crate::rbac`]) — gathered from its cache's watches, its recorder, leader election,
//! the secure metrics filter, and the rules reconcilers declared.

use std::sync::atomic::Ordering;

use super::Manager;
use crate::rbac::{self, Rule, Rules};

impl Manager {
    /// Declares permissions the manager's code needs beyond what the manager infers
    /// (a `+kubebuilder:rbac` marker; `ControllerBuilder::permissions` calls it).
    pub fn add_rbac_rules(&self, rules: impl IntoIterator<Item = Rule>) {
        self.inner.state.lock().rbac.extend(rules);
    }

    /// The minimal rules this manager needs, normalized as controller-gen does:
    /// get, list, watch on every resource watched through its cache (the builder's
    /// `For` / `Owns` / `Watches`, informers asked for), `events.k8s.io` Events once a
    /// recorder was handed out, TokenReviews and SubjectAccessReviews for the secure
    /// metrics filter, the declared rules ([`Manager::add_rbac_rules`]), and, with
    /// leader election on its Lease, the Lease rules for a Role in its namespace. Call
    /// it once controllers are set up (what they do later is not seen).
    pub fn rbac_rules(&self) -> Rules {
        let inner = &self.inner;
        let mut rules: Vec<Rule> = inner
            .cache
            .watched_resources()
            .iter()
            .map(|(g, r)| rbac::watch_rule(g, r))
            .collect();
        if inner.events_used.load(Ordering::Relaxed) {
            rules.push(rbac::events_rule());
        }
        let m = &inner.opts.metrics;
        let secure_metrics =
            inner.metrics_addr.is_some() && m.secure_serving && m.filter_provider.is_some();
        if secure_metrics {
            rules.extend(rbac::metrics_auth_rules());
        }
        rules.extend(inner.state.lock().rbac.iter().cloned());
        let lease =
            inner.opts.leader_election && inner.opts.leader_election_resource_lock.is_none();
        let leader: Vec<Rule> = if lease {
            vec![rbac::leader_election_rule()]
        } else {
            Vec::new()
        };
        Rules::from_rules(&rules, &leader, secure_metrics)
    }
}
