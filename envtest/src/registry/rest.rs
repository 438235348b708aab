//! The generic object lifecycle (kube-apiserver's `registry/generic/registry.Store`): create,
//! update and delete of one object with preconditions, dryRun and finalizers, over the store's
//! atomic `commit`, with the per-kind rules of [`strategy`] and [`crd`] and the managedFields of
//! [`fieldmanager`](super::fieldmanager). Every committed write then runs the registry's own
//! effects (a CRD's types, [`crd::after_commit`]). The write observers (the controllers) run
//! after it, in [`super::hooks`], through which the HTTP handlers, admission, the controllers
//! and `env` write (the observers' own follow-up writes call here directly). It calls `api`,
//! `storage` and the registry below it only.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{ResourceType, context::Apiserver, crd, defaults, objects, strategy};
use crate::api::meta;
use crate::api::status::ApiError;
use crate::api::validation::{self, FieldCause};
use crate::storage::{Change, Committed, Name};

/// Options of a write: `dryRun=All`, `fieldValidation=Strict`, and who writes (the handlers build
/// them from the query,
/// [`endpoints::handlers::write_opts`](crate::endpoints::handlers::write_opts)).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WriteOpts<'a> {
    pub dry_run: bool,
    /// Unknown fields of custom resources are an error (400) instead of being dropped.
    pub strict: bool,
    /// The field manager whose `Update` entry records the write
    /// ([`super::fieldmanager::record_update`]); `None` for server-side apply (which keeps its own
    /// entries) and the server's own writes.
    pub manager: Option<super::fieldmanager::Writer<'a>>,
    /// The requesting user, where a kind's strategy records it (a CSR's requester:
    /// [`defaults::prepare_for_create`]); `None` for the server's own writes.
    pub user: Option<&'a crate::auth::UserInfo>,
}

/// DeleteOptions as the delete path acts on them (the handlers decode them from the body and
/// the query).
#[derive(Debug, Default, Clone)]
pub(crate) struct DeleteOpts {
    pub dry_run: bool,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub policy: Option<String>,
    /// `gracePeriodSeconds` (only simulated Pods use it: [`strategy::pod_graceful_delete`]).
    pub grace: Option<i64>,
}

/// Creates `obj` (already type-checked) in `url_ns`: identity, strategy, validation, commit and
/// the registry's own effects (no observers; [`super::hooks::create_object`] runs them after it).
pub(crate) fn create(
    api: &Apiserver,
    rt: &Arc<ResourceType>,
    url_ns: Option<&str>,
    mut obj: Value,
    w: WriteOpts<'_>,
) -> Result<Committed, ApiError> {
    let (ns, name) = identity(rt, url_ns, &mut obj)?;
    strategy::validate(rt, &mut obj)?;
    if rt.namespaced {
        strategy::ensure_namespace(&api.store, rt, &ns, &name)?;
    }
    // managedFields given on create (server-side apply's first entry) are kept.
    let managed = obj
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .cloned();
    meta::init_create(&mut obj, rt.generation);
    if let Some(m) = managed {
        meta::set_meta(&mut obj, "managedFields", m);
    }
    strategy::normalize(rt, &mut obj, true);
    let key = rt.store_key();
    let okey = objects::okey(rt, Some(&ns), &name);
    let alloc = defaults::Allocation::begin(api, rt, &okey);
    defaults::apply(rt, &mut obj);
    if rt.crd.is_some()
        && rt.status
        && let Some(o) = obj.as_object_mut()
    {
        o.remove("status");
    }
    crd::on_write(rt, None, &mut obj)?;
    crd::validate_custom(rt, &mut obj, None, w.strict, false)?;
    meta::normalize(&mut obj);
    if let Some(who) = &w.manager {
        let given = obj
            .get("metadata")
            .and_then(|m| m.get("managedFields"))
            .cloned();
        super::fieldmanager::record_update(rt, None, &mut obj, given.as_ref(), who);
    }
    // After the field manager, as upstream's admission and storage come after it: what they
    // set (a Pod's status and admission defaults, a Service's addresses) has no owner.
    defaults::prepare_for_create(&alloc, rt, &mut obj, w.user)?;
    let out = api.store.commit(&key, &okey, w.dry_run, |cur| {
        if cur.is_some() {
            return Err(ApiError::already_exists(&rt.group, &rt.plural, &name));
        }
        Ok(Change::Put(obj))
    })?;
    drop(alloc);
    let stored = out.into_committed();
    if !w.dry_run {
        crd::after_commit(api, rt, &stored.obj, false);
    }
    Ok(stored)
}

/// The identity of a new object: its namespace (the URL's, which a body may only repeat; none
/// for a cluster-scoped type) and its name (generated from `generateName`), returned; a create
/// may not name a resourceVersion. Read from the metadata map once (every create asks).
fn identity(
    rt: &ResourceType,
    url_ns: Option<&str>,
    obj: &mut Value,
) -> Result<(Name, Name), ApiError> {
    let m = meta::meta_mut(obj);
    let text = |m: &Map<String, Value>, f: &str| -> Name {
        m.get(f).and_then(Value::as_str).unwrap_or("").into()
    };
    let ns = if rt.namespaced {
        let url_ns = url_ns.unwrap_or("");
        let body_ns = text(m, "namespace");
        if body_ns.is_empty() {
            m.insert("namespace".into(), json!(url_ns));
        } else if body_ns != url_ns {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        Name::from(url_ns)
    } else {
        m.remove("namespace");
        Name::default()
    };
    let mut name = text(m, "name");
    if name.is_empty() {
        let prefix = text(m, "generateName");
        if prefix.is_empty() {
            let cause = FieldCause::required("metadata.name", "name or generateName is required");
            return Err(ApiError::invalid(&rt.group, &rt.kind, "", &[cause]));
        }
        let n = validation::generate_name(&prefix);
        name = Name::from(n.as_str());
        m.insert("name".into(), json!(n));
    }
    if m.get("resourceVersion")
        .and_then(Value::as_str)
        .is_some_and(|v| !v.is_empty())
    {
        return Err(ApiError::bad_request(
            "resourceVersion can not be set for Create requests",
        ));
    }
    Ok((ns, name))
}

/// The object an update writes: its namespace and name, the subresource written (`status`), and
/// whether the write is a PUT (custom resources then require `metadata.resourceVersion`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    pub ns: Option<&'a str>,
    pub name: &'a str,
    pub sub: Option<&'a str>,
    pub put: bool,
}

impl<'a> Target<'a> {
    /// The object itself, not by a PUT (the server's own updates).
    pub fn object(ns: Option<&'a str>, name: &'a str) -> Self {
        Target {
            ns,
            name,
            sub: None,
            put: false,
        }
    }
}

/// What a [`Make`] does: the new object from the stored one.
type Made = Result<Value, ApiError>;

/// How [`update`] builds the new object from the stored one. Boxed, so that the update path is
/// compiled once rather than once per caller's closure (27 callers: ~19,000 lines of LLVM IR).
pub(crate) enum Make<'a> {
    /// Run once, under the store lock, on the object as stored: a closure that consumes what it
    /// holds (a PUT's body), or whose effects must not run twice.
    Once(Box<dyn FnOnce(&Value) -> Made + 'a>),
    /// Run outside the store lock on the object as read, and again on a new read when a write came
    /// in before the commit (etcd3's `GuaranteedUpdate`): other writes do not wait on it.
    Again(Box<dyn FnMut(&Value) -> Made + 'a>),
}

/// The shared update path (no observers; [`super::hooks::update_object`] runs them after it).
/// `make` builds the new object from the stored one. Returns the resulting object and whether it
/// was removed.
pub(crate) fn update(
    api: &Apiserver,
    rt: &Arc<ResourceType>,
    at: Target<'_>,
    w: WriteOpts<'_>,
    make: Make<'_>,
) -> Result<(Committed, bool), ApiError> {
    let key = rt.store_key();
    let okey = objects::okey(rt, at.ns, at.name);
    let alloc = defaults::Allocation::begin(api, rt, &okey);
    let out = match make {
        Make::Once(make) => api.store.commit_update(&key, &okey, w.dry_run, |cur| {
            next(api, rt, at, w, &alloc, cur, make)
        })?,
        Make::Again(mut make) => loop {
            let read = api.store.read(&key, &okey);
            let cur = read.as_ref().map(|(_, v)| v);
            let change = next(api, rt, at, w, &alloc, cur, Box::new(&mut make))?;
            if let Some(out) = api
                .store
                .commit_read(&key, &okey, w.dry_run, read, change)?
            {
                break out;
            }
        },
    };
    drop(alloc);
    let removed = out.removed();
    let c = out.into_committed();
    if !w.dry_run {
        crd::after_commit(api, rt, &c.obj, removed);
    }
    Ok((c, removed))
}

/// The change an update makes to `cur`, the stored object: `make`'s object checked (type,
/// identity, preconditions, immutable fields, the status subresource's rules, finalizers of an
/// object being deleted), normalized, defaulted, validated, its generation and managedFields
/// recorded — or its removal, when a deleting object's last finalizer went.
fn next(
    api: &Apiserver,
    rt: &Arc<ResourceType>,
    at: Target<'_>,
    w: WriteOpts<'_>,
    alloc: &defaults::Allocation<'_>,
    cur: Option<&Value>,
    make: Box<dyn FnOnce(&Value) -> Made + '_>,
) -> Result<Change, ApiError> {
    let Target { ns, name, sub, put } = at;
    let status_write = sub == Some("status");
    let Some(cur) = cur else {
        return Err(ApiError::not_found(&rt.group, &rt.plural, name));
    };
    let mut new = make(cur)?;
    // The managedFields the client sent, which only a write of the object itself may give
    // (a subresource write starts from the stored entries: `record_update`).
    let given_fields = w
        .manager
        .filter(|m| m.subresource.is_none())
        .and_then(|_| meta::meta_field(&new, "managedFields").cloned());
    objects::check_type_unless(&mut new, rt, Some(&api.registry), cur.get("metadata"))?;
    check_identity(&mut new, rt, ns, name)?;
    check_preconditions(cur, &new, rt, name, put)?;
    meta::keep_immutable(&mut new, cur);
    new = strategy::subresource_rules(cur, new, rt, sub);
    // finalizers of an object being deleted
    let deleting = meta::meta_str(cur, "deletionTimestamp").is_some();
    if deleting {
        let old_f = meta::finalizers(cur);
        if meta::finalizers(&new).iter().any(|f| !old_f.contains(f)) {
            let cause = FieldCause::forbidden(
                "metadata.finalizers",
                "no new finalizers can be added if the object is being deleted",
            );
            return Err(ApiError::invalid(&rt.group, &rt.kind, name, &[cause]));
        }
    }
    strategy::normalize(rt, &mut new, false);
    defaults::apply(rt, &mut new);
    meta::normalize(&mut new);
    strategy::validate(rt, &mut new)?;
    crd::on_write(rt, Some(cur), &mut new)?;
    crd::validate_custom(rt, &mut new, Some(cur), w.strict, status_write)?;
    if rt.generation && !status_write && meta::spec_changed(cur, &new, rt.status) {
        meta::set_meta(&mut new, "generation", json!(meta::generation(cur) + 1));
    }
    if let Some(who) = &w.manager {
        super::fieldmanager::record_update(rt, Some(cur), &mut new, given_fields.as_ref(), who);
    }
    defaults::prepare_for_update(alloc, rt, cur, &mut new)?;
    // Upstream's shouldDeleteDuringUpdate: a graceful deletion (simulated Pods) waits.
    let graceful = meta::meta_field(cur, "deletionGracePeriodSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|g| g > 0);
    if deleting
        && !graceful
        && meta::finalizers(&new).is_empty()
        && !strategy::namespace_finalizers(rt, &new)
    {
        return Ok(Change::Remove);
    }
    Ok(Change::Put(new))
}

/// The object's name must be the URL's (set when missing); a namespaced object's namespace
/// must be the URL's (set when missing), a cluster-scoped one has none.
fn check_identity(
    new: &mut Value,
    rt: &ResourceType,
    ns: Option<&str>,
    name: &str,
) -> Result<(), ApiError> {
    match meta::meta_str(new, "name") {
        None | Some("") => meta::set_meta(new, "name", json!(name)),
        Some(n) if n != name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        _ => {}
    }
    if rt.namespaced {
        let url_ns = ns.unwrap_or("");
        match meta::meta_str(new, "namespace") {
            None | Some("") => meta::set_meta(new, "namespace", json!(url_ns)),
            Some(n) if n != url_ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {}
        }
    } else {
        meta::remove_meta(new, "namespace");
    }
    Ok(())
}

/// Optimistic concurrency: a resourceVersion given must be the stored one (a PUT of a custom
/// resource must give one), and a uid given must be the stored one.
fn check_preconditions(
    cur: &Value,
    new: &Value,
    rt: &ResourceType,
    name: &str,
    put: bool,
) -> Result<(), ApiError> {
    let cur_rv = meta::meta_str(cur, "resourceVersion").unwrap_or("");
    match meta::meta_str(new, "resourceVersion").filter(|v| !v.is_empty()) {
        Some(rv) if rv != cur_rv => return Err(ApiError::conflict(&rt.group, &rt.plural, name)),
        None if put && rt.crd.is_some() => {
            let cause = FieldCause::invalid(
                "metadata.resourceVersion",
                &json!("0x0"),
                "must be specified for an update",
            );
            let mut e = ApiError::invalid(&rt.group, &rt.kind, name, &[cause]);
            e.message = format!(
                "{} {name:?} is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update",
                crate::api::status::qualified(&rt.group, &rt.plural)
            );
            return Err(e);
        }
        _ => {}
    }
    if let Some(uid) = meta::meta_str(new, "uid").filter(|u| !u.is_empty())
        && Some(uid) != meta::meta_str(cur, "uid")
    {
        let cause = FieldCause::invalid("metadata.uid", &json!(uid), "field is immutable");
        return Err(ApiError::invalid(&rt.group, &rt.kind, name, &[cause]));
    }
    Ok(())
}

/// The delete itself (no observers; [`super::hooks::delete_object`] runs them after it):
/// preconditions, the propagation policy's finalizer, the kind's deletion rules, then the object is
/// removed or marked.
pub(crate) fn delete(
    api: &Apiserver,
    rt: &Arc<ResourceType>,
    ns: Option<&str>,
    name: &str,
    opts: &DeleteOpts,
) -> Result<(Committed, bool), ApiError> {
    let key = rt.store_key();
    let okey = objects::okey(rt, ns, name);
    let out = api.store.commit_update(&key, &okey, opts.dry_run, |cur| {
        let Some(cur) = cur else {
            return Err(ApiError::not_found(&rt.group, &rt.plural, name));
        };
        let uid = meta::meta_str(cur, "uid").unwrap_or("");
        if let Some(want) = opts.uid.as_deref().filter(|u| *u != uid) {
            return Err(ApiError::new(409, "Conflict", format!("Precondition failed: UID in precondition: {want}, UID in object meta: {uid}")));
        }
        let rv = meta::meta_str(cur, "resourceVersion").unwrap_or("");
        if let Some(want) = opts.resource_version.as_deref().filter(|r| *r != rv) {
            return Err(ApiError::new(
                409,
                "Conflict",
                format!("Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {rv}"),
            ));
        }
        let mut new = cur.clone();
        let mut fins = meta::finalizers(&new);
        let extra = match opts.policy.as_deref() {
            Some("Orphan") => Some("orphan"),
            Some("Foreground") => Some("foregroundDeletion"),
            _ => None,
        };
        if let Some(f) = extra
            && !fins.iter().any(|x| x == f) {
                fins.push(f.to_string());
                meta::set_meta(&mut new, "finalizers", json!(fins));
            }
        if let Some(change) = strategy::pod_graceful_delete(api.kubelet.is_some(), rt, cur, &new, opts.grace) {
            return Ok(change);
        }
        let is_ns = strategy::namespace_finalizers(rt, &new);
        if fins.is_empty() && !is_ns {
            return Ok(Change::Remove);
        }
        if meta::meta_str(&new, "deletionTimestamp").is_none() {
            meta::set_meta(&mut new, "deletionTimestamp", json!(meta::now()));
            meta::set_meta(&mut new, "deletionGracePeriodSeconds", json!(0));
            if rt.generation {
                meta::set_meta(&mut new, "generation", json!(meta::generation(cur) + 1));
            }
        }
        if crd::is_crd_type(rt) {
            crd::mark_terminating(&mut new);
        }
        if rt.is("", "namespaces") {
            new["status"] = json!({"phase": "Terminating"});
        }
        Ok(Change::Put(new))
    })?;
    let removed = out.removed();
    let c = out.into_committed();
    if !opts.dry_run {
        crd::after_commit(api, rt, &c.obj, removed);
    }
    Ok((c, removed))
}
