//! `ctrl_runtime::log`: the `--zap-*` flags parse as controller-runtime's do, the
//! modes' defaults are Go's, and the lines come out as JSON or console text as
//! chosen (captured through a writer), with stack traces where the level says.

use std::io;
use std::sync::Arc;

use clap::Parser;
use ctrl_runtime::log::{self, Encoder, Level, Options, StacktraceLevel, TimeEncoding};
use parking_lot::Mutex;
use tracing_subscriber::Layer;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::Registry;

#[derive(Parser, Debug)]
#[command(name = "op", about = "An operator")]
struct Cli {
    #[command(flatten)]
    log: log::Args,
}

fn parse(args: &[&str]) -> Result<Options, clap::Error> {
    let argv = std::iter::once("op").chain(args.iter().copied());
    Cli::try_parse_from(argv).map(|cli| cli.log.options())
}

#[test]
fn production_defaults_without_flags() {
    let s = parse(&[]).expect("parse").settings();
    assert_eq!(s.encoder, Encoder::Json);
    assert_eq!(s.level, Level::Info);
    assert_eq!(s.stacktrace_level, StacktraceLevel::Error);
    assert_eq!(s.time_encoding, TimeEncoding::Rfc3339);
}

#[test]
fn zap_devel_switches_every_default() {
    for args in [
        &["--zap-devel"][..],
        &["--zap-devel=true"],
        &["--zap-devel", "true"],
    ] {
        let s = parse(args).expect("parse").settings();
        assert_eq!(s.encoder, Encoder::Console, "{args:?}");
        assert_eq!(s.level, Level::Debug, "{args:?}");
        assert_eq!(s.stacktrace_level, StacktraceLevel::Warn, "{args:?}");
    }
}

#[test]
fn explicit_flags_win_over_the_mode() {
    let opts = parse(&[
        "--zap-devel",
        "--zap-encoder",
        "JSON",
        "--zap-log-level=error",
        "--zap-stacktrace-level",
        "panic",
        "--zap-time-encoding",
        "epoch",
    ])
    .expect("parse");
    let s = opts.settings();
    assert!(opts.development);
    assert_eq!(s.encoder, Encoder::Json);
    assert_eq!(s.level, Level::Error);
    assert_eq!(s.stacktrace_level, StacktraceLevel::Panic);
    assert_eq!(s.time_encoding, TimeEncoding::Epoch);
}

#[test]
fn flags_not_given_keep_the_programs_options() {
    // kubebuilder's main: `zap.Options{Development: true}`, then BindFlags.
    let devel = Options {
        development: true,
        ..Default::default()
    };
    let cli = Cli::try_parse_from(["op"]).expect("parse");
    assert!(cli.log.apply(devel.clone()).development);
    let cli = Cli::try_parse_from(["op", "--zap-devel=false"]).expect("parse");
    assert!(!cli.log.apply(devel).development);
}

#[test]
fn log_levels_take_zaps_names_and_verbosities() {
    let level = |v: &str| parse(&["--zap-log-level", v]).map(|o| o.settings().level);
    assert_eq!(level("debug").ok(), Some(Level::Debug));
    assert_eq!(level("INFO").ok(), Some(Level::Info));
    assert_eq!(level("panic").ok(), Some(Level::Panic));
    assert_eq!(level("1").ok(), Some(Level::Verbosity(1)));
    assert_eq!(level("5").ok(), Some(Level::Verbosity(5)));
    for bad in ["0", "-1", "warning", "", "300"] {
        assert!(level(bad).is_err(), "{bad:?} was accepted");
    }
    use tracing_subscriber::filter::LevelFilter;
    assert_eq!(Level::Verbosity(1).filter(), LevelFilter::DEBUG);
    assert_eq!(Level::Verbosity(2).filter(), LevelFilter::TRACE);
    assert_eq!(Level::Panic.filter(), LevelFilter::OFF);
}

#[test]
fn bad_values_are_refused_with_the_choices() {
    for (flag, value, says) in [
        ("--zap-encoder", "yaml", "json, console"),
        (
            "--zap-stacktrace-level",
            "debug",
            "info, warn, error, panic",
        ),
        ("--zap-time-encoding", "unix", "rfc3339nano"),
    ] {
        let err = parse(&[flag, value]).expect_err(value).to_string();
        assert!(err.contains(says), "{flag} {value}: {err}");
    }
}

#[test]
fn every_time_encoding_parses_and_encodes() {
    use k8s_openapi::jiff::Timestamp;
    let ts = Timestamp::from_nanosecond(1_700_000_000_123_456_789).expect("timestamp");
    let cases = [
        ("epoch", "1700000000.123457"),
        ("millis", "1700000000123.457"),
        ("nano", "1700000000123456789"),
        ("nanos", "1700000000123456789"),
        ("iso8601", "2023-11-14T22:13:20.123Z"),
        ("rfc3339", "2023-11-14T22:13:20Z"),
        ("rfc3339nano", "2023-11-14T22:13:20.123456789Z"),
    ];
    for (name, want) in cases {
        let te: TimeEncoding = name.parse().expect(name);
        assert_eq!(te.encode(ts), want, "{name}");
    }
}

#[test]
fn rust_log_replaces_the_level() {
    let f = log::filter(Level::Info, None);
    assert_eq!(f.to_string(), "info");
    let f = log::filter(Level::Info, Some(""));
    assert_eq!(f.to_string(), "info");
    let f = log::filter(Level::Info, Some("kube=debug"));
    assert_eq!(f.to_string(), "kube=debug");
    // At debug, the HTTP stack stays at info unless RUST_LOG says otherwise.
    let f = log::filter(Level::Debug, None).to_string();
    assert!(f.contains("hyper=info") && f.contains("debug"), "{f}");
    let f = log::filter(Level::Debug, Some("debug")).to_string();
    assert_eq!(f, "debug");
}

/// A writer that keeps what is written, for the tests to read.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Capture {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock()).into_owned()
    }
}

impl io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Capture {
    type Writer = Capture;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// What `opts` write for one debug, one info and one error line.
fn output(opts: &Options) -> String {
    let capture = Capture::default();
    let filter = log::filter(opts.settings().level, None);
    let sub = Registry::default().with(log::layer(opts, capture.clone()).with_filter(filter));
    tracing::subscriber::with_default(sub, || {
        tracing::debug!(step = 1, "debug line");
        tracing::info!(name = "nginx", "Reconciler is called");
        tracing::error!(error = "boom", "reconcile failed");
    });
    capture.text()
}

#[test]
fn production_writes_json_lines_from_info_with_a_stacktrace_on_errors() {
    let out = output(&Options::default());
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(lines[0]["level"], "INFO");
    assert_eq!(lines[0]["message"], "Reconciler is called");
    assert_eq!(lines[0]["name"], "nginx");
    assert!(
        lines[0]["timestamp"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    assert!(lines[0].get("stacktrace").is_none(), "{out}");
    assert_eq!(lines[1]["level"], "ERROR");
    assert!(
        lines[1]["stacktrace"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
}

#[test]
fn development_writes_console_lines_from_debug() {
    let opts = Options {
        development: true,
        stacktrace_level: Some(StacktraceLevel::Panic),
        ..Default::default()
    };
    let out = output(&opts);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines
            .iter()
            .all(|l| serde_json::from_str::<serde_json::Value>(l).is_err())
    );
    assert!(lines[0].contains("DEBUG") && lines[0].contains("debug line step=1"));
    assert!(lines[1].contains("INFO") && lines[1].contains("Reconciler is called name=\"nginx\""));
    assert!(lines[2].contains("ERROR"));
}

#[test]
fn a_console_error_carries_a_stacktrace_in_development() {
    let out = output(&Options {
        development: true,
        ..Default::default()
    });
    // One line each, then the error's stack trace on the lines after it.
    assert!(out.lines().count() > 3, "{out}");
    let after_error = out.split("reconcile failed").nth(1).unwrap_or_default();
    assert!(after_error.lines().count() > 1, "{out}");
}

#[test]
fn the_epoch_time_encoding_shows_in_json() {
    let out = output(&Options {
        time_encoding: TimeEncoding::Epoch,
        ..Default::default()
    });
    let first: serde_json::Value =
        serde_json::from_str(out.lines().next().unwrap_or_default()).expect("json");
    let ts = first["timestamp"].as_str().unwrap_or_default();
    assert!(ts.parse::<f64>().is_ok_and(|t| t > 1.6e9), "{ts}");
}

// A program with no `about` (and no doc comment) of its own, with the manager's
// flags only.
#[derive(Parser, Debug)]
#[command(name = "bare")]
struct ManagerOnly {
    #[command(flatten)]
    manager: ctrl_runtime::manager::Args,
}

// ... and with the zap flags only.
#[derive(Parser, Debug)]
#[command(name = "bare")]
struct LogOnly {
    #[command(flatten)]
    log: log::Args,
}

/// My operator's own words.
#[derive(Parser, Debug)]
#[command(name = "documented")]
struct Documented {
    #[command(flatten)]
    manager: ctrl_runtime::manager::Args,
    #[command(flatten)]
    log: log::Args,
}

#[test]
fn flattened_args_keep_their_doc_comments_out_of_help() {
    use clap::CommandFactory;
    let helps = [
        ManagerOnly::command().render_long_help().to_string(),
        ManagerOnly::command().render_help().to_string(),
        LogOnly::command().render_long_help().to_string(),
        Cli::command().render_long_help().to_string(),
        Documented::command().render_long_help().to_string(),
    ];
    for help in helps {
        assert!(
            help.contains("--leader-elect") || help.contains("--zap-devel"),
            "{help}"
        );
        for leaked in ["kubebuilder scaffolds", "The `--zap-*` flags", "```"] {
            assert!(!help.contains(leaked), "{leaked:?} in:\n{help}");
        }
    }
    // The program's own doc comment stays its help text.
    let help = Documented::command().render_help().to_string();
    assert!(help.starts_with("My operator's own words"), "{help}");
}
