//! [`WriteOptions`]: the per-call options of a create or update (controller-runtime's
//! `client.CreateOption` / `UpdateOption`: `DryRunAll`, `FieldOwner`,
//! `FieldValidation`), merged with the client-wide ones ([`Client::with_dry_run`],
//! [`Client::with_field_validation`], [`Client::with_field_owner`]) and sent as the
//! request's query (`?dryRun=All&fieldManager=..&fieldValidation=..`).
//!
//! kube's `PostParams` carries no `fieldValidation`, so creates and updates are built
//! here with kube's request builder (`kube::core::Request`) and sent through
//! `kube::Client::request`; patches carry it in kube's `PatchParams`. The writes
//! (`super::write`), the status and subresource clients (`super::status`,
//! `super::subresource`) all send through [`Client::send_json`].

use kube::api::{DeleteParams, PatchParams, PostParams};
use serde::de::DeserializeOwned;

pub use kube::core::params::ValidationDirective as FieldValidation;

use super::Client;

/// Options of one create or update (controller-runtime's `CreateOptions` /
/// `UpdateOptions`). Unset fields fall back to the client's.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// Run every stage of the write but store nothing (Go's `client.DryRunAll`); the
    /// server answers with what it would have stored.
    pub dry_run: bool,
    /// The field manager recorded in `managedFields` (Go's `client.FieldOwner`).
    pub field_manager: Option<String>,
    /// What the server does with unknown or duplicate fields (Go's
    /// `client.FieldValidation`): `Strict` fails with 400, `Warn` answers with
    /// `Warning` headers, `Ignore` drops them silently. Defaults to the server's
    /// default (`Warn` upstream).
    pub field_validation: Option<FieldValidation>,
}

impl WriteOptions {
    /// No options: the client's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Store nothing (`dryRun=All`).
    pub fn dry_run_all(mut self) -> Self {
        self.dry_run = true;
        self
    }

    /// Record the write as `manager`'s.
    pub fn field_manager(mut self, manager: impl Into<String>) -> Self {
        self.field_manager = Some(manager.into());
        self
    }

    /// Validate fields with `v`.
    pub fn field_validation(mut self, v: FieldValidation) -> Self {
        self.field_validation = Some(v);
        self
    }
}

impl Client {
    /// `opts` completed with the client-wide options.
    pub(crate) fn write_options(&self, opts: &WriteOptions) -> WriteOptions {
        WriteOptions {
            dry_run: opts.dry_run || self.dry_run,
            field_manager: opts
                .field_manager
                .clone()
                .or_else(|| self.field_owner.clone()),
            field_validation: opts
                .field_validation
                .clone()
                .or_else(|| self.field_validation.clone()),
        }
    }

    /// `pp` with the client's field owner, dry-run and field validation when it sets
    /// none.
    pub(crate) fn patch_params(&self, mut pp: PatchParams) -> PatchParams {
        if pp.field_manager.is_none() {
            pp.field_manager = self.field_owner.clone();
        }
        if pp.field_validation.is_none() {
            pp.field_validation = self.field_validation.clone();
        }
        pp.dry_run |= self.dry_run;
        pp
    }

    /// `dp`, dry-run when the client is.
    pub(crate) fn delete_params(&self, dp: &DeleteParams) -> DeleteParams {
        let mut dp = dp.clone();
        dp.dry_run |= self.dry_run;
        dp
    }

    /// Sends a create or update built by `build` (kube's request builder, given the
    /// `PostParams` of `opts`), adding `fieldValidation`, and decodes the answer.
    pub(crate) async fn send_json<T: DeserializeOwned>(
        &self,
        opts: &WriteOptions,
        build: impl FnOnce(&PostParams) -> Result<http::Request<Vec<u8>>, kube::core::request::Error>,
    ) -> Result<T, kube::Error> {
        let opts = self.write_options(opts);
        let pp = PostParams {
            dry_run: opts.dry_run,
            field_manager: opts.field_manager,
        };
        let mut req = build(&pp).map_err(kube::Error::BuildRequest)?;
        if let Some(v) = &opts.field_validation {
            add_query(&mut req, "fieldValidation", v.as_str())?;
        }
        self.kube.request::<T>(req).await
    }
}

/// Appends `key=value` to the request's query.
fn add_query<B>(req: &mut http::Request<B>, key: &str, value: &str) -> Result<(), kube::Error> {
    let uri = req.uri().to_string();
    let sep = if uri.contains('?') { '&' } else { '?' };
    let uri = format!("{uri}{sep}{key}={value}")
        .parse::<http::Uri>()
        .map_err(|e| {
            kube::Error::BuildRequest(kube::core::request::Error::BuildRequest(e.into()))
        })?;
    *req.uri_mut() = uri;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_pairs_are_appended() {
        let mut req = http::Request::post("/api/v1/x?&dryRun=All")
            .body(())
            .expect("req");
        add_query(&mut req, "fieldValidation", "Strict").expect("uri");
        assert_eq!(
            req.uri().to_string(),
            "/api/v1/x?&dryRun=All&fieldValidation=Strict"
        );
        let mut req = http::Request::put("/api/v1/x").body(()).expect("req");
        add_query(&mut req, "fieldValidation", "Warn").expect("uri");
        assert_eq!(req.uri().query(), Some("fieldValidation=Warn"));
    }
}
