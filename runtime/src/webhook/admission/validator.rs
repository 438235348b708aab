//! [`CustomValidator`]: admits or denies creates, updates (seeing old and new) and
//! deletes of one kind (Go's `admission.CustomValidator` and `validatorForType`).
//!
//! Each method returns [`Warnings`] to admit, or a [`ValidationError`] to deny with
//! its HTTP code, reason and message (and warnings too).

use std::marker::PhantomData;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::review::{Operation, Request, Response};
use super::{Handler, Webhook};

/// Warnings returned to the client with an admitted (or denied) request.
pub type Warnings = Vec<String>;

/// A denial: the message the client sees, with a code and reason (Go returns an
/// `apierrors` status error for this; a plain error is `403 Forbidden`).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ValidationError {
    /// The HTTP code (`403` forbidden, `422` invalid, ...).
    pub code: u16,
    /// The reason (`Forbidden`, `Invalid`, ...).
    pub reason: String,
    /// What the client sees.
    pub message: String,
    /// Warnings to return with the denial.
    pub warnings: Warnings,
}

impl ValidationError {
    /// A denial with `code`, `reason` and `message`.
    pub fn new(code: u16, reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.into(),
            message: message.into(),
            warnings: Vec::new(),
        }
    }

    /// `403 Forbidden` (what a plain Go error becomes).
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    /// `422 Invalid` (Go's `apierrors.NewInvalid`).
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(422, "Invalid", message)
    }

    /// Adds warnings.
    pub fn with_warnings(mut self, w: impl IntoIterator<Item = String>) -> Self {
        self.warnings.extend(w);
        self
    }

    /// The denial as a response.
    pub fn into_response(self) -> Response {
        Response::denied_with(self.code, self.reason, self.message).with_warnings(self.warnings)
    }
}

impl From<&str> for ValidationError {
    fn from(m: &str) -> Self {
        Self::forbidden(m)
    }
}

impl From<String> for ValidationError {
    fn from(m: String) -> Self {
        Self::forbidden(m)
    }
}

/// Validates objects of kind `K` (Go's `CustomValidator`). Every method admits by
/// default; implement the ones you need.
#[async_trait]
pub trait CustomValidator<K: Send + Sync + 'static>: Send + Sync + 'static {
    /// On create.
    async fn validate_create(&self, _req: &Request, _obj: &K) -> Result<Warnings, ValidationError> {
        Ok(Vec::new())
    }
    /// On update, with the stored object and the new one.
    async fn validate_update(
        &self,
        _req: &Request,
        _old: &K,
        _new: &K,
    ) -> Result<Warnings, ValidationError> {
        Ok(Vec::new())
    }
    /// On delete, with the object being deleted.
    async fn validate_delete(&self, _req: &Request, _obj: &K) -> Result<Warnings, ValidationError> {
        Ok(Vec::new())
    }
}

/// The admission [`Handler`] around a [`CustomValidator`].
pub struct ValidatorHandler<K, V> {
    validator: V,
    _k: PhantomData<fn() -> K>,
}

impl<K, V> ValidatorHandler<K, V> {
    /// A handler for `validator`.
    pub fn new(validator: V) -> Self {
        Self {
            validator,
            _k: PhantomData,
        }
    }
}

/// A [`Webhook`] serving `validator` for `K` (Go's `WithCustomValidator`).
pub fn validating_webhook<K, V>(validator: V) -> Webhook
where
    K: DeserializeOwned + Send + Sync + 'static,
    V: CustomValidator<K>,
{
    Webhook::new(ValidatorHandler::<K, V>::new(validator))
}

/// Decodes `which` object, or the 400 message saying why it cannot be.
fn decode<K: DeserializeOwned>(v: Option<&Value>, which: &str) -> Result<K, String> {
    let Some(v) = v else {
        return Err(format!("there is no {which} to validate"));
    };
    serde_json::from_value(v.clone()).map_err(|e| format!("decoding the {which}: {e}"))
}

#[async_trait]
impl<K, V> Handler for ValidatorHandler<K, V>
where
    K: DeserializeOwned + Send + Sync + 'static,
    V: CustomValidator<K>,
{
    async fn handle(&self, req: &Request) -> Response {
        let res = match req.operation {
            Operation::Create => match decode::<K>(req.object.as_ref(), "object") {
                Ok(o) => self.validator.validate_create(req, &o).await,
                Err(m) => return Response::errored(400, m),
            },
            Operation::Update => {
                let new = match decode::<K>(req.object.as_ref(), "object") {
                    Ok(o) => o,
                    Err(m) => return Response::errored(400, m),
                };
                let old = match decode::<K>(req.old_object.as_ref(), "old object") {
                    Ok(o) => o,
                    Err(m) => return Response::errored(400, m),
                };
                self.validator.validate_update(req, &old, &new).await
            }
            Operation::Delete => match decode::<K>(req.old_object.as_ref(), "old object") {
                Ok(o) => self.validator.validate_delete(req, &o).await,
                Err(m) => return Response::errored(400, m),
            },
            Operation::Connect => Ok(Vec::new()),
        };
        match res {
            Ok(w) => Response::allowed("").with_warnings(w),
            Err(e) => e.into_response(),
        }
    }
}
