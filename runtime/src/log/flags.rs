//! controller-runtime's zap flags (`zap.Options.BindFlags`) as a clap [`Args`] to
//! `#[command(flatten)]` next to the manager's `Args`. A flag that is not given
//! leaves the program's own [`Options`] alone, as in Go, where `BindFlags` writes
//! into an `Options` the program may have filled in first.

use super::{Encoder, Level, Options, StacktraceLevel, TimeEncoding};

/// The `--zap-*` flags.
///
/// ```
/// use clap::Parser;
/// use ctrl_runtime::log::{self, Encoder};
///
/// #[derive(Parser)]
/// struct Cli {
///     #[command(flatten)]
///     log: log::Args,
/// }
///
/// let cli = Cli::parse_from(["op", "--zap-devel", "--zap-encoder", "json"]);
/// let opts = cli.log.options();
/// assert!(opts.development);
/// assert_eq!(opts.settings().encoder, Encoder::Json);
/// ```
// `about = None`: this struct's doc comment must not become the program's `--help`
// text; the group id keeps it apart from other structs named `Args` (the manager's).
#[derive(clap::Args, Clone, Debug, Default, PartialEq, Eq)]
#[command(about = None, long_about = None)]
#[group(id = "zap-flags")]
pub struct Args {
    /// Development Mode defaults (encoder=console, logLevel=debug,
    /// stackTraceLevel=warn). Production Mode defaults (encoder=json,
    /// logLevel=info, stackTraceLevel=error).
    #[arg(
        long = "zap-devel",
        value_name = "BOOL",
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set
    )]
    pub zap_devel: Option<bool>,
    /// Zap log encoding (one of 'json' or 'console').
    #[arg(long = "zap-encoder", value_name = "ENCODER")]
    pub zap_encoder: Option<Encoder>,
    /// Zap Level to configure the verbosity of logging. Can be one of 'debug',
    /// 'info', 'error', 'panic' or any integer value > 0 which corresponds to custom
    /// debug levels of increasing verbosity. `RUST_LOG`, if set, takes precedence.
    #[arg(long = "zap-log-level", value_name = "LEVEL")]
    pub zap_log_level: Option<Level>,
    /// Zap Level at and above which stacktraces are captured (one of 'info',
    /// 'warn', 'error' or 'panic').
    #[arg(long = "zap-stacktrace-level", value_name = "LEVEL")]
    pub zap_stacktrace_level: Option<StacktraceLevel>,
    /// Zap time encoding (one of 'epoch', 'millis', 'nano', 'iso8601', 'rfc3339'
    /// or 'rfc3339nano'). Defaults to 'rfc3339'.
    #[arg(long = "zap-time-encoding", value_name = "ENCODING")]
    pub zap_time_encoding: Option<TimeEncoding>,
}

impl Args {
    /// Logging options with these flags applied over the defaults (production mode).
    pub fn options(&self) -> Options {
        self.apply(Options::default())
    }

    /// `opts` with the flags that were given applied (Go: the `Options` a program
    /// fills in before `BindFlags`, e.g. `Development: true`, then the flags).
    pub fn apply(&self, mut opts: Options) -> Options {
        if let Some(devel) = self.zap_devel {
            opts.development = devel;
        }
        opts.encoder = self.zap_encoder.or(opts.encoder);
        opts.level = self.zap_log_level.or(opts.level);
        opts.stacktrace_level = self.zap_stacktrace_level.or(opts.stacktrace_level);
        if let Some(te) = self.zap_time_encoding {
            opts.time_encoding = te;
        }
        opts
    }
}
