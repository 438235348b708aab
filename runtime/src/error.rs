//! The two error shapes every layer shares: [`BoxError`], the boxed error user code and
//! runnables fail with, and [`panic_message`], the text of a caught panic.
//!
//! A leaf: it imports nothing from the crate, so the lowest module can name the same
//! error type as the manager (Go needs nothing of the kind: its `error` is an interface
//! every package already shares).

use std::any::Any;

/// A boxed error from user code: a runnable, a health check, a mutate closure, a
/// finalizer, the cause of a reconcile error. Any `std::error::Error + Send + Sync`
/// (and a `&str` or `String`, through `into()`) converts into it.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A caught panic's message: its payload when that is a `&str` or a `String` (what
/// `panic!` makes), else `"non-string panic payload"`. For logs and the `[recovered]`
/// errors of a reconcile, a runnable or a webhook handler.
pub fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("non-string panic payload")
}

#[cfg(test)]
mod tests {
    use super::panic_message;

    #[test]
    fn a_panic_payload_reads_as_its_message() {
        let literal = std::panic::catch_unwind(|| panic!("literal")).unwrap_err();
        assert_eq!(panic_message(&*literal), "literal");
        let formatted = std::panic::catch_unwind(|| panic!("{}", 7)).unwrap_err();
        assert_eq!(panic_message(&*formatted), "7");
        let other = std::panic::catch_unwind(|| std::panic::panic_any(7u8)).unwrap_err();
        assert_eq!(panic_message(&*other), "non-string panic payload");
    }
}
