//! Finalizer lists: add, remove, check one finalizer on an object's metadata
//! (controller-runtime's `controllerutil.AddFinalizer` and friends). They only edit
//! the object; writing it is the caller's job (or [`super::Finalizers`]' caller's).

use kube::Resource;

/// Adds `finalizer` unless present; returns whether the list changed.
pub fn add_finalizer<K: Resource>(obj: &mut K, finalizer: &str) -> bool {
    if contains_finalizer(obj, finalizer) {
        return false;
    }
    obj.meta_mut()
        .finalizers
        .get_or_insert_with(Vec::new)
        .push(finalizer.to_string());
    true
}

/// Removes every occurrence of `finalizer`; returns whether the list changed.
pub fn remove_finalizer<K: Resource>(obj: &mut K, finalizer: &str) -> bool {
    let Some(list) = obj.meta_mut().finalizers.as_mut() else {
        return false;
    };
    let before = list.len();
    list.retain(|f| f != finalizer);
    before != list.len()
}

/// Whether `finalizer` is on the object.
pub fn contains_finalizer<K: Resource>(obj: &K, finalizer: &str) -> bool {
    obj.meta()
        .finalizers
        .as_deref()
        .is_some_and(|l| l.iter().any(|f| f == finalizer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    #[test]
    fn add_remove_contains_are_idempotent() {
        let mut cm = ConfigMap::default();
        assert!(!contains_finalizer(&cm, "f"));
        assert!(!remove_finalizer(&mut cm, "f"));
        assert!(add_finalizer(&mut cm, "f"));
        assert!(!add_finalizer(&mut cm, "f"));
        assert!(contains_finalizer(&cm, "f"));
        assert_eq!(
            cm.metadata.finalizers.as_deref(),
            Some(&["f".to_string()][..])
        );
        cm.metadata.finalizers = Some(vec!["f".into(), "g".into(), "f".into()]);
        assert!(remove_finalizer(&mut cm, "f"));
        assert!(!remove_finalizer(&mut cm, "f"));
        assert_eq!(
            cm.metadata.finalizers.as_deref(),
            Some(&["g".to_string()][..])
        );
    }
}
