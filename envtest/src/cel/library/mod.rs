//! The Kubernetes CEL libraries (`k8s.io/apiserver/pkg/cel/library`) that cel-rust does not ship:
//! lists, regex, URLs, quantities, IPs and CIDRs. Most are context functions (cel-rust calls
//! them with any argument types, and each checks its own); the two names the strings extension
//! already declares on the env (`indexOf`, `lastIndexOf`) get list overloads on the env instead.
//! [`super::env`] installs both; nothing here knows about schemas or objects. The values they
//! wrap (quantities, addresses, URLs) are parsed by [`crate::api`], which the registry's
//! `format` checks and Pod defaulting share without CEL.

mod lists;
mod net;
mod quantity;
mod regex;
mod url;

use cel::{Context, Env, ExecutionError};

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
