//! The watch stream of one informer scope: kube's `watcher` with kube's default backoff on ctrl's clock (`super::backoff`), through a
//! streaming list when the options ask for one, and the fallback to list and watch when the
//! server refuses it (client-go's reflector with the `WatchListClient` feature:
//! `tools/cache/reflector.go`, which falls back to a LIST when the watch-list request fails).
//!
//! kube's watcher does both protocols (`watcher::Config::streaming_lists`); this module only
//! decides which and switches once: a streaming watch the server answers with a client error
//! (400 Bad Request or 422 Invalid: `sendInitialEvents` unknown or forbidden) before the first
//! sync is a refusal, and the scope then lists and watches for the informer's lifetime. Other
//! errors (a dropped connection, 410 Expired, 5xx) are retried by the watcher as they are.
//! The informer (`super::informer`) reads the stream; it does not know which protocol runs.

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};

use super::backoff::WatchBackoff;
use super::object::CacheObject;

/// One event of kube's watcher.
pub(crate) type WatchResult<K> = Result<Event<K>, watcher::Error>;

/// The events of `api` with `cfg`: through a streaming list when `streaming` (falling back to
/// list and watch if the server refuses it), else list and watch.
pub(crate) fn watch<K: CacheObject>(
    api: Api<K>,
    cfg: watcher::Config,
    streaming: bool,
    name: String,
) -> BoxStream<'static, WatchResult<K>> {
    if !streaming {
        return watcher::watcher(api, cfg)
            .backoff(WatchBackoff::default())
            .boxed();
    }
    let first = watcher::watcher(api.clone(), cfg.clone().streaming_lists())
        .backoff(WatchBackoff::default())
        .boxed();
    let state = State::Streaming {
        events: first,
        synced: false,
        fallback: Box::new(Fallback { api, cfg, name }),
    };
    futures::stream::unfold(state, next).boxed()
}

/// Where the scope's events come from.
enum State<K: CacheObject> {
    /// The streaming list, until it has synced once or the server refused it.
    Streaming {
        events: BoxStream<'static, WatchResult<K>>,
        synced: bool,
        fallback: Box<Fallback<K>>,
    },
    /// List and watch, after a refusal.
    Listing(BoxStream<'static, WatchResult<K>>),
}

/// What a fallback to list and watch needs: the scope's `Api` and watcher config, and the
/// informer's name for the log.
struct Fallback<K> {
    api: Api<K>,
    cfg: watcher::Config,
    name: String,
}

async fn next<K: CacheObject>(state: State<K>) -> Option<(WatchResult<K>, State<K>)> {
    match state {
        State::Listing(mut events) => {
            let ev = events.next().await?;
            Some((ev, State::Listing(events)))
        }
        State::Streaming {
            mut events,
            synced,
            fallback,
        } => {
            let ev = events.next().await?;
            if !synced && matches!(&ev, Err(e) if refused(e)) {
                if let Err(error) = &ev {
                    tracing::warn!(informer = %fallback.name, %error, "the server refused the streaming list; falling back to list and watch");
                }
                let Fallback { api, cfg, .. } = *fallback;
                let listing = watcher::watcher(api, cfg)
                    .backoff(WatchBackoff::default())
                    .boxed();
                return Box::pin(next(State::Listing(listing))).await;
            }
            let synced = synced || matches!(ev, Ok(Event::InitDone));
            let state = State::Streaming {
                events,
                synced,
                fallback,
            };
            Some((ev, state))
        }
    }
}

/// Whether the server refused the streaming list request itself.
fn refused(e: &watcher::Error) -> bool {
    let status = match e {
        watcher::Error::WatchStartFailed(kube::Error::Api(s)) => s.code,
        watcher::Error::WatchError(s) => s.code,
        _ => return false,
    };
    matches!(status, 400 | 422)
}
