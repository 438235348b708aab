//! The warnings of one request for its client (kube-apiserver's `pkg/warning` recorder): field
//! validation and admission webhooks add them, the server writes them as `Warning` headers.

use std::sync::Arc;

use http::{HeaderMap, HeaderValue, header};
use serde_json::Value;

/// The warnings of one request (admission webhooks' `warnings`), shared by the request and
/// the server, which writes each as a `Warning: 299 - "<text>"` response header, as the API
/// server's warning recorder does (empty ones dropped, duplicates once).
#[derive(Clone, Debug, Default)]
pub(crate) struct Warnings(Arc<parking_lot::Mutex<Vec<String>>>);

impl Warnings {
    /// Records one warning.
    pub fn add(&self, text: &str) {
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        let mut all = self.0.lock();
        if !all.iter().any(|w| w == text) {
            all.push(text.to_string());
        }
    }

    /// Records every string of a JSON array (a webhook response's `warnings`).
    pub fn add_all(&self, list: Option<&Value>) {
        for w in list.and_then(Value::as_array).into_iter().flatten() {
            if let Some(w) = w.as_str() {
                self.add(w);
            }
        }
    }

    /// Appends the `Warning` headers to a response.
    pub(crate) fn write(&self, headers: &mut HeaderMap) {
        for text in self.0.lock().iter() {
            let quoted: String = text
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect::<String>()
                .replace('\\', "\\\\")
                .replace('"', "\\\"");
            match HeaderValue::from_bytes(format!("299 - \"{quoted}\"").as_bytes()) {
                Ok(v) => {
                    headers.append(header::WARNING, v);
                }
                Err(e) => tracing::debug!(warning = %text, error = %e, "warning not sent"),
            }
        }
    }
}
