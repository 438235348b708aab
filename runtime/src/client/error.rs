//! [`Error`]: a failed client call, saying what was done to which object where, plus
//! controller-runtime's `IgnoreNotFound` / `IgnoreAlreadyExists` helpers.

use std::fmt;

/// Where a client error came from.
#[derive(Debug, thiserror::Error)]
pub enum Source {
    /// The API server (writes, uncached reads).
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// The cache (cached reads).
    #[error(transparent)]
    Cache(#[from] crate::cache::Error),
    /// The object could not be serialized.
    #[error("cannot serialize object: {0}")]
    Serialize(#[from] serde_json::Error),
    /// The client refused the call before sending it (e.g. a [`NamespacedClient`]
    /// given an object of another namespace).
    ///
    /// [`NamespacedClient`]: super::NamespacedClient
    #[error("{0}")]
    Refused(String),
}

/// A failed client call: the verb, the `apiVersion/Kind`, the object's
/// `namespace/name` (or the namespace of a collection) and the cause.
#[derive(Debug)]
pub struct Error {
    /// `get`, `list`, `create`, `update`, `patch`, `delete`, `deletecollection`, with a
    /// `status ` prefix for the status subresource.
    pub verb: String,
    /// `apiVersion/Kind`.
    pub kind: String,
    /// `namespace/name`, `name`, a namespace, or empty (all namespaces).
    pub key: String,
    /// The cause (boxed: keeps `Result<_, Error>` small).
    pub source: Box<Source>,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.key.is_empty() {
            String::new()
        } else {
            format!(" {}", self.key)
        };
        write!(f, "{} {}{}: {}", self.verb, self.kind, at, self.source)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

impl Error {
    pub(crate) fn new(verb: &str, kind: String, key: String, source: impl Into<Source>) -> Self {
        Self {
            verb: verb.to_string(),
            kind,
            key,
            source: Box::new(source.into()),
        }
    }

    fn status(&self) -> Option<&kube::core::Status> {
        match &*self.source {
            Source::Kube(kube::Error::Api(s)) => Some(s),
            _ => None,
        }
    }

    /// The object does not exist (a 404 from the server, or not in the cache).
    pub fn is_not_found(&self) -> bool {
        match &*self.source {
            Source::Cache(e) => e.is_not_found(),
            _ => self.status().is_some_and(|s| s.is_not_found()),
        }
    }

    /// A cached read of a read-your-own-writes client timed out waiting for the cache to
    /// observe one of the client's writes (`cache::Error::ReadYourWritesTimeout`).
    pub fn is_read_your_writes_timeout(&self) -> bool {
        matches!(
            &*self.source,
            Source::Cache(crate::cache::Error::ReadYourWritesTimeout { .. })
        )
    }

    /// The object already exists (409 AlreadyExists).
    pub fn is_already_exists(&self) -> bool {
        self.status().is_some_and(|s| s.is_already_exists())
    }

    /// The write lost a race on `resourceVersion` (409 Conflict).
    pub fn is_conflict(&self) -> bool {
        self.status().is_some_and(|s| s.is_conflict())
    }

    /// The object failed validation (422 Invalid).
    pub fn is_invalid(&self) -> bool {
        self.status().is_some_and(|s| s.is_invalid())
    }

    /// The HTTP status code, when the server answered with an error.
    pub fn code(&self) -> Option<u16> {
        self.status().map(|s| s.code)
    }
}

/// `Ok(None)` for a NotFound error (controller-runtime's `client.IgnoreNotFound`).
pub fn ignore_not_found<T>(r: Result<T, Error>) -> Result<Option<T>, Error> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// `Ok(None)` for an AlreadyExists error (controller-runtime's
/// `client.IgnoreAlreadyExists`).
pub fn ignore_already_exists<T>(r: Result<T, Error>) -> Result<Option<T>, Error> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_already_exists() => Ok(None),
        Err(e) => Err(e),
    }
}
