//! Log output. Against a real cluster an operator logs in tracing's usual format,
//! with the controller's structured fields (controller, namespace, name,
//! reconcileID). The local demo prints one short line per thing a person watching
//! wants to see: seconds since start, a topic (the last part of the log target:
//! `reconcile`, `status`, `envtest`, ...), the message, its fields, and — inside a
//! reconcile — the object reconciled (`appservice=default/example-appservice`, from
//! the controller's `reconcile` span, so a reconciler never threads it through its
//! own log lines) and, on the first line of each reconcile, what triggered it
//! (`triggers=for:update AppService@12`, the span's
//! `triggers` field: see `ctrl::workqueue::triggers`).

use std::fmt;
use std::time::Instant;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// The demo's default filter for operator `name` (its crate name): the operator's own
/// lines, the cli's (the `--kubeconfig` line), only problems from the libraries, and
/// the controllers' `reconcile` spans (which name the object each reconciler line is
/// about). `RUST_LOG` overrides it.
pub fn demo_filter(name: &str) -> String {
    format!("{name}=info,ctrl::cli=info,warn,[reconcile]=info")
}

/// The default filter against a cluster. `RUST_LOG` overrides it.
pub const CLUSTER_FILTER: &str = "info";

/// Installs the global subscriber for operator `name`: [`Pretty`] lines for the
/// demo, tracing's full format otherwise. Does nothing if one is installed already.
pub fn init(name: &str, demo: bool) {
    let default = if demo {
        demo_filter(name)
    } else {
        CLUSTER_FILTER.to_string()
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    #[cfg(feature = "otel")]
    if let Some(otel) = crate::otel::layer_from_env() {
        return init_with_otel(filter, demo, otel);
    }
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()));
    let _ = if demo {
        builder.event_format(Pretty::new()).try_init()
    } else {
        builder.try_init()
    };
}

/// [`init`] with spans exported as the `OTEL_*` environment asks (the `otel` feature:
/// `OTEL_TRACES_EXPORTER=console` prints them to stdout; docs/manager.md, "Tracing").
#[cfg(feature = "otel")]
fn init_with_otel<L>(filter: EnvFilter, demo: bool, otel: L)
where
    L: tracing_subscriber::Layer<
            tracing_subscriber::layer::Layered<
                Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>,
                tracing_subscriber::Registry,
            >,
        > + Send
        + Sync,
{
    use tracing_subscriber::prelude::*;
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let fmt = if demo {
        fmt.event_format(Pretty::new()).with_filter(filter).boxed()
    } else {
        fmt.with_filter(filter).boxed()
    };
    let _ = tracing_subscriber::registry()
        .with(fmt)
        .with(otel)
        .try_init();
}

/// The demo's line format: `  1.23s  topic      message key=value kind=namespace/name`.
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
        ctx: &FmtContext<'_, S, N>,
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
        write!(writer, "{}{}", fields.message, fields.rest)?;
        let Some(r) = reconciled(ctx) else {
            return writeln!(writer);
        };
        // Unless the line names it already.
        if !fields.rest.contains(&r.key) {
            write!(writer, " {}={}", r.kind, r.key)?;
        }
        match r.triggers {
            Some(t) => writeln!(writer, " triggers={t}"),
            None => writeln!(writer),
        }
    }
}

/// What a line inside a reconcile says about it.
struct Reconciled {
    /// The kind in lower case (`object` when the controller has no `For` kind).
    kind: String,
    /// `namespace/name`.
    key: String,
    /// The reconcile's triggers, on its first line only.
    triggers: Option<String>,
}

/// Marks a `reconcile` span whose triggers a line has shown.
struct TriggersShown;

/// The `reconcile` span the event is in, read from the span's recorded fields
/// (`controllerKind=AppService namespace=default name=x ... triggers=...`).
fn reconciled<S, N>(ctx: &FmtContext<'_, S, N>) -> Option<Reconciled>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    let span = ctx.event_scope()?.find(|s| s.name() == "reconcile")?;
    let mut extensions = span.extensions_mut();
    let fields = strip_ansi(&extensions.get_mut::<FormattedFields<N>>()?.fields);
    let field = |key: &str| {
        fields
            .split(' ')
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
            .map(|v| v.trim_matches('"')) // an `Option<&str>` field is recorded quoted
            .filter(|v| !v.is_empty())
    };
    let name = field("name")?;
    let key = match field("namespace") {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    };
    let kind = field("controllerKind").map_or("object".into(), str::to_lowercase);
    let triggers = match extensions.get_mut::<TriggersShown>() {
        Some(_) => None,
        None => triggers_field(&fields).map(str::to_string),
    };
    if triggers.is_some() {
        extensions.insert(TriggersShown);
    }
    Some(Reconciled {
        kind,
        key,
        triggers,
    })
}

/// The `triggers` field of a reconcile span's recorded fields: its value holds spaces
/// (`owns:update Pod default/a@5, requeue:requeue_after`), so it runs up to the next
/// field the span records after it (`queue_wait_seconds`) or to the end.
fn triggers_field(fields: &str) -> Option<&str> {
    let start = if let Some(rest) = fields.strip_prefix("triggers=") {
        rest
    } else {
        &fields[fields.find(" triggers=")? + " triggers=".len()..]
    };
    let value = start.split(" queue_wait_seconds=").next().unwrap_or(start);
    Some(value.trim()).filter(|v| !v.is_empty())
}

/// `s` without its ANSI escape sequences (span fields are styled on a terminal).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            chars.by_ref().find(|c| c.is_ascii_alphabetic());
        } else {
            out.push(c);
        }
    }
    out
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
            // Already part of the message ("... -> Available").
            "available" => {}
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_triggers_field_runs_to_the_next_field() {
        let f = "controller=a name=\"x\" reconcileID=1 triggers=owns:update Pod default/x-1@5, \
                 requeue:requeue_after queue_wait_seconds=0.25";
        assert_eq!(
            super::triggers_field(f),
            Some("owns:update Pod default/x-1@5, requeue:requeue_after")
        );
        assert_eq!(
            super::triggers_field("name=\"x\" triggers=for:create AppService@3"),
            Some("for:create AppService@3")
        );
        assert_eq!(super::triggers_field("name=\"x\" reconcileID=1"), None);
    }
}
