//! The pieces of a log line that zap's options shape and `tracing-subscriber` does
//! not have: the timestamp encodings of `--zap-time-encoding` ([`TimeEncoding`], a
//! `FormatTime`) and stack traces on lines at or above `--zap-stacktrace-level`
//! ([`WithStacktrace`], a wrapper around the JSON or console event format).

use std::backtrace::Backtrace;
use std::fmt;
use std::str::FromStr;

use k8s_openapi::jiff::Timestamp;
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use super::StacktraceLevel;

/// How timestamps are written (zap's `Options.TimeEncoder`, the
/// `--zap-time-encoding` flag). Times are UTC.
///
/// ```
/// use ctrl_runtime::log::TimeEncoding;
/// assert_eq!("RFC3339Nano".parse::<TimeEncoding>(), Ok(TimeEncoding::Rfc3339Nano));
/// assert_eq!("nano".parse::<TimeEncoding>(), Ok(TimeEncoding::Nanos));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimeEncoding {
    /// Seconds since the Unix epoch, with a fraction: `1700000000.123456`.
    Epoch,
    /// Milliseconds since the epoch, with a fraction: `1700000000123.456`.
    Millis,
    /// Nanoseconds since the epoch: `1700000000123456789` (`nanos`, or `nano`).
    Nanos,
    /// ISO 8601 with milliseconds: `2023-11-14T22:13:20.123Z`.
    Iso8601,
    /// RFC 3339 to the second: `2023-11-14T22:13:20Z` (the default).
    #[default]
    Rfc3339,
    /// RFC 3339 with as many fraction digits as needed: `2023-11-14T22:13:20.123456789Z`.
    Rfc3339Nano,
}

impl TimeEncoding {
    /// `ts` in this encoding.
    pub fn encode(self, ts: Timestamp) -> String {
        let nanos = ts.as_nanosecond();
        match self {
            TimeEncoding::Epoch => format!("{:.6}", nanos as f64 / 1e9),
            TimeEncoding::Millis => format!("{:.3}", nanos as f64 / 1e6),
            TimeEncoding::Nanos => nanos.to_string(),
            TimeEncoding::Iso8601 => format!("{ts:.3}"),
            TimeEncoding::Rfc3339 => format!("{ts:.0}"),
            TimeEncoding::Rfc3339Nano => ts.to_string(),
        }
    }
}

impl FormatTime for TimeEncoding {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        w.write_str(&self.encode(ctrl_clock::now()))
    }
}

impl FromStr for TimeEncoding {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "epoch" => Ok(TimeEncoding::Epoch),
            "millis" => Ok(TimeEncoding::Millis),
            "nanos" | "nano" => Ok(TimeEncoding::Nanos),
            "iso8601" => Ok(TimeEncoding::Iso8601),
            "rfc3339" => Ok(TimeEncoding::Rfc3339),
            "rfc3339nano" => Ok(TimeEncoding::Rfc3339Nano),
            _ => Err(format!(
                "invalid time-encoding value {s:?} (one of epoch, millis, nano, iso8601, rfc3339, rfc3339nano)"
            )),
        }
    }
}

impl fmt::Display for TimeEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TimeEncoding::Epoch => "epoch",
            TimeEncoding::Millis => "millis",
            TimeEncoding::Nanos => "nanos",
            TimeEncoding::Iso8601 => "iso8601",
            TimeEncoding::Rfc3339 => "rfc3339",
            TimeEncoding::Rfc3339Nano => "rfc3339nano",
        })
    }
}

/// An event format that adds a stack trace to lines at or above `at`: a
/// `stacktrace` field for JSON lines (`json: true`), indented lines after a
/// console line.
#[derive(Debug)]
pub struct WithStacktrace<F> {
    inner: F,
    at: StacktraceLevel,
    json: bool,
}

impl<F> WithStacktrace<F> {
    /// `inner`, with stack traces on lines at or above `at`.
    pub fn new(inner: F, at: StacktraceLevel, json: bool) -> Self {
        Self { inner, at, json }
    }
}

impl<S, N, F> FormatEvent<S, N> for WithStacktrace<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        if !self.at.covers(event.metadata().level()) {
            return self.inner.format_event(ctx, writer, event);
        }
        let trace = Backtrace::force_capture().to_string();
        if !self.json {
            self.inner.format_event(ctx, writer.by_ref(), event)?;
            return writeln!(writer, "{}", trace.trim_end());
        }
        let mut line = String::new();
        self.inner
            .format_event(ctx, Writer::new(&mut line), event)?;
        match serde_json::from_str::<serde_json::Value>(&line) {
            Ok(serde_json::Value::Object(mut fields)) => {
                fields.insert("stacktrace".into(), trace.into());
                let json = serde_json::to_string(&fields).map_err(|_| fmt::Error)?;
                writeln!(writer, "{json}")
            }
            // Not an object: leave the line as the inner format wrote it.
            _ => writer.write_str(&line),
        }
    }
}
