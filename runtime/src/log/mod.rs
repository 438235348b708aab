//! Logging setup with controller-runtime's zap options (`pkg/log/zap`), on
//! `tracing-subscriber`.
//!
//! ctrl logs through `tracing` everywhere (the controller's reconcile span carries
//! `controller`, `namespace`, `name` and `reconcileID`); this module only installs
//! the global subscriber an operator's `main` wants, configured the way a Go
//! operator's is: [`Options`] (Go's `zap.Options`), the `--zap-*` flags ([`Args`],
//! Go's `opts.BindFlags(flag.CommandLine)`), and [`init`] (Go's
//! `ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))`). Nothing else in ctrl
//! depends on it: tests and programs that set up `tracing` themselves skip it.
//!
//! ```
//! use clap::Parser;
//! use ctrl_runtime::log;
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     log: log::Args,
//! }
//!
//! let cli = Cli::parse_from(["op", "--zap-log-level", "debug"]);
//! // kubebuilder's main: development mode unless the flags say otherwise.
//! let opts = cli.log.apply(log::Options { development: true, ..Default::default() });
//! log::init(&opts);
//! tracing::debug!(answer = 42, "logging is set up");
//! ```
//!
//! Defaults, as in Go: development mode logs `console` lines from `debug` up, with
//! stack traces from `warn`; production mode (the default) logs `json` from `info`
//! up, with stack traces on errors. `RUST_LOG`, when set, replaces the level with
//! its directives. Times are RFC 3339 unless `--zap-time-encoding` says otherwise.
//! JSON lines carry `tracing-subscriber`'s keys (`timestamp`, `level`, `target`,
//! `message`, the event's fields at the top level, `span` / `spans`), not zap's
//! (`ts`, `msg`, `logger`). Not ported: zap's sampling in production mode.

mod flags;
mod format;
mod level;

use std::fmt;
use std::str::FromStr;

use tracing::Subscriber;
use tracing_subscriber::filter::{EnvFilter, LevelFilter};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Layer, SubscriberExt};
use tracing_subscriber::registry::Registry;
use tracing_subscriber::util::{SubscriberInitExt, TryInitError};

pub use flags::Args;
pub use format::{TimeEncoding, WithStacktrace};
pub use level::{Level, StacktraceLevel};

/// How log lines are encoded (`--zap-encoder`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoder {
    /// One JSON object per line, the event's fields at the top level (production).
    Json,
    /// Human-readable lines (development).
    Console,
}

impl FromStr for Encoder {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "json" => Ok(Encoder::Json),
            "console" => Ok(Encoder::Console),
            _ => Err(format!(
                "invalid encoder value {s:?} (one of json, console)"
            )),
        }
    }
}

impl fmt::Display for Encoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Encoder::Json => "json",
            Encoder::Console => "console",
        })
    }
}

/// Logging options (controller-runtime's `zap.Options`). A field left `None` takes
/// the default of the mode [`Options::development`] picks; [`Options::settings`]
/// says what that comes to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Development mode: console lines, `debug` and up, stack traces from `warn`.
    /// Production mode (`false`, the default): JSON lines, `info` and up, stack
    /// traces on errors.
    pub development: bool,
    /// How lines are encoded. Defaults to console in development mode, JSON otherwise.
    pub encoder: Option<Encoder>,
    /// How much is logged. Defaults to `debug` in development mode, `info`
    /// otherwise; `RUST_LOG`, when set, takes precedence.
    pub level: Option<Level>,
    /// The level at and above which lines carry a stack trace. Defaults to `warn`
    /// in development mode, `error` otherwise.
    pub stacktrace_level: Option<StacktraceLevel>,
    /// How timestamps are written. Defaults to RFC 3339.
    pub time_encoding: TimeEncoding,
}

/// What [`Options`] come to once the mode's defaults are filled in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The line encoding.
    pub encoder: Encoder,
    /// The level (unless `RUST_LOG` is set).
    pub level: Level,
    /// Where stack traces start.
    pub stacktrace_level: StacktraceLevel,
    /// The timestamp encoding.
    pub time_encoding: TimeEncoding,
}

impl Options {
    /// The options with the mode's defaults filled in.
    pub fn settings(&self) -> Settings {
        let (encoder, level, stacktrace_level) = if self.development {
            (Encoder::Console, Level::Debug, StacktraceLevel::Warn)
        } else {
            (Encoder::Json, Level::Info, StacktraceLevel::Error)
        };
        Settings {
            encoder: self.encoder.unwrap_or(encoder),
            level: self.level.unwrap_or(level),
            stacktrace_level: self.stacktrace_level.unwrap_or(stacktrace_level),
            time_encoding: self.time_encoding,
        }
    }
}

/// Crates whose debug lines are about HTTP connections, not about the operator: at
/// `debug` and beyond they stay at `info` (in Go, client-go's transport does not log
/// through zap either). `RUST_LOG` can still turn them on.
pub const QUIET_BELOW_INFO: &[&str] = &["hyper", "hyper_util", "h2", "tower", "rustls"];

/// The filter for `level`, unless `rust_log` (the value of `RUST_LOG`) is set and
/// not empty: then its directives decide (invalid ones are reported on stderr and
/// ignored).
pub fn filter(level: Level, rust_log: Option<&str>) -> EnvFilter {
    let builder = EnvFilter::builder().with_default_directive(level.filter().into());
    if let Some(directives) = rust_log.filter(|d| !d.trim().is_empty()) {
        return builder.parse_lossy(directives);
    }
    let mut filter = builder.parse_lossy("");
    if level.filter() > LevelFilter::INFO {
        for target in QUIET_BELOW_INFO {
            if let Ok(directive) = format!("{target}=info").parse() {
                filter = filter.add_directive(directive);
            }
        }
    }
    filter
}

/// A subscriber configured by `opts` that writes to `writer` (no ANSI colours), for
/// programs that install it themselves. `RUST_LOG` is honoured ([`filter`]).
pub fn subscriber<W>(opts: &Options, writer: W) -> impl Subscriber + Send + Sync + 'static
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    build(opts, writer, false)
}

fn build<W>(opts: &Options, writer: W, ansi: bool) -> impl Subscriber + Send + Sync + 'static
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let rust_log = std::env::var(EnvFilter::DEFAULT_ENV).ok();
    let filter = filter(opts.settings().level, rust_log.as_deref());
    let logs = Registry::default().with(fmt_layer(opts, writer, ansi).with_filter(filter));
    // With the `otel` feature, spans are exported too when the OTEL_* environment asks.
    #[cfg(feature = "otel")]
    let logs = logs.with(crate::otel::layer_from_env());
    logs
}

/// The formatting layer `opts` describe, writing to `writer` (no ANSI colours) and
/// filtering nothing: compose it with [`filter`] and other layers (OpenTelemetry,
/// say) on a `Registry` of your own.
pub fn layer<W>(opts: &Options, writer: W) -> Box<dyn Layer<Registry> + Send + Sync>
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    fmt_layer(opts, writer, false)
}

fn fmt_layer<W>(opts: &Options, writer: W, ansi: bool) -> Box<dyn Layer<Registry> + Send + Sync>
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let s = opts.settings();
    match s.encoder {
        Encoder::Json => tracing_subscriber::fmt::layer()
            .json()
            .flatten_event(true)
            .with_timer(s.time_encoding)
            .with_writer(writer)
            .map_event_format(|f| WithStacktrace::new(f, s.stacktrace_level, true))
            .boxed(),
        Encoder::Console => tracing_subscriber::fmt::layer()
            .with_timer(s.time_encoding)
            .with_ansi(ansi)
            .with_writer(writer)
            .map_event_format(|f| WithStacktrace::new(f, s.stacktrace_level, false))
            .boxed(),
    }
}

/// Installs the global subscriber `opts` describes, writing to stderr (Go's
/// `ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))`). Fails if one is
/// installed already.
pub fn try_init(opts: &Options) -> Result<(), TryInitError> {
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    build(opts, std::io::stderr, ansi).try_init()
}

/// [`try_init`], doing nothing if a global subscriber is installed already (a test
/// harness's, say).
pub fn init(opts: &Options) {
    let _ = try_init(opts);
}
