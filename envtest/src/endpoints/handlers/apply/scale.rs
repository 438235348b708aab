//! Server-side apply to `/scale` (kubectl `scale --server-side`-style writes, controllers that
//! apply an `autoscaling/v1` `Scale`): the applied `spec.replicas` is the parent's replicas
//! field (`.spec.replicas` of a workload, the CRD's `specReplicasPath`), owned by the manager's
//! `Apply` entry with `subresource: scale` at the parent's apiVersion — upstream's
//! `ScaleHandler` maps the field the same way. A value another manager owns conflicts (409)
//! unless `force`. [`super::super::scale`] calls [`apply`] and renders the parent as a `Scale`.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::meta;
use crate::api::status::ApiError;
use crate::api::validation::FieldCause;
use crate::endpoints::Req;
use crate::endpoints::State;
use crate::endpoints::handlers::{self as verbs, write_opts};
use crate::endpoints::router::ResourceRoute;
use crate::registry::fieldmanager::fieldset::{FieldSet, Path};
use crate::registry::fieldmanager::managed::{self, Conflict, Entry};

/// Applies the `Scale` in `req` to the parent object `name`, whose replicas field is at JSON
/// pointer `ptr`; returns the stored parent.
pub(crate) fn apply(
    state: &Arc<State>,
    r: &ResourceRoute,
    name: &str,
    req: &Req,
    ptr: &str,
) -> Result<Arc<Value>, ApiError> {
    let w = write_opts(&req.query)?;
    let manager = super::manager(req)?;
    let force = req.query.flag("force");
    let body = super::decode(req)?;
    let Some(n) = body.pointer("/spec/replicas").and_then(Value::as_i64) else {
        let cause = FieldCause::required("spec.replicas", "");
        return Err(ApiError::invalid("autoscaling", "Scale", name, &[cause]));
    };
    let path: Path = ptr.split('/').skip(1).map(|s| format!("f:{s}")).collect();
    let api_version = r.rt.api_version();
    verbs::scale::write_parent(state, r, name, w, |cur| {
        let mut entries = managed::read(cur);
        let mine = entries
            .iter()
            .position(|e| e.same_slot(&manager, "Apply", Some("scale")));
        if cur.pointer(ptr) != Some(&json!(n)) {
            let found: Vec<Conflict> = entries
                .iter()
                .enumerate()
                .filter(|(i, e)| Some(*i) != mine && e.set.contains(&path))
                .map(|(_, e)| Conflict::with(e, &path))
                .collect();
            if !found.is_empty() && !force {
                return Err(super::conflict_error(&found));
            }
        } else if mine.is_some_and(|i| entries[i].set.contains(&path)) {
            return Ok(cur.clone());
        }
        let mut new = cur.clone();
        verbs::scale::set_pointer(&mut new, ptr, json!(n));
        if force {
            for (i, e) in entries.iter_mut().enumerate() {
                if Some(i) != mine {
                    e.set.remove(&path);
                }
            }
        }
        let entry = Entry {
            manager: manager.clone(),
            operation: "Apply".into(),
            api_version: api_version.clone(),
            time: meta::now(),
            subresource: Some("scale".into()),
            set: FieldSet::from([path.clone()]),
        };
        match mine {
            Some(i) => entries[i] = entry,
            None => entries.push(entry),
        }
        managed::write(&mut new, &entries);
        Ok(new)
    })
}
