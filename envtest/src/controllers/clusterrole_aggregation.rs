//! ClusterRole aggregation (kube-controller-manager's clusterrole-aggregation controller): a
//! ClusterRole with an `aggregationRule` gets, as its `rules`, the rules of every other ClusterRole
//! one of its `clusterRoleSelectors` matches — in name order, each rule once — and keeps them
//! current as labelled ClusterRoles come, change and go. A write observer
//! ([`registry::hooks`](crate::registry::hooks)): every ClusterRole write re-checks the aggregated
//! ClusterRoles and updates those whose rules differ (whose own update is observed in turn, so
//! aggregated roles that match other selectors settle too). Runs with the other controllers
//! (`EnvironmentBuilder::controllers`); RBAC ([`auth::rbac`](crate::auth::rbac)) reads the stored
//! rules.

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::json;

use crate::registry::context::Apiserver;
use crate::registry::hooks::{FollowUps, Observer, Written};

const GROUP: &str = "rbac.authorization.k8s.io";

/// The aggregation controller, as a write observer.
pub(crate) struct ClusterRoleAggregation;

impl Observer for ClusterRoleAggregation {
    fn observe(&self, api: &Apiserver, w: &Written, next: &mut FollowUps) {
        if w.rt.group != GROUP || w.rt.plural != "clusterroles" || w.rt.crd.is_some() {
            return;
        }
        let roles = cluster_roles(api);
        for role in roles.iter().filter(|r| r.aggregation_rule.is_some()) {
            let rules = aggregate(role, &roles);
            if role.rules.as_deref().unwrap_or_default() == rules.as_slice() {
                continue;
            }
            let name = role.metadata.name.clone().unwrap_or_default();
            let value = json!(rules);
            let r = next.update(api, &w.rt, None, &name, |cur| {
                let mut obj = cur.clone();
                obj["rules"] = value;
                Ok(obj)
            });
            if let Err(e) = r {
                tracing::debug!(clusterrole = %name, error = %e.message, "aggregating rules");
            }
        }
    }
}

/// Every stored ClusterRole, in name order.
fn cluster_roles(api: &Apiserver) -> Vec<ClusterRole> {
    let key = crate::storage::store_key(GROUP, "clusterroles");
    let items = api
        .store
        .list(&key, None, None)
        .map(|(_, i)| i)
        .unwrap_or_default();
    items
        .iter()
        .filter_map(|(_, b)| serde_json::from_slice(b).ok())
        .collect()
}

/// The rules `role`'s selectors collect from the other ClusterRoles (upstream's order: by
/// selector, then by name; a rule already present is not added again).
pub(crate) fn aggregate(role: &ClusterRole, all: &[ClusterRole]) -> Vec<PolicyRule> {
    let own = role.metadata.name.as_deref().unwrap_or_default();
    let selectors = role
        .aggregation_rule
        .as_ref()
        .and_then(|a| a.cluster_role_selectors.as_deref())
        .unwrap_or_default();
    let mut out: Vec<PolicyRule> = Vec::new();
    for sel in selectors {
        for r in all {
            if r.metadata.name.as_deref() == Some(own) || !matches(sel, r.metadata.labels.as_ref())
            {
                continue;
            }
            for rule in r.rules.iter().flatten() {
                if !out.contains(rule) {
                    out.push(rule.clone());
                }
            }
        }
    }
    out
}

/// A `metav1.LabelSelector` against labels (`super::client::selector_matches`).
fn matches(sel: &LabelSelector, labels: Option<&BTreeMap<String, String>>) -> bool {
    super::client::selector_matches(sel, labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(v: serde_json::Value) -> ClusterRole {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn rules_come_from_matching_roles_once_in_order() {
        let agg = role(
            json!({"metadata": {"name": "agg"}, "aggregationRule": {"clusterRoleSelectors": [
            {"matchLabels": {"a": "true"}}, {"matchExpressions": [{"key": "b", "operator": "Exists"}]}]}}),
        );
        let pods = json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]});
        let nodes = json!({"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]});
        let all = vec![
            agg.clone(),
            role(json!({"metadata": {"name": "x", "labels": {"b": "1"}}, "rules": [nodes, pods]})),
            role(json!({"metadata": {"name": "y", "labels": {"a": "true"}}, "rules": [pods]})),
            role(
                json!({"metadata": {"name": "z", "labels": {"a": "false"}}, "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}),
            ),
        ];
        let got = aggregate(&agg, &all);
        let want: Vec<PolicyRule> = serde_json::from_value(json!([pods, nodes])).unwrap();
        assert_eq!(got, want);
    }

    #[test]
    fn label_selectors_with_expressions() {
        let sel: LabelSelector = serde_json::from_value(json!({"matchExpressions": [
            {"key": "a", "operator": "In", "values": ["1", "2"]}, {"key": "b", "operator": "DoesNotExist"}]})).unwrap();
        let labels = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>()
        };
        assert!(matches(&sel, Some(&labels(&[("a", "2")]))));
        assert!(!matches(&sel, Some(&labels(&[("a", "3")]))));
        assert!(!matches(&sel, Some(&labels(&[("a", "1"), ("b", "x")]))));
        assert!(!matches(&sel, None));
        assert!(
            matches(&LabelSelector::default(), None),
            "empty selects everything"
        );
    }
}
