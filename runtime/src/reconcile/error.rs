//! [`Error`]: a failed reconcile, retried with backoff unless it is terminal.

use std::fmt;

use crate::error::BoxError;

/// Why a reconcile failed.
///
/// Any `std::error::Error` converts into it, so `?` works in reconcilers. An ordinary
/// error makes the controller re-add the request through its rate limiter; an
/// [`Error::terminal`] one (controller-runtime's `reconcile.TerminalError`) is logged
/// and counted in `controller_runtime_terminal_reconcile_errors_total` but never
/// retried: only a new event brings the object back.
pub struct Error {
    inner: BoxError,
    terminal: bool,
}

impl Error {
    /// A retryable error.
    pub fn new(err: impl Into<BoxError>) -> Self {
        Self {
            inner: err.into(),
            terminal: false,
        }
    }

    /// An error that retrying cannot fix: counted, logged, never requeued.
    pub fn terminal(err: impl Into<BoxError>) -> Self {
        Self {
            inner: err.into(),
            terminal: true,
        }
    }

    /// Whether this error is terminal.
    pub fn is_terminal(&self) -> bool {
        self.terminal
    }

    /// The underlying error.
    pub fn inner(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.inner
    }

    /// Takes the underlying error out.
    pub fn into_inner(self) -> BoxError {
        self.inner
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for Error {
    fn from(err: E) -> Self {
        Self::new(err)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.terminal {
            write!(f, "terminal error: {}", self.inner)
        } else {
            fmt::Display::fmt(&self.inner, f)
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("inner", &self.inner)
            .field("terminal", &self.terminal)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_flag_and_display() {
        let e = Error::new("boom");
        assert!(!e.is_terminal());
        assert_eq!(e.to_string(), "boom");
        let t = Error::terminal("bad spec");
        assert!(t.is_terminal());
        assert_eq!(t.to_string(), "terminal error: bad spec");
        let io: Error = std::io::Error::other("io").into();
        assert!(!io.is_terminal());
        assert_eq!(io.inner().to_string(), "io");
    }
}
