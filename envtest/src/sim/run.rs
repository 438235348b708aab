//! Running a scenario under a seed: the runtime (current-thread, paused clock), the fake
//! wall clock, the trace's `tracing` layer, and what a run reports — its trace hash, or a
//! [`Failure`] with the seed, a one-line replay command and the last steps. [`check`] runs
//! many seeds and stops at the first failure; `SIM_SEED=<n>` in the environment makes it run
//! only seed `n` (the replay).

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rand::SeedableRng;
use rand::rngs::StdRng;
use tracing_subscriber::layer::SubscriberExt;

use super::trace::{ReconcileLayer, Trace};
use super::{Shared, Simulation, SimulationBuilder, State, transport};

/// The environment variable that makes [`check`] replay one seed.
pub const SEED_VAR: &str = "SIM_SEED";

/// The environment variable naming a directory where each run writes its whole trace
/// (`seed-<seed>-<hash>.trace`), e.g. to diff two runs.
pub const TRACE_DIR_VAR: &str = "SIM_TRACE_DIR";

/// The environment variable that prints the run's logs (an `EnvFilter` directive such as
/// `info` or `ctrl_runtime=debug`) to stderr, stamped with the virtual wall clock.
pub const LOG_VAR: &str = "SIM_LOG";

/// The environment variable setting how many seeds [`check`] runs at once (default: the
/// machine's cores).
pub const THREADS_VAR: &str = "SIM_THREADS";

/// How many trace lines a failure shows.
const WINDOW: usize = 40;

/// The wall time a simulation starts at (the fake clock's start): 2026-01-01T00:00:00Z.
const START_SECONDS: i64 = 1_767_225_600;

/// A run that passed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The seed.
    pub seed: u64,
    /// The hash of the whole trace.
    pub trace_hash: u64,
    /// How many trace lines there were.
    pub steps: usize,
    /// The virtual time the run took.
    pub virtual_time: Duration,
}

/// A run that failed: what broke, how to replay it, and what happened just before.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The seed.
    pub seed: u64,
    /// What broke: a checker's finding, the scenario's error, or a deadline missed.
    pub message: String,
    /// The hash of the trace up to the failure (the same on every replay).
    pub trace_hash: u64,
    /// The virtual time of the failure.
    pub virtual_time: Duration,
    /// The last lines of the trace.
    pub last_steps: Vec<String>,
    /// A shell command that runs this seed alone.
    pub replay: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "simulation failed: seed {} at {:?} of virtual time: {}",
            self.seed, self.virtual_time, self.message
        )?;
        writeln!(f, "replay: {}", self.replay)?;
        writeln!(f, "trace hash {:016x}; the last steps:", self.trace_hash)?;
        for line in &self.last_steps {
            writeln!(f, "  {line}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Failure {}

/// What [`check`] saw when every seed passed.
#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    /// Each seed's outcome, in the order run.
    pub outcomes: Vec<Outcome>,
}

/// Runs `scenario` for each seed (only `SIM_SEED`'s when it is set) and returns the first
/// failure, in seed order. `build` makes each seed's [`SimulationBuilder`].
///
/// Seeds run on [`SIM_THREADS`](THREADS_VAR) threads at once (default: the machine's
/// cores), each seed alone on its own current-thread runtime, so a seed's run is the same
/// whichever thread runs it. Threads take seeds in order and none starts a seed after one
/// that failed, so the failure reported is the first failing seed, as a sequential run
/// would find it.
pub fn check<B, S, Fut>(
    seeds: impl IntoIterator<Item = u64>,
    build: B,
    scenario: S,
) -> Result<CheckReport, Failure>
where
    B: Fn(u64) -> SimulationBuilder + Sync,
    S: Fn(Simulation) -> Fut + Sync,
    Fut: Future<Output = Result<(), String>>,
{
    let seeds: Vec<u64> = match std::env::var(SEED_VAR).ok().and_then(|s| s.parse().ok()) {
        Some(seed) => vec![seed],
        None => seeds.into_iter().collect(),
    };
    let results = run_all(&seeds, threads(), &|seed| build(seed).run(&scenario));
    let mut report = CheckReport::default();
    for result in results.into_iter().map_while(|r| r) {
        report.outcomes.push(result?);
    }
    Ok(report)
}

/// How many seeds [`check`] runs at once: [`THREADS_VAR`], else the machine's cores.
fn threads() -> usize {
    let from_env = std::env::var(THREADS_VAR).ok().and_then(|s| s.parse().ok());
    let cores = || std::thread::available_parallelism().map_or(1, |n| n.get());
    from_env.unwrap_or_else(cores).max(1)
}

type SeedResult = Result<Outcome, Failure>;

/// Runs `one` for each seed on up to `threads` threads, taking seeds in order; after a
/// failure no later seed starts. Every seed up to the first failure has its result (a
/// `None` is a seed after it that was skipped). The caller's thread is one of the threads;
/// the others carry its name, which the replay command names as the test.
fn run_all(
    seeds: &[u64],
    threads: usize,
    one: &(dyn Fn(u64) -> SeedResult + Sync),
) -> Vec<Option<SeedResult>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let results: Mutex<Vec<Option<SeedResult>>> = Mutex::new(vec![None; seeds.len()]);
    let (next, first_failure) = (AtomicUsize::new(0), AtomicUsize::new(usize::MAX));
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= seeds.len() || i > first_failure.load(Ordering::Acquire) {
                return;
            }
            let result = one(seeds[i]);
            if result.is_err() {
                first_failure.fetch_min(i, Ordering::AcqRel);
            }
            results.lock()[i] = Some(result);
        }
    };
    let name = std::thread::current().name().map(str::to_string);
    std::thread::scope(|s| {
        // This thread is one of them.
        for _ in 1..threads.min(seeds.len()) {
            let mut b = std::thread::Builder::new();
            if let Some(name) = &name {
                b = b.name(name.clone());
            }
            if let Err(e) = b.spawn_scoped(s, work) {
                tracing::warn!(error = %e, "starting a simulation thread; fewer run at once");
            }
        }
        work();
    });
    results.into_inner()
}

/// Runs `scenario` under the builder's seed on a fresh current-thread runtime with a paused
/// clock, the fake wall clock entered on this thread and the trace's layer as this thread's
/// `tracing` subscriber. Prints the seed and the trace hash.
pub(super) fn run<F, Fut>(b: SimulationBuilder, scenario: F) -> Result<Outcome, Failure>
where
    F: FnOnce(Simulation) -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let seed = b.seed;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .map_err(|e| failure_before_start(seed, format!("building the runtime: {e}")))?;
    let start = ctrl_clock::Timestamp::from_second(START_SECONDS).unwrap_or_default();
    let clock = ctrl_clock::Clock::fake_seeded(start, seed);
    let _clock = clock.enter();
    let trace = Trace::default();
    let result = rt.block_on(async {
        let t0 = tokio::time::Instant::now();
        let layer = ReconcileLayer {
            trace: trace.clone(),
            start: t0,
        };
        let subscriber = tracing_subscriber::registry().with(layer).with(log_layer());
        let _log = tracing::subscriber::set_default(subscriber);
        let sim = start_simulation(b, trace.clone(), t0)
            .await
            .map_err(|e| (e, Duration::ZERO))?;
        let _webhooks = sim.shared.endpoints.enter();
        let outcome = scenario(sim.clone()).await;
        let outcome = outcome.and_then(|()| sim.check());
        sim.stop();
        outcome
            .map_err(|e| (e, t0.elapsed()))
            .map(|()| t0.elapsed())
    });
    drop(rt);
    write_trace(seed, &trace);
    match result {
        Ok(virtual_time) => {
            let outcome = Outcome {
                seed,
                trace_hash: trace.hash(),
                steps: trace.len(),
                virtual_time,
            };
            println!(
                "simulation seed {seed}: trace hash {:016x}, {} steps, {:?} virtual",
                outcome.trace_hash, outcome.steps, virtual_time
            );
            Ok(outcome)
        }
        Err((message, virtual_time)) => Err(Failure {
            seed,
            message,
            trace_hash: trace.hash(),
            virtual_time,
            last_steps: trace.last(WINDOW),
            replay: replay_command(seed),
        }),
    }
}

/// Starts the environment and the simulation's shared state; draws the fault schedule.
async fn start_simulation(
    b: SimulationBuilder,
    trace: Trace,
    start: tokio::time::Instant,
) -> Result<Simulation, String> {
    let env = b
        .env
        .start()
        .await
        .map_err(|e| format!("starting the environment: {e}"))?;
    let mut rng = StdRng::seed_from_u64(b.seed);
    let mut schedule = b.faults.draw(&mut rng);
    schedule.reverse();
    let shared = Arc::new(Shared {
        seed: b.seed,
        start,
        streams: Default::default(),
        trace,
        env,
        request_delay: b.request_delay,
        watch_delay: b.watch_delay,
        webhook_delay: b.webhook_delay,
        endpoints: Default::default(),
        backends: Default::default(),
        slow_webhooks: 0.into(),
        shards: Default::default(),
        lease: Mutex::new(None),
        identities: Mutex::new(Default::default()),
        last_write: Mutex::new(start),
        writes_in_flight: 0.into(),
        last_leader: Mutex::new(None),
        checked: u64::MAX.into(),
        holder_cache: Mutex::new(None),
    });
    let test = transport::SimLayer {
        shared: shared.clone(),
        replica: transport::TEST.into(),
        alive: Arc::new(true.into()),
    };
    Ok(Simulation {
        test_client: shared.env.in_memory_client_with(test),
        shared,
        state: Arc::new(Mutex::new(State {
            replicas: Vec::new(),
            schedule,
            restarts: Vec::new(),
        })),
        invariants: Default::default(),
    })
}

impl Simulation {
    /// Stops every replica and the server at the end of a run.
    fn stop(&self) {
        let names: Vec<String> = (self.state.lock().replicas.iter())
            .map(|s| s.name.clone())
            .collect();
        for name in names {
            let state = self.state.lock();
            if let Some(slot) = state.replicas.iter().find(|s| s.name == name) {
                slot.shutdown.cancel();
                if let Some(t) = &slot.task {
                    t.abort();
                }
            }
        }
        self.shared.env.stop();
        self.shared.forget_webhooks();
    }
}

/// The stderr log [`LOG_VAR`] asks for, if any.
fn log_layer<S>() -> Option<impl tracing_subscriber::Layer<S>>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::Layer;
    let filter = tracing_subscriber::EnvFilter::try_new(std::env::var(LOG_VAR).ok()?).ok()?;
    let fmt = tracing_subscriber::fmt::layer()
        .with_timer(VirtualTime)
        .with_writer(std::io::stderr);
    Some(fmt.with_filter(filter))
}

/// Log timestamps from `ctrl_clock` (the simulation's virtual wall clock).
struct VirtualTime;

impl tracing_subscriber::fmt::time::FormatTime for VirtualTime {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> fmt::Result {
        write!(w, "{}", ctrl_clock::now())
    }
}

/// Writes the whole trace into [`TRACE_DIR_VAR`]'s directory, when it is set.
fn write_trace(seed: u64, trace: &Trace) {
    let Some(dir) = std::env::var_os(TRACE_DIR_VAR) else {
        return;
    };
    let path = std::path::Path::new(&dir).join(format!("seed-{seed}-{:016x}.trace", trace.hash()));
    let text = trace.last(usize::MAX).join("\n");
    if let Err(e) = std::fs::write(&path, text + "\n") {
        tracing::warn!(path = %path.display(), error = %e, "writing the simulation trace");
    }
}

fn failure_before_start(seed: u64, message: String) -> Failure {
    Failure {
        seed,
        message,
        trace_hash: 0,
        virtual_time: Duration::ZERO,
        last_steps: Vec::new(),
        replay: replay_command(seed),
    }
}

/// `SIM_SEED=<seed> cargo test --test <this test binary> -- <this test> --exact`, from the
/// running test binary's name (without cargo's hash) and the test thread's name.
fn replay_command(seed: u64) -> String {
    let exe = std::env::current_exe().ok();
    let stem = exe
        .as_deref()
        .and_then(|p| p.file_stem())
        .and_then(|s| s.to_str())
        .unwrap_or("");
    let target = match stem.rsplit_once('-') {
        Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name,
        _ => stem,
    };
    let test = std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .map(|n| format!(" -- {n} --exact"))
        .unwrap_or_default();
    format!("{SEED_VAR}={seed} cargo test --test {target}{test}")
}
