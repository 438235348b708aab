//! [`LabelSelectorPredicate`]: passes objects whose labels match a Kubernetes
//! `LabelSelector` (controller-runtime's `predicate.LabelSelectorPredicate`).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Resource;
use kube::core::{Selector, SelectorExt};

use super::Predicate;
use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};

/// A `LabelSelector` that cannot be turned into a selector.
#[derive(Debug, thiserror::Error)]
#[error("invalid label selector: {0}")]
pub struct SelectorError(String);

/// Passes events whose object's labels match a selector; updates are judged by the new
/// object. An empty selector matches everything, as in Kubernetes.
#[derive(Clone, Debug)]
pub struct LabelSelectorPredicate {
    selector: Selector,
}

impl LabelSelectorPredicate {
    /// Builds the predicate, rejecting what `metav1.LabelSelectorAsSelector` rejects:
    /// unknown operators, `In`/`NotIn` without values, `Exists`/`DoesNotExist` with values.
    pub fn new(selector: &LabelSelector) -> Result<Self, SelectorError> {
        for req in selector.match_expressions.iter().flatten() {
            let n = req.values.as_ref().map_or(0, Vec::len);
            match req.operator.as_str() {
                "In" | "NotIn" if n == 0 => {
                    return Err(SelectorError(format!(
                        "key {:?}: values set can't be empty for operator {}",
                        req.key, req.operator
                    )));
                }
                "Exists" | "DoesNotExist" if n != 0 => {
                    return Err(SelectorError(format!(
                        "key {:?}: values set must be empty for operator {}",
                        req.key, req.operator
                    )));
                }
                "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
                op => {
                    return Err(SelectorError(format!(
                        "key {:?}: {op:?} is not a valid label selector operator",
                        req.key
                    )));
                }
            }
        }
        let selector = Selector::try_from(selector.clone()).map_err(|e| SelectorError(e.0))?;
        Ok(Self { selector })
    }

    /// Whether `obj`'s labels match.
    pub fn matches<K: Resource>(&self, obj: &K) -> bool {
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        self.selector
            .matches(obj.meta().labels.as_ref().unwrap_or(&EMPTY))
    }
}

impl<K: Resource + 'static> Predicate<K> for LabelSelectorPredicate {
    fn create(&self, e: &CreateEvent<K>) -> bool {
        self.matches(&*e.object)
    }
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        self.matches(&*e.object_new)
    }
    fn delete(&self, e: &DeleteEvent<K>) -> bool {
        self.matches(&*e.object)
    }
    fn generic(&self, e: &GenericEvent<K>) -> bool {
        self.matches(&*e.object)
    }
}
