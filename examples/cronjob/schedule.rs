//! Cron schedules: parsing (the `croner` crate: the controller and the validating
//! webhook share [`parse`]) and the tutorial's `getNextSchedule` ([`runs`]): the most
//! recent time the CronJob missed and the next time it runs, in UTC.

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use ctrl::clock::Timestamp;
use k8s_openapi::jiff::tz::TimeZone;
use k8s_openapi::jiff::{SignedDuration, Zoned};

/// More missed times than this and the schedule is not run: a clock skewed by years
/// would otherwise make the controller walk them all (the tutorial's limit).
pub const MAX_MISSED: usize = 100;

/// Parses `schedule`: five cron fields (`*/5 * * * *`), an alias (`@hourly`, `@daily`,
/// ...), or six fields whose first is seconds (this example's extension).
pub fn parse(schedule: &str) -> Result<Cron, String> {
    let parser = CronParser::builder()
        .seconds(Seconds::Optional)
        .year(Year::Disallowed)
        .build();
    parser.parse(schedule).map_err(|e| e.to_string())
}

/// When a CronJob runs: the latest scheduled time it missed, if any, and the next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Runs {
    /// The most recent scheduled time after `earliest` and not after `now`.
    pub missed: Option<Timestamp>,
    /// The first scheduled time after `now`.
    pub next: Timestamp,
}

/// The runs of `cron` as of `now`, counting from `since` (the last scheduled time, else
/// the CronJob's creation) or from `now - starting_deadline` if that is later.
pub fn runs(
    cron: &Cron,
    since: Timestamp,
    starting_deadline: Option<i64>,
    now: Timestamp,
) -> Result<Runs, String> {
    let deadline =
        starting_deadline.and_then(|s| now.checked_sub(SignedDuration::from_secs(s)).ok());
    let earliest = deadline.map_or(since, |d| d.max(since));
    let next = next_after(cron, now)?;
    if earliest > now {
        return Ok(Runs { missed: None, next });
    }
    let mut missed = None;
    let due = cron.iter_after(utc(earliest)).map(|z| z.timestamp());
    for (n, t) in due.take_while(|t| *t <= now).enumerate() {
        if n >= MAX_MISSED {
            return Err(format!(
                "too many missed start times (> {MAX_MISSED}); set or decrease \
                 .spec.startingDeadlineSeconds or check clock skew"
            ));
        }
        missed = Some(t);
    }
    Ok(Runs { missed, next })
}

/// The first time of `cron` after `t`.
pub fn next_after(cron: &Cron, t: Timestamp) -> Result<Timestamp, String> {
    (cron.find_next_occurrence(&utc(t), false))
        .map(|z| z.timestamp())
        .map_err(|e| e.to_string())
}

fn utc(t: Timestamp) -> Zoned {
    t.to_zoned(TimeZone::UTC)
}
