//! The most heap a bench row held at once: a thread samples the global allocator's count
//! (the bench's `cap::Cap`) while the row runs and keeps the maximum. What the row owns, free
//! of the pages an allocator retained from earlier rows (which the resident set counts).
//! `process.rs` beside it reads what the kernel says (CPU, resident set).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// How often the sampler reads the count (one atomic load: the thread's wake-ups cost the row
/// about 1 % of a core).
const EVERY: Duration = Duration::from_millis(1);

/// A sampler running on a thread of its own until [`Peak::stop`].
pub struct Peak {
    stop: Arc<AtomicBool>,
    max: Arc<AtomicUsize>,
    thread: std::thread::JoinHandle<()>,
}

impl Peak {
    /// Starts sampling `held` (the allocator's bytes in use).
    pub fn start(held: fn() -> usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let max = Arc::new(AtomicUsize::new(held()));
        let (s, m) = (stop.clone(), max.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                m.fetch_max(held(), Ordering::Relaxed);
                std::thread::sleep(EVERY);
            }
        });
        Self { stop, max, thread }
    }

    /// Stops sampling; the maximum seen, above `before`.
    pub fn stop(self, before: usize) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
        self.max.load(Ordering::Relaxed).saturating_sub(before)
    }
}
