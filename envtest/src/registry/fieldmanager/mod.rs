//! The field manager (`k8s.io/apimachinery/pkg/util/managedfields/internal/fieldmanager.go`, once
//! kube-apiserver's `endpoints/handlers/fieldmanager`): who owns which field of an object, as
//! `metadata.managedFields`. [`fieldset`] holds the field paths and their `fieldsV1` form,
//! [`managed`] the entries and the apply step (conflicts, merge, removal of dropped fields),
//! [`compare`] the difference of two objects, and [`update`] the `Update` entries of non-apply
//! writes ([`record_update`], called by [`super::rest`]; a create's is built in one walk by
//! [`create`]). Server-side apply ([`endpoints::handlers::apply`](crate::endpoints::handlers::apply))
//! drives `managed`. Calls `api` and the registry's types only.

pub(crate) mod compare;
mod create;
pub(crate) mod fieldset;
pub(crate) mod managed;
pub(crate) mod update;

pub(crate) use update::{Writer, record_update};
