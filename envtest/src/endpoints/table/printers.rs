//! The columns `kubectl get` shows for built-in kinds, ported from upstream's
//! `pkg/printers/internalversion` (names, types, priority 1 = only with `-o wide`, and how each
//! cell is computed). `table` uses these for built-ins and falls back to Name/Age; the columns
//! of each kind are in `printers::core_kinds` and `printers::workloads`, cell helpers in
//! `table::format`.

use serde_json::{Value, json};

mod core_kinds;
mod workloads;

use core_kinds::*;
use workloads::*;

use super::format::{age, s};

/// One column: its definition and how a row's cell is computed from the object.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Column {
    pub name: &'static str,
    pub ty: &'static str,
    pub format: &'static str,
    pub description: &'static str,
    pub priority: i64,
    pub cell: fn(&Value) -> Value,
}

const fn col(
    name: &'static str,
    ty: &'static str,
    description: &'static str,
    priority: i64,
    cell: fn(&Value) -> Value,
) -> Column {
    Column {
        name,
        ty,
        format: "",
        description,
        priority,
        cell,
    }
}

/// The `Name` column every table starts with.
pub(crate) const NAME: Column = Column {
    name: "Name",
    ty: "string",
    format: "name",
    description: "Name must be unique within a namespace.",
    priority: 0,
    cell: |o| json!(crate::api::meta::name(o)),
};
/// The `Age` column.
pub(crate) const AGE: Column = col(
    "Age",
    "string",
    "CreationTimestamp is a timestamp representing the server time when this object was created.",
    0,
    |o| json!(age(s(o, &["metadata", "creationTimestamp"]))),
);
/// The `Created At` column of upstream's default table (CRDs and kinds without a printer).
pub(crate) const CREATED_AT: Column = col(
    "Created At",
    "date",
    "CreationTimestamp is a timestamp representing the server time when this object was created.",
    0,
    |o| json!(s(o, &["metadata", "creationTimestamp"])),
);

#[rustfmt::skip]
static DEFAULT_TABLE: &[Column] = &[NAME, CREATED_AT];

/// The printer columns of built-in resource `group`/`plural`, when upstream has a printer
/// that is ported here; CRDs get upstream's default table (Name, Created At).
pub(crate) fn builtin(group: &str, plural: &str) -> Option<&'static [Column]> {
    Some(match (group, plural) {
        ("", "pods") => PODS,
        ("", "services") => SERVICES,
        ("", "configmaps") => CONFIG_MAPS,
        ("", "secrets") => SECRETS,
        ("", "namespaces") => NAMESPACES,
        ("", "nodes") => NODES,
        ("", "events") | ("events.k8s.io", "events") => EVENTS,
        ("apps", "deployments") => DEPLOYMENTS,
        ("apps", "replicasets") => REPLICA_SETS,
        ("apps", "statefulsets") => STATEFUL_SETS,
        ("apps", "daemonsets") => DAEMON_SETS,
        ("batch", "jobs") => JOBS,
        ("batch", "cronjobs") => CRON_JOBS,
        ("coordination.k8s.io", "leases") => LEASES,
        ("apiextensions.k8s.io", "customresourcedefinitions")
        | ("rbac.authorization.k8s.io", _) => DEFAULT_TABLE,
        _ => return None,
    })
}
