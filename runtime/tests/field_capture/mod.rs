//! Shared by the tests that capture tracing output (`controller_span`,
//! `controller_conflict`): a visitor that records an event's or span's fields as strings.

use std::collections::BTreeMap;
use std::fmt::Debug;

use tracing::field::{Field, Visit};

/// Field name to value (`Debug` form, or the string itself).
pub type Fields = BTreeMap<String, String>;

/// Records every field it visits into the map it borrows.
pub struct Visitor<'a>(pub &'a mut Fields);

impl Visit for Visitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}
