//! ctrl-clock: the wall clock every part of ctrl reads — the time a reconciler compares a
//! schedule with, a Lease's `renewTime`, a Condition's `lastTransitionTime`, and in
//! `ctrl-envtest` an object's `creationTimestamp`, a `deletionTimestamp`, a ServiceAccount
//! token's expiry, the workload controllers' deadlines. It is the CronJob tutorial's `Clock`
//! interface (kubebuilder's `book/src/cronjob-tutorial`: `realClock` in `main`, a fake in the
//! tests), made ambient so that neither the framework nor the API server needs one threaded
//! through every call.
//!
//! Production reads [`SystemTime::now`]. A test or a simulation makes a [`Clock::fake`]
//! current on its thread with [`Clock::enter`]; every [`now`] on that thread then reads the
//! fake: a fixed start plus the time **tokio's clock** has moved since the first reading. So
//! on a paused tokio runtime (`#[tokio::test(start_paused = true)]`, or ctrl-envtest's
//! simulation) the wall clock and every tokio timer — `requeue_after`, rate-limiter back-off,
//! resync periods, lease renew deadlines — move together, by `tokio::time::advance` or by
//! tokio's auto-advance when every task waits; a ten-hour resync costs no wall time.
//!
//! The clock also hands out the random numbers that decide *when* and *which*: the jitter of
//! lease retries and resyncs, reconcile IDs ([`random_u64`], [`random_f64`]). A fake clock
//! given a seed ([`Clock::fake_seeded`]) draws them from that seed, so a simulation replays them;
//! otherwise they come from `rand`'s thread generator.
//!
//! What this crate does not do: it owns no timers (tokio's are used unchanged; the runtime's
//! queues and elector read `tokio::time::Instant`), and it does not pause tokio — the runtime
//! that runs the test does. The current clock is per thread: a current-thread runtime (what
//! `#[tokio::test]` and the simulation build) sees it in every task; `spawn_blocking` and the
//! workers of a multi-thread runtime read the real clock unless they enter the fake too.
//!
//! Why a crate of its own: `ctrl-envtest` (the API server) and `ctrl-runtime` (the operator)
//! both read it, and neither may depend on the other (envtest is only a dev-dependency of the
//! runtime); `ctrl-net`, the one crate below both, is about transports. `ctrl-runtime`
//! re-exports it as `ctrl_runtime::clock` and the facade as `ctrl::clock`.

use std::cell::RefCell;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

pub use jiff::Timestamp;

thread_local! {
    static CURRENT: RefCell<Option<Clock>> = const { RefCell::new(None) };
}

/// A wall clock: the real one ([`Clock::real`], the default) or a fake that follows tokio's
/// clock from a chosen start ([`Clock::fake`]). Clones share the fake's state.
#[derive(Clone, Default)]
pub struct Clock {
    fake: Option<Arc<Fake>>,
}

/// A fake clock's state: `start` at the tokio instant of the first reading (`anchor`), plus
/// whatever [`Clock::step`] added.
struct Fake {
    start: Timestamp,
    anchor: OnceLock<tokio::time::Instant>,
    stepped: Mutex<Duration>,
    /// The SplitMix64 state of a seeded fake ([`Clock::fake_seeded`]).
    seed: Option<Mutex<u64>>,
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.fake {
            None => f.write_str("Clock::Real"),
            Some(_) => f.debug_tuple("Clock::Fake").field(&self.now()).finish(),
        }
    }
}

impl Clock {
    /// The system's wall clock.
    pub fn real() -> Clock {
        Clock { fake: None }
    }

    /// A fake clock that reads `start` at its first reading and then moves with tokio's
    /// clock (so, on a paused runtime, only when tokio's time is advanced) and with
    /// [`Clock::step`]. Read it first inside the runtime that drives it: the first reading
    /// fixes the tokio instant that `start` stands for. Outside a paused runtime tokio's clock
    /// is the system's monotonic clock, so there a fake creeps forward in real time.
    pub fn fake(start: Timestamp) -> Clock {
        Clock {
            fake: Some(Arc::new(Fake {
                start,
                anchor: OnceLock::new(),
                stepped: Mutex::new(Duration::ZERO),
                seed: None,
            })),
        }
    }

    /// A fake clock like [`Clock::fake`] whose random numbers ([`random_u64`]) come from
    /// `seed`: the same seed, the same numbers in the same order.
    pub fn fake_seeded(start: Timestamp, seed: u64) -> Clock {
        Clock {
            fake: Some(Arc::new(Fake {
                start,
                anchor: OnceLock::new(),
                stepped: Mutex::new(Duration::ZERO),
                seed: Some(Mutex::new(seed)),
            })),
        }
    }

    /// The next random number of this clock: from its seed, or from `rand`.
    pub fn random_u64(&self) -> u64 {
        let Some(state) = self.fake.as_ref().and_then(|f| f.seed.as_ref()) else {
            return rand::random();
        };
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        splitmix64(&mut s)
    }

    /// Whether this is a fake clock.
    pub fn is_fake(&self) -> bool {
        self.fake.is_some()
    }

    /// The time now.
    pub fn now(&self) -> Timestamp {
        let Some(fake) = &self.fake else {
            return Timestamp::now();
        };
        let now = tokio::time::Instant::now();
        let anchor = *fake.anchor.get_or_init(|| now);
        let stepped = *fake.stepped.lock().unwrap_or_else(|e| e.into_inner());
        let moved = now.saturating_duration_since(anchor) + stepped;
        jiff::SignedDuration::try_from(moved)
            .ok()
            .and_then(|d| fake.start.checked_add(d).ok())
            .unwrap_or(Timestamp::MAX)
    }

    /// The time now as a [`SystemTime`].
    pub fn system_now(&self) -> SystemTime {
        match &self.fake {
            None => SystemTime::now(),
            Some(_) => SystemTime::from(self.now()),
        }
    }

    /// Moves a fake clock's wall time forward by `d` without moving tokio's clock (no timer
    /// fires): for plain tests that only read the time. A no-op on the real clock.
    pub fn step(&self, d: Duration) {
        if let Some(fake) = &self.fake {
            *fake.stepped.lock().unwrap_or_else(|e| e.into_inner()) += d;
        }
    }

    /// Moves tokio's paused clock forward by `d` (`tokio::time::advance`), and with it this
    /// clock when it is a fake and every tokio timer due by then. Panics, as tokio does, when
    /// the runtime's clock is not paused.
    #[cfg(feature = "test-util")]
    pub async fn advance(&self, d: Duration) {
        tokio::time::advance(d).await;
    }

    /// Makes this clock the current one on this thread until the guard drops (the previous
    /// one is restored then).
    pub fn enter(&self) -> ClockGuard {
        let prev = CURRENT.with(|c| c.replace(Some(self.clone())));
        ClockGuard {
            prev,
            _not_send: std::marker::PhantomData,
        }
    }
}

/// Restores the previous current clock when dropped; see [`Clock::enter`].
#[must_use = "the clock is current only while the guard lives"]
pub struct ClockGuard {
    prev: Option<Clock>,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl fmt::Debug for ClockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClockGuard").finish_non_exhaustive()
    }
}

impl Drop for ClockGuard {
    fn drop(&mut self) {
        let prev = self.prev.take();
        CURRENT.with(|c| *c.borrow_mut() = prev);
    }
}

/// The current clock of this thread: the one entered last ([`Clock::enter`]), else the real
/// one.
pub fn current() -> Clock {
    CURRENT.with(|c| c.borrow().clone()).unwrap_or_default()
}

/// The time now on the current clock: what reconcilers, the runtime and ctrl-envtest read
/// instead of `Timestamp::now()`.
pub fn now() -> Timestamp {
    CURRENT.with(|c| match &*c.borrow() {
        Some(clock) => clock.now(),
        None => Timestamp::now(),
    })
}

/// A random number from the current clock (seeded in a simulation, see
/// [`Clock::fake_seeded`]).
pub fn random_u64() -> u64 {
    CURRENT.with(|c| match &*c.borrow() {
        Some(clock) => clock.random_u64(),
        None => rand::random(),
    })
}

/// 128 random bits from the current clock, e.g. for a version-4 UUID
/// (`uuid::Builder::from_random_bytes(random_u128().to_le_bytes())`).
pub fn random_u128() -> u128 {
    u128::from(random_u64()) << 64 | u128::from(random_u64())
}

/// A random number in `[0, 1)` from the current clock, for jitter.
pub fn random_f64() -> f64 {
    (random_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// SplitMix64 (Steele, Lea and Flood): one step of a small, well-mixed generator.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// [`now`] as a [`SystemTime`].
pub fn system_now() -> SystemTime {
    SystemTime::from(now())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start() -> Timestamp {
        Timestamp::from_second(1_577_836_800).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn real_is_the_default_and_reads_the_system() {
        assert!(!current().is_fake());
        let before = Timestamp::now();
        let t = now();
        assert!(t >= before && t <= Timestamp::now());
    }

    #[test]
    fn a_plain_test_steps_a_fake_and_the_guard_restores_the_real() {
        let clock = Clock::fake(start());
        {
            let _g = clock.enter();
            assert_eq!(now(), start());
            clock.step(Duration::from_secs(3600));
            assert_eq!(now().as_second() - start().as_second(), 3600);
            let secs = |t: SystemTime| {
                t.duration_since(SystemTime::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .ok()
            };
            assert_eq!(secs(system_now()), Some(start().as_second() as u64 + 3600));
        }
        assert!(!current().is_fake());
        assert!(now() > start() + jiff::SignedDuration::from_hours(24 * 365));
    }

    #[test]
    fn a_seeded_fake_replays_its_random_numbers() {
        let draw = |clock: Clock| {
            let _g = clock.enter();
            (0..4).map(|_| random_u64()).collect::<Vec<_>>()
        };
        let a = draw(Clock::fake_seeded(start(), 42));
        assert_eq!(a, draw(Clock::fake_seeded(start(), 42)));
        assert_ne!(a, draw(Clock::fake_seeded(start(), 43)));
        let f = random_f64();
        assert!((0.0..1.0).contains(&f));
    }

    #[tokio::test(start_paused = true)]
    async fn a_fake_moves_with_tokios_paused_clock_and_its_timers() {
        let clock = Clock::fake(start());
        let _g = clock.enter();
        assert_eq!(now(), start());
        tokio::time::advance(Duration::from_secs(15)).await;
        assert_eq!(now().as_second() - start().as_second(), 15);
        // Auto-advance: a ten-hour sleep on a paused runtime takes no wall time, and the
        // wall clock has moved by exactly ten hours when it wakes.
        tokio::time::sleep(Duration::from_secs(10 * 3600)).await;
        assert_eq!(now().as_second() - start().as_second(), 10 * 3600 + 15);
    }
}
