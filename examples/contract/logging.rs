//! Log output. Against a real cluster an example logs in tracing's usual format,
//! with the controller's structured fields (controller, namespace, name,
//! reconcileID). The local demo prints one short line per thing a person watching
//! wants to see: seconds since start, a topic (the last part of the log target:
//! `reconcile`, `status`, `envtest`, ...), and the message.

use std::fmt;
use std::time::Instant;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The demo's default filter for example `name`: the example's own lines, and only
/// problems from the libraries. `RUST_LOG` overrides it.
pub fn demo_filter(name: &str) -> String {
    format!("{name}=info,warn")
}

/// The default filter against a cluster. `RUST_LOG` overrides it.
pub const CLUSTER_FILTER: &str = "info";

/// Installs the global subscriber for example `name`: [`Pretty`] lines for the
/// demo, tracing's full format otherwise. Does nothing if one is installed already.
pub fn init(name: &str, demo: bool) {
    let default = if demo {
        demo_filter(name)
    } else {
        CLUSTER_FILTER.to_string()
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()));
    let _ = if demo {
        builder.event_format(Pretty::new()).try_init()
    } else {
        builder.try_init()
    };
}

/// The demo's line format: `  1.23s  topic      message key=value`.
#[derive(Debug)]
pub struct Pretty {
    start: Instant,
}

impl Pretty {
    /// A format counting seconds from now.
    pub fn new() -> Self {
        Self {
            start: Instant::now(),
        }
    }
}

impl Default for Pretty {
    fn default() -> Self {
        Self::new()
    }
}

impl<S, N> FormatEvent<S, N> for Pretty
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let topic = meta.target().rsplit("::").next().unwrap_or_default();
        let secs = self.start.elapsed().as_secs_f64();
        write!(writer, "{secs:>7.2}s  {topic:<10} ")?;
        if *meta.level() <= Level::WARN {
            write!(writer, "{}: ", meta.level())?;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        writeln!(writer, "{}{}", fields.message, fields.rest)
    }
}

/// The message, then the fields the message does not already say.
#[derive(Default)]
struct Fields {
    message: String,
    rest: String,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        use std::fmt::Write as _;
        match field.name() {
            "message" => {
                let _ = write!(self.message, "{value:?}");
            }
            // Already part of the example's messages.
            "bucket" | "available" | "appservice" => {}
            name => {
                let _ = write!(self.rest, " {name}={value:?}");
            }
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            self.record_debug(field, &value);
        }
    }
}
