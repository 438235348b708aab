//! The object filter of list, watch and deletecollection requests: the URL namespace plus the
//! `labelSelector` and `fieldSelector` query parameters, parsed with `selector` and checked
//! against the fields the resource type supports (unsupported field → 400).

use serde_json::Value;

use crate::api::selector::{FieldSelector, LabelSelector};
use crate::api::status::ApiError;
use crate::endpoints::router::Query;
use crate::registry::ResourceType;

/// Which objects a collection request addresses.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    pub namespace: Option<String>,
    label: Option<LabelSelector>,
    field: Option<FieldSelector>,
}

impl Filter {
    pub fn parse(
        q: &Query,
        rt: &ResourceType,
        namespace: Option<String>,
    ) -> Result<Filter, ApiError> {
        let label = match q.value("labelSelector") {
            Some(s) => Some(LabelSelector::parse(s).map_err(ApiError::bad_request)?)
                .filter(|l| !l.is_empty()),
            None => None,
        };
        let field = match q.value("fieldSelector") {
            Some(s) => Some(FieldSelector::parse(s).map_err(ApiError::bad_request)?)
                .filter(|f| !f.is_empty()),
            None => None,
        };
        if let Some(f) = &field {
            for name in f.fields() {
                let known = name == "metadata.name"
                    || name == "metadata.namespace"
                    || rt.fields.iter().any(|x| x == name);
                if !known {
                    let msg = if rt.crd.is_some() {
                        format!(
                            "{name:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
                        )
                    } else {
                        format!("field label not supported: {name}")
                    };
                    return Err(ApiError::bad_request(msg));
                }
            }
        }
        Ok(Filter {
            namespace,
            label,
            field,
        })
    }

    /// Whether only the namespace restricts (no selectors).
    pub fn no_selectors(&self) -> bool {
        self.label.is_none() && self.field.is_none()
    }

    /// The selectors match the object (the namespace is checked by the caller's key range).
    pub fn matches(&self, obj: &Value) -> bool {
        self.label.as_ref().is_none_or(|l| l.matches_object(obj))
            && self.field.as_ref().is_none_or(|f| f.matches(obj))
    }

    pub fn in_namespace(&self, ns: &str) -> bool {
        self.namespace.as_deref().is_none_or(|n| n == ns)
    }
}
