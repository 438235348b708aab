//! Typed apply configurations (client-go's `applyconfigurations` packages and
//! controller-runtime's `client.Apply(ctx, applyConfiguration, ...)`): server-side apply of
//! exactly the fields you set.
//!
//! `client.apply(&Deployment { .. })` sends a whole typed object: fields that are required in
//! the Rust type serialize with empty values and the field manager becomes their owner
//! (k8s-openapi #112). An apply configuration is the same shape with *every* field optional
//! and skipped when unset, so the intent names only what the caller set:
//!
//! ```ignore
//! use ctrl::client::apply::apps::v1::{DeploymentApply, DeploymentSpecApply};
//! let ac = DeploymentApply::new("web", "default")
//!     .spec(DeploymentSpecApply::default().replicas(3));
//! client.apply_config(&ac, Some("my-operator"), true).await?;
//! ```
//!
//! - The built-in kinds operators manage most — Deployment, StatefulSet, Service, ConfigMap,
//!   Secret, Pod, Job, ServiceAccount, Role, RoleBinding — and every type they reference are
//!   in `generated` (modules `apps::v1`, `core::v1`, `batch::v1`, `rbac::v1`, `meta::v1`),
//!   checked in by the generator `runtime/tests/apply_generated.rs` from k8s-openapi's
//!   schemas (`CTRL_BLESS=1` rewrites it; the test fails when it is stale). They compile only
//!   with the `apply-configurations` feature (of `ctrl` or ctrl-runtime, off by default: 12,000
//!   lines an operator that does not use them should not compile); `meta::v1` is always there.
//! - Your own kinds: `#[derive(ApplyConfiguration)]` (the `ctrl-derive` crate, re-exported
//!   by the facade) next to kube's `CustomResource` produces `FooSpecApply` and, from the
//!   `#[kube(..)]` attributes, the whole-object `FooApply`.
//! - [`ApplyConfiguration`] maps a type to its apply form (leaves such as `String`,
//!   `Quantity` or `Time` to themselves), which is how a derived type finds the apply form
//!   of its fields; [`ObjectApply`] is a whole object's configuration, which
//!   [`Client::apply_config`] and `client.status().apply_config(..)` send.
//!
//! Builder methods set a field (`replicas(3)`), or add to a list or a map (`containers([..])`,
//! `labels([..])`). Items of a list-map (upstream's `+listType=map`: containers by `name`,
//! ports by `containerPort` and `protocol`, ...) must set their keys: the server merges by
//! them, and the generated docs name them.

mod generated;

use std::collections::BTreeMap;

use serde::Serialize;

pub use generated::*;

use super::writer::{Target, Writable, Writer, apply_params};
use super::{Client, Error, Source};
use crate::cache::{gvk_string, object_key};

/// A type's server-side apply form: the same fields, every one optional (client-go's
/// `*ApplyConfiguration` types). Leaves are their own apply form.
pub trait ApplyConfiguration {
    /// The apply form.
    type Apply: Serialize + Clone + std::fmt::Debug;
}

macro_rules! leaves {
    ($($t:ty),* $(,)?) => {
        $(impl ApplyConfiguration for $t {
            type Apply = $t;
        })*
    };
}

leaves!(
    String,
    bool,
    i32,
    i64,
    u32,
    u64,
    f32,
    f64,
    serde_json::Value,
    k8s_openapi::ByteString,
    k8s_openapi::apimachinery::pkg::api::resource::Quantity,
    k8s_openapi::apimachinery::pkg::util::intstr::IntOrString,
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
    k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime,
    k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1,
);

impl<T: ApplyConfiguration> ApplyConfiguration for Option<T> {
    type Apply = T::Apply;
}

impl<T: ApplyConfiguration> ApplyConfiguration for Vec<T> {
    type Apply = Vec<T::Apply>;
}

impl<T: ApplyConfiguration> ApplyConfiguration for BTreeMap<String, T> {
    type Apply = BTreeMap<String, T::Apply>;
}

/// The apply configuration of a whole object: it says which resource it applies to and
/// names its target in its metadata (client-go's `runtime.ApplyConfiguration` with
/// `GetName` / `GetNamespace`).
pub trait ObjectApply: Serialize + std::fmt::Debug + Sync {
    /// The resource the configuration applies to (what the server answers with).
    type Resource: Writable;

    /// Its metadata (name, namespace, labels, ...), if set.
    fn metadata(&self) -> Option<&meta::v1::ObjectMetaApply>;
}

impl Client {
    /// Server-side applies the apply configuration `ac` as `field_manager` (falling back to
    /// the client's field owner), taking over conflicting fields when `force` is set
    /// (controller-runtime's `client.Apply(ctx, ac, client.FieldOwner(..),
    /// client.ForceOwnership)`). Only the fields `ac` sets are sent, so only those are
    /// owned. Returns the object the server stored.
    pub async fn apply_config<A: ObjectApply>(
        &self,
        ac: &A,
        field_manager: Option<&str>,
        force: bool,
    ) -> Result<A::Resource, Error> {
        Writer::object(self)
            .apply_config(ac, field_manager, force)
            .await
    }
}

impl Writer<'_> {
    /// [`Client::apply_config`] to where this writer writes: the object, or its
    /// subresource (`client.status().apply_config(&ac, ..)` applies the status).
    pub async fn apply_config<A: ObjectApply>(
        &self,
        ac: &A,
        field_manager: Option<&str>,
        force: bool,
    ) -> Result<A::Resource, Error> {
        let meta = ac.metadata();
        let ns = meta.and_then(|m| m.namespace.as_deref());
        let Some(name) = meta.and_then(|m| m.name.as_deref()) else {
            return Err(Error::new(
                "patch",
                gvk_string::<A::Resource>(&()),
                object_key(ns, ""),
                Source::Refused("an apply configuration must set metadata.name".into()),
            ));
        };
        let client = self.client();
        let t = Target::<A::Resource>::at(client.kube_client(), &(), ns, name);
        let pp = apply_params(field_manager, force);
        let written: A::Resource = self.patch_to(t, &kube::api::Patch::Apply(ac), pp).await?;
        client.remember_write(&(), &written, false);
        Ok(written)
    }
}
