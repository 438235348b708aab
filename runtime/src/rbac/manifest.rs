//! [`Manifest`]: the objects that give a manager its [`Rules`] in a cluster — its
//! ServiceAccount, the ClusterRole and ClusterRoleBinding, the leader-election Role and
//! RoleBinding in its namespace, Roles for namespaced rules, and (secure metrics) the
//! `metrics-reader` ClusterRole for scrapers — named as kubebuilder's `config/rbac`
//! names them (`<name>-manager-role`, `<name>-leader-election-role`, ...). Examples
//! print them as YAML (`--print-rbac`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

use super::{Rules, metrics_reader_rule, normalize};

/// Where and as whom a manager runs.
#[derive(Clone, Debug, Default)]
pub struct Manifest {
    /// The prefix of every name (`<name>-manager-role`, ...).
    pub name: String,
    /// The manager's namespace: its ServiceAccount, leader-election Role.
    pub namespace: String,
    /// The manager's ServiceAccount.
    pub service_account: String,
    /// Labels put on every object.
    pub labels: BTreeMap<String, String>,
}

/// One object of a [`Manifest`] (serializes as the object itself).
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum Object {
    /// The manager's ServiceAccount.
    ServiceAccount(ServiceAccount),
    /// A ClusterRole.
    ClusterRole(ClusterRole),
    /// The binding of a ClusterRole to the ServiceAccount.
    ClusterRoleBinding(ClusterRoleBinding),
    /// A Role.
    Role(Role),
    /// The binding of a Role to the ServiceAccount.
    RoleBinding(RoleBinding),
}

impl Manifest {
    /// `<name>-<suffix>`, or `suffix` alone when the name is empty (the unprefixed names
    /// of a kustomize base whose `namePrefix` adds the name).
    pub fn named(&self, suffix: &str) -> String {
        match self.name.is_empty() {
            true => suffix.to_string(),
            false => format!("{}-{suffix}", self.name),
        }
    }

    fn meta(&self, name: String, namespace: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            name: Some(name),
            namespace: namespace.map(str::to_string),
            labels: (!self.labels.is_empty()).then(|| self.labels.clone()),
            ..Default::default()
        }
    }

    fn subject(&self) -> Vec<Subject> {
        vec![Subject {
            kind: "ServiceAccount".into(),
            name: self.service_account.clone(),
            namespace: Some(self.namespace.clone()),
            api_group: None,
        }]
    }

    fn role_ref(kind: &str, name: &str) -> RoleRef {
        RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: kind.into(),
            name: name.into(),
        }
    }

    fn role(&self, out: &mut Vec<Object>, role: &str, ns: &str, rules: &[PolicyRule]) {
        let name = self.named(role);
        out.push(Object::Role(Role {
            metadata: self.meta(name.clone(), Some(ns)),
            rules: Some(rules.to_vec()),
        }));
        out.push(Object::RoleBinding(RoleBinding {
            metadata: self.meta(format!("{name}binding"), Some(ns)),
            role_ref: Self::role_ref("Role", &name),
            subjects: Some(self.subject()),
        }));
    }

    /// The objects granting `rules` to the ServiceAccount, in `kubectl apply` order.
    pub fn objects(&self, rules: &Rules) -> Vec<Object> {
        let mut out = vec![Object::ServiceAccount(ServiceAccount {
            metadata: self.meta(self.service_account.clone(), Some(&self.namespace)),
            ..Default::default()
        })];
        let role = self.named("manager-role");
        out.push(Object::ClusterRole(ClusterRole {
            metadata: self.meta(role.clone(), None),
            rules: Some(rules.cluster.clone()),
            aggregation_rule: None,
        }));
        out.push(Object::ClusterRoleBinding(ClusterRoleBinding {
            metadata: self.meta(self.named("manager-rolebinding"), None),
            role_ref: Self::role_ref("ClusterRole", &role),
            subjects: Some(self.subject()),
        }));
        if !rules.leader_election.is_empty() {
            let ns = self.namespace.clone();
            self.role(
                &mut out,
                "leader-election-role",
                &ns,
                &rules.leader_election,
            );
        }
        for (ns, r) in &rules.namespaced {
            self.role(&mut out, "manager-role", ns, r);
        }
        if rules.metrics_reader {
            out.push(Object::ClusterRole(ClusterRole {
                metadata: self.meta(self.named("metrics-reader"), None),
                rules: Some(normalize(&[metrics_reader_rule()])),
                aggregation_rule: None,
            }));
        }
        out
    }
}
