//! The values `--zap-log-level` and `--zap-stacktrace-level` take, with zap's names,
//! and what each means for a `tracing` subscriber.

use std::fmt;
use std::str::FromStr;

use tracing_subscriber::filter::LevelFilter;

/// How much is logged (zap's `Options.Level`, the `--zap-log-level` flag).
///
/// zap's levels are `error`, `info` and `debug`; an integer `n > 0` is logr's
/// verbosity `V(n)`: `1` is `debug`, `2` and above `trace` (ctrl logs with
/// `tracing`, which has two levels below `info`, not an open-ended number).
/// `panic` logs nothing (panics do not go through `tracing`).
///
/// ```
/// use ctrl_runtime::log::Level;
/// assert_eq!("debug".parse::<Level>(), Ok(Level::Debug));
/// assert_eq!("3".parse::<Level>(), Ok(Level::Verbosity(3)));
/// assert!("0".parse::<Level>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Errors only.
    Error,
    /// Informational messages and errors (the production default).
    Info,
    /// Debug messages too (the development default).
    Debug,
    /// logr's verbosity `V(n)`, `n > 0`.
    Verbosity(u8),
    /// Nothing: only panics, which `tracing` does not carry.
    Panic,
}

impl Level {
    /// The `tracing` filter this level stands for.
    pub fn filter(self) -> LevelFilter {
        match self {
            Level::Error => LevelFilter::ERROR,
            Level::Info => LevelFilter::INFO,
            Level::Debug | Level::Verbosity(1) => LevelFilter::DEBUG,
            Level::Verbosity(_) => LevelFilter::TRACE,
            Level::Panic => LevelFilter::OFF,
        }
    }
}

impl FromStr for Level {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "error" => Ok(Level::Error),
            "info" => Ok(Level::Info),
            "debug" => Ok(Level::Debug),
            "panic" => Ok(Level::Panic),
            other => match other.parse::<u8>() {
                Ok(n) if n > 0 => Ok(Level::Verbosity(n)),
                _ => Err(format!(
                    "invalid log level {s:?} (one of debug, info, error, panic, or an integer > 0)"
                )),
            },
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Level::Error => f.write_str("error"),
            Level::Info => f.write_str("info"),
            Level::Debug => f.write_str("debug"),
            Level::Verbosity(n) => write!(f, "{n}"),
            Level::Panic => f.write_str("panic"),
        }
    }
}

/// The level at and above which a log line carries a stack trace (zap's
/// `Options.StacktraceLevel`, the `--zap-stacktrace-level` flag): `info`, `warn`,
/// `error`, or `panic` (none: panics print their own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StacktraceLevel {
    /// Info, warnings and errors.
    Info,
    /// Warnings and errors (the development default).
    Warn,
    /// Errors (the production default).
    Error,
    /// No log line: panics only.
    Panic,
}

impl StacktraceLevel {
    /// Whether a line at `level` carries a stack trace.
    pub fn covers(self, level: &tracing::Level) -> bool {
        let at = match self {
            StacktraceLevel::Info => tracing::Level::INFO,
            StacktraceLevel::Warn => tracing::Level::WARN,
            StacktraceLevel::Error => tracing::Level::ERROR,
            StacktraceLevel::Panic => return false,
        };
        // tracing orders by verbosity: ERROR < WARN < INFO.
        *level <= at
    }
}

impl FromStr for StacktraceLevel {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "info" => Ok(StacktraceLevel::Info),
            "warn" => Ok(StacktraceLevel::Warn),
            "error" => Ok(StacktraceLevel::Error),
            "panic" => Ok(StacktraceLevel::Panic),
            _ => Err(format!(
                "invalid stacktrace level {s:?} (one of info, warn, error, panic)"
            )),
        }
    }
}

impl fmt::Display for StacktraceLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StacktraceLevel::Info => "info",
            StacktraceLevel::Warn => "warn",
            StacktraceLevel::Error => "error",
            StacktraceLevel::Panic => "panic",
        })
    }
}
