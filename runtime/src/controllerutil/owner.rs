//! Owner references (controller-runtime's `controllerutil.SetControllerReference`,
//! `SetOwnerReference`, `RemoveOwnerReference`, `HasControllerReference`,
//! `HasOwnerReference`, and apimachinery's `GetControllerOf`).
//!
//! Owners of a dynamic type (a `DynamicObject` with its `ApiResource`) use the
//! `*_dynamic(owner, &dt, ..)` forms; the object may be of any type either way.
//!
//! References are matched as Go matches them: by API group (the version is ignored),
//! kind and name. Setting a reference that matches an existing one replaces it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;

use super::Error;

/// Options of the reference being set (Go's `OwnerReferenceOption`s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OwnerReferenceOptions {
    /// `blockOwnerDeletion` (Go's `WithBlockOwnerDeletion`). `None` keeps the default:
    /// true for a controller reference, unset for a plain owner reference.
    pub block_owner_deletion: Option<bool>,
}

/// The group of an apiVersion (`apps/v1` -> `apps`, `v1` -> ``).
fn group_of(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(g, _)| g)
}

/// Go's `referSameObject`: same group, kind and name.
fn same_object(a: &OwnerReference, b: &OwnerReference) -> bool {
    group_of(&a.api_version) == group_of(&b.api_version) && a.kind == b.kind && a.name == b.name
}

/// A reference to `owner` of dynamic type `dt`, without the controller and
/// block-owner-deletion flags.
fn reference_to_dynamic<O: Resource>(owner: &O, dt: &O::DynamicType) -> OwnerReference {
    let m = owner.meta();
    OwnerReference {
        api_version: O::api_version(dt).into_owned(),
        kind: O::kind(dt).into_owned(),
        name: m.name.clone().unwrap_or_default(),
        uid: m.uid.clone().unwrap_or_default(),
        controller: None,
        block_owner_deletion: None,
    }
}

/// Go's `validateOwner`: a namespaced owner must be in the object's namespace.
fn validate_owner<O: Resource, K: Resource>(owner: &O, obj: &K) -> Result<(), Error> {
    let owner_ns = owner.meta().namespace.as_deref().unwrap_or_default();
    if owner_ns.is_empty() {
        return Ok(());
    }
    let obj_ns = obj.meta().namespace.as_deref().unwrap_or_default();
    if obj_ns.is_empty() {
        return Err(Error::ClusterScopedWithNamespacedOwner {
            owner_namespace: owner_ns.to_string(),
        });
    }
    if owner_ns != obj_ns {
        return Err(Error::CrossNamespaceOwner {
            owner_namespace: owner_ns.to_string(),
            object_namespace: obj_ns.to_string(),
        });
    }
    Ok(())
}

/// Adds `r`, or replaces the reference to the same object.
fn upsert<K: Resource>(obj: &mut K, r: OwnerReference) {
    let refs = obj.meta_mut().owner_references.get_or_insert_with(Vec::new);
    match refs.iter_mut().find(|e| same_object(e, &r)) {
        Some(e) => *e = r,
        None => refs.push(r),
    }
}

/// Makes `owner` the controller of `obj` (`controller: true`,
/// `blockOwnerDeletion: true`), so the builder's `owns` reconciles `owner` when `obj`
/// changes and the garbage collector deletes `obj` with it. Fails with
/// [`Error::AlreadyOwned`] when another object controls `obj`.
pub fn set_controller_reference<O, K>(owner: &O, obj: &mut K) -> Result<(), Error>
where
    O: Resource<DynamicType = ()>,
    K: Resource,
{
    set_controller_reference_with(owner, obj, OwnerReferenceOptions::default())
}

/// [`set_controller_reference`] with options.
pub fn set_controller_reference_with<O, K>(
    owner: &O,
    obj: &mut K,
    opts: OwnerReferenceOptions,
) -> Result<(), Error>
where
    O: Resource<DynamicType = ()>,
    K: Resource,
{
    set_controller_reference_dynamic(owner, &(), obj, opts)
}

/// [`set_controller_reference_with`] for an owner of dynamic type `dt` (a
/// `DynamicObject` and its `ApiResource`).
pub fn set_controller_reference_dynamic<O, K>(
    owner: &O,
    dt: &O::DynamicType,
    obj: &mut K,
    opts: OwnerReferenceOptions,
) -> Result<(), Error>
where
    O: Resource,
    K: Resource,
{
    validate_owner(owner, obj)?;
    let mut r = reference_to_dynamic(owner, dt);
    r.controller = Some(true);
    r.block_owner_deletion = Some(opts.block_owner_deletion.unwrap_or(true));
    let refs = obj.meta().owner_references.as_deref().unwrap_or_default();
    if let Some(existing) = refs.iter().find(|e| e.controller == Some(true))
        && !same_object(existing, &r)
    {
        let m = obj.meta();
        return Err(Error::AlreadyOwned {
            object: format!(
                "{}/{}",
                m.namespace.as_deref().unwrap_or_default(),
                m.name.as_deref().unwrap_or_default()
            ),
            owner_kind: existing.kind.clone(),
            owner_name: existing.name.clone(),
        });
    }
    upsert(obj, r);
    Ok(())
}

/// Adds `owner` as a (non-controller) owner of `obj`: the garbage collector deletes
/// `obj` once all its owners are gone.
pub fn set_owner_reference<O, K>(owner: &O, obj: &mut K) -> Result<(), Error>
where
    O: Resource<DynamicType = ()>,
    K: Resource,
{
    set_owner_reference_with(owner, obj, OwnerReferenceOptions::default())
}

/// [`set_owner_reference`] with options.
pub fn set_owner_reference_with<O, K>(
    owner: &O,
    obj: &mut K,
    opts: OwnerReferenceOptions,
) -> Result<(), Error>
where
    O: Resource<DynamicType = ()>,
    K: Resource,
{
    set_owner_reference_dynamic(owner, &(), obj, opts)
}

/// [`set_owner_reference_with`] for an owner of dynamic type `dt`.
pub fn set_owner_reference_dynamic<O, K>(
    owner: &O,
    dt: &O::DynamicType,
    obj: &mut K,
    opts: OwnerReferenceOptions,
) -> Result<(), Error>
where
    O: Resource,
    K: Resource,
{
    validate_owner(owner, obj)?;
    let mut r = reference_to_dynamic(owner, dt);
    r.block_owner_deletion = opts.block_owner_deletion;
    upsert(obj, r);
    Ok(())
}

/// Removes the reference to `owner` from `obj`; fails with
/// [`Error::NoOwnerReference`] when there is none.
pub fn remove_owner_reference<O, K>(owner: &O, obj: &mut K) -> Result<(), Error>
where
    O: Resource<DynamicType = ()>,
    K: Resource<DynamicType = ()>,
{
    remove_matching(owner, &(), obj, false, || K::kind(&()).into_owned())
}

/// Removes the controller reference to `owner` from `obj`; fails with
/// [`Error::NoOwnerReference`] when `owner` is not `obj`'s controller.
pub fn remove_controller_reference<O, K>(owner: &O, obj: &mut K) -> Result<(), Error>
where
    O: Resource<DynamicType = ()>,
    K: Resource<DynamicType = ()>,
{
    remove_matching(owner, &(), obj, true, || K::kind(&()).into_owned())
}

/// [`remove_owner_reference`] for an owner of dynamic type `dt`; the error names the
/// object by name, as its kind may not be known.
pub fn remove_owner_reference_dynamic<O, K>(
    owner: &O,
    dt: &O::DynamicType,
    obj: &mut K,
) -> Result<(), Error>
where
    O: Resource,
    K: Resource,
{
    let kind = obj
        .meta()
        .name
        .clone()
        .map_or_else(String::new, |n| format!("object {n}"));
    remove_matching(owner, dt, obj, false, || kind)
}

fn remove_matching<O, K>(
    owner: &O,
    dt: &O::DynamicType,
    obj: &mut K,
    controller_only: bool,
    object_kind: impl FnOnce() -> String,
) -> Result<(), Error>
where
    O: Resource,
    K: Resource,
{
    let r = reference_to_dynamic(owner, dt);
    let refs = obj.meta_mut().owner_references.get_or_insert_with(Vec::new);
    let index = refs
        .iter()
        .position(|e| same_object(e, &r) && (!controller_only || e.controller == Some(true)));
    match index {
        Some(i) => {
            refs.remove(i);
            Ok(())
        }
        None => Err(Error::NoOwnerReference {
            object_kind: object_kind(),
            owner_kind: r.kind,
        }),
    }
}

/// `obj`'s controller reference, if it has one (apimachinery's `metav1.GetControllerOf`).
pub fn get_controller_of<K: Resource>(obj: &K) -> Option<&OwnerReference> {
    obj.meta()
        .owner_references
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|r| r.controller == Some(true))
}

/// Whether `obj` has a controller reference (to anything).
pub fn has_controller_reference<K: Resource>(obj: &K) -> bool {
    get_controller_of(obj).is_some()
}

/// Whether `obj` has a reference (controller or not) to `owner`.
pub fn has_owner_reference<K, O>(obj: &K, owner: &O) -> bool
where
    K: Resource,
    O: Resource<DynamicType = ()>,
{
    has_owner_reference_dynamic(obj, owner, &())
}

/// [`has_owner_reference`] for an owner of dynamic type `dt`.
pub fn has_owner_reference_dynamic<K, O>(obj: &K, owner: &O, dt: &O::DynamicType) -> bool
where
    K: Resource,
    O: Resource,
{
    let r = reference_to_dynamic(owner, dt);
    obj.meta()
        .owner_references
        .as_deref()
        .unwrap_or_default()
        .iter()
        .any(|e| same_object(e, &r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use k8s_openapi::api::core::v1::Namespace;

    fn rs(ns: &str, name: &str, uid: &str) -> ReplicaSet {
        let mut r = ReplicaSet::default();
        r.metadata.namespace = Some(ns.into());
        r.metadata.name = Some(name.into());
        r.metadata.uid = Some(uid.into());
        r
    }

    fn dep(ns: &str, name: &str) -> Deployment {
        let mut d = Deployment::default();
        d.metadata.namespace = Some(ns.into());
        d.metadata.name = Some(name.into());
        d
    }

    #[test]
    fn controller_reference_is_set_once_and_guards_against_other_controllers() {
        let owner = rs("ns", "foo", "foo-uid");
        let mut d = dep("ns", "d");
        set_controller_reference(&owner, &mut d).expect("set");
        let refs = d.metadata.owner_references.clone().unwrap_or_default();
        assert_eq!(
            refs,
            vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: "ReplicaSet".into(),
                name: "foo".into(),
                uid: "foo-uid".into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]
        );
        assert!(has_controller_reference(&d));
        // Setting it again replaces, not duplicates.
        set_controller_reference(&owner, &mut d).expect("again");
        assert_eq!(d.metadata.owner_references.as_ref().map(Vec::len), Some(1));
        let other = rs("ns", "bar", "bar-uid");
        let err = set_controller_reference(&other, &mut d).expect_err("owned");
        assert!(err.is_already_owned());
        assert_eq!(
            err.to_string(),
            "Object ns/d is already owned by another ReplicaSet controller foo"
        );
        // A plain owner reference can still be added.
        set_owner_reference(&other, &mut d).expect("owner ref");
        assert!(has_owner_reference(&d, &other));
        assert_eq!(d.metadata.owner_references.as_ref().map(Vec::len), Some(2));
        // The controller among them is still foo.
        let controller = get_controller_of(&d).expect("a controller");
        assert_eq!(
            (controller.name.as_str(), controller.uid.as_str()),
            ("foo", "foo-uid")
        );
        assert!(get_controller_of(&dep("ns", "unowned")).is_none());
    }

    #[test]
    fn block_owner_deletion_option_and_plain_owner_refs() {
        let owner = rs("ns", "foo", "u");
        let mut d = dep("ns", "d");
        let opts = OwnerReferenceOptions {
            block_owner_deletion: Some(false),
        };
        set_controller_reference_with(&owner, &mut d, opts).expect("set");
        let r = &d.metadata.owner_references.as_ref().expect("refs")[0];
        assert_eq!(r.block_owner_deletion, Some(false));
        let mut d2 = dep("ns", "d2");
        set_owner_reference(&owner, &mut d2).expect("set");
        let r = &d2.metadata.owner_references.as_ref().expect("refs")[0];
        assert_eq!((r.controller, r.block_owner_deletion), (None, None));
        assert!(!has_controller_reference(&d2));
    }

    #[test]
    fn namespaces_are_validated() {
        let owner = rs("ns1", "foo", "u");
        let mut d = dep("ns2", "d");
        let err = set_owner_reference(&owner, &mut d).expect_err("cross");
        assert!(matches!(err, Error::CrossNamespaceOwner { .. }), "{err}");
        let mut ns = Namespace::default();
        ns.metadata.name = Some("cluster-scoped".into());
        let err = set_controller_reference(&owner, &mut ns).expect_err("cluster");
        assert!(
            matches!(err, Error::ClusterScopedWithNamespacedOwner { .. }),
            "{err}"
        );
        // A cluster-scoped owner may own a namespaced object.
        let mut cluster_owner = Namespace::default();
        cluster_owner.metadata.name = Some("owner".into());
        set_owner_reference(&cluster_owner, &mut d).expect("cluster owner");
        assert!(d.metadata.owner_references.is_some());
    }

    #[test]
    fn remove_owner_and_controller_references() {
        let a = rs("ns", "a", "ua");
        let b = rs("ns", "b", "ub");
        let mut d = dep("ns", "d");
        assert!(matches!(
            remove_owner_reference(&a, &mut d),
            Err(Error::NoOwnerReference { .. })
        ));
        set_owner_reference(&a, &mut d).expect("a");
        set_controller_reference(&b, &mut d).expect("b");
        assert!(remove_controller_reference(&a, &mut d).is_err());
        remove_owner_reference(&a, &mut d).expect("remove a");
        assert!(!has_owner_reference(&d, &a));
        remove_controller_reference(&b, &mut d).expect("remove b");
        assert!(!has_controller_reference(&d));
        assert_eq!(d.metadata.owner_references.as_ref().map(Vec::len), Some(0));
    }

    #[test]
    fn dynamic_owners_take_their_type_from_the_api_resource() {
        use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("x.io", "v2", "Gizmo"));
        let mut owner = DynamicObject::new("g", &ar).within("ns");
        owner.metadata.uid = Some("g-uid".into());
        let mut d = dep("ns", "d");
        set_controller_reference_dynamic(&owner, &ar, &mut d, OwnerReferenceOptions::default())
            .expect("set");
        let r = &d.metadata.owner_references.as_ref().expect("refs")[0];
        assert_eq!(
            (r.api_version.as_str(), r.kind.as_str()),
            ("x.io/v2", "Gizmo")
        );
        assert_eq!((r.controller, r.uid.as_str()), (Some(true), "g-uid"));
        assert!(has_owner_reference_dynamic(&d, &owner, &ar));
        remove_owner_reference_dynamic(&owner, &ar, &mut d).expect("remove");
        assert!(!has_owner_reference_dynamic(&d, &owner, &ar));
        let err = remove_owner_reference_dynamic(&owner, &ar, &mut d).expect_err("gone");
        assert_eq!(
            err.to_string(),
            "object d does not have an owner reference for Gizmo"
        );
    }
}
