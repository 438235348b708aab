//! The Kubernetes CEL libraries (`k8s.io/apiserver/pkg/cel/library`) that cel-rust does not ship:
//! lists, regex, URLs, quantities, IPs and CIDRs. Most are context functions (cel-rust calls
//! them with any argument types, and each checks its own); the two names the strings extension
//! already declares on the env (`indexOf`, `lastIndexOf`) get list overloads on the env instead.
//! [`super::env`] installs both; nothing here knows about schemas or objects.

mod lists;
mod net;
pub(crate) mod quantity;
mod regex;
mod url;

use cel::{Context, Env, ExecutionError};

pub(crate) use net::{parse_cidr, parse_ip};

/// Whether `s` is a URL as `isURL` accepts it.
pub(crate) fn is_url(s: &str) -> bool {
    url::Url::parse(s).is_some()
}

/// A function's error, as cel-go words them: `<function>: <message>`.
pub(super) fn fail(function: &str, message: impl ToString) -> ExecutionError {
    ExecutionError::function_error(function, message)
}

/// Declares the env overloads of the libraries.
pub(super) fn declare(env: &mut Env) -> Result<(), cel::DeclarationError> {
    lists::declare(env)
}

/// Adds the context functions of the libraries.
pub(super) fn register(ctx: &mut Context) -> Result<(), cel::DeclarationError> {
    lists::register(ctx)?;
    regex::register(ctx)?;
    quantity::register(ctx)?;
    net::register(ctx)?;
    url::register(ctx)
}
