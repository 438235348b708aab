//! The default RBAC policy kube-apiserver's bootstrap controller writes at start
//! (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy`), the part tests and kubectl rely on, as
//! data (`bootstrap.yaml`): `cluster-admin` (bound to `system:masters`), `system:discovery`,
//! `system:basic-user` (may create the self reviews, so `kubectl auth can-i` / `whoami` work
//! for everyone) and `system:public-info-viewer`, bound to every authenticated user; and the
//! user-facing `admin`, `edit` and `view` ClusterRoles, aggregated from the
//! `system:aggregate-to-*` roles by their `rbac.authorization.k8s.io/aggregate-to-*` labels.
//! The environment seeds these objects; they are ordinary objects afterwards.

use serde_json::Value;

const POLICY: &str = include_str!("bootstrap.yaml");

/// The default ClusterRoles and ClusterRoleBindings, as (plural, object).
pub(crate) fn objects() -> Vec<(&'static str, Value)> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(POLICY).unwrap_or_default();
    docs.into_iter()
        .map(|d| {
            let plural = match d.get("kind").and_then(Value::as_str) {
                Some("ClusterRoleBinding") => "clusterrolebindings",
                _ => "clusterroles",
            };
            (plural, d)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_policy_parses() {
        let objs = super::objects();
        assert_eq!(objs.len(), 14);
        assert_eq!(
            objs.iter()
                .filter(|(p, _)| *p == "clusterrolebindings")
                .count(),
            4
        );
    }
}
