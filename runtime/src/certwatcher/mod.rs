//! [`CertWatcher`]: a serving certificate and key read from files and re-read when
//! they change (controller-runtime's `pkg/certwatcher`).
//!
//! The webhook server and the secure metrics server hand a watcher to rustls as its certificate
//! resolver, so every new TLS connection gets the certificate currently on disk:
//! cert-manager can rotate `tls.crt`/`tls.key` and no restart is needed. The watcher
//! checks the files' size and modification time every [`DEFAULT_CHANGE_CHECK`] and
//! re-reads them on a change, and re-reads them anyway every
//! [`DEFAULT_WATCH_INTERVAL`] (Go's 10 s poll). A pair that fails to load is logged and
//! counted, and the last good certificate keeps being served. Reads are counted in
//! `certwatcher_read_certificate_total` / `certwatcher_read_certificate_errors_total`
//! in the process registry ([`crate::metrics`]).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use parking_lot::RwLock;
use prometheus::IntCounter;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio_util::sync::CancellationToken;

/// The certificate file a serving directory holds by default (the name cert-manager and
/// kubebuilder's kustomize scaffolding write; Go's `CertName` default in `webhook.Options`
/// and `metricsserver.Options`).
pub const DEFAULT_CERT_NAME: &str = "tls.crt";

/// The key file a serving directory holds by default (Go's `KeyName` default).
pub const DEFAULT_KEY_NAME: &str = "tls.key";

/// How often the files are re-read whatever their metadata says (Go's poll interval).
pub const DEFAULT_WATCH_INTERVAL: Duration = Duration::from_secs(10);

/// How often the files' size and modification time are checked for a change.
pub const DEFAULT_CHANGE_CHECK: Duration = Duration::from_millis(500);

/// Why a certificate pair could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file holds no usable PEM certificate or key.
    #[error("parsing {path}: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// The key does not match the certificate, or is of an unsupported type.
    #[error("loading key pair: {0}")]
    KeyPair(rustls::Error),
}

struct Metrics {
    reads: IntCounter,
    errors: IntCounter,
}

fn metrics() -> &'static Metrics {
    static M: OnceLock<Metrics> = OnceLock::new();
    M.get_or_init(|| {
        let reads = IntCounter::new(
            "certwatcher_read_certificate_total",
            "Total number of certificate reads",
        )
        .expect("static metric definition is valid");
        let errors = IntCounter::new(
            "certwatcher_read_certificate_errors_total",
            "Total number of certificate read errors",
        )
        .expect("static metric definition is valid");
        let reg = crate::metrics::registry();
        let _ = reg.register(Box::new(reads.clone()));
        let _ = reg.register(Box::new(errors.clone()));
        Metrics { reads, errors }
    })
}

/// The process-wide ring crypto provider, installed as the default if none is
/// (idempotent; ctrl uses ring only).
pub fn crypto_provider() -> Arc<CryptoProvider> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()))
}

/// Reads `cert_path` (a PEM chain, leaf first) and `key_path` (a PEM private key)
/// into a rustls [`CertifiedKey`].
pub fn load_key_pair(cert_path: &Path, key_path: &Path) -> Result<CertifiedKey, Error> {
    let cert_pem = std::fs::read(cert_path).map_err(|source| Error::Read {
        path: cert_path.to_path_buf(),
        source,
    })?;
    let key_pem = std::fs::read(key_path).map_err(|source| Error::Read {
        path: key_path.to_path_buf(),
        source,
    })?;
    parse_key_pair(&cert_pem, &key_pem, cert_path, key_path)
}

/// Parses a PEM chain (leaf first) and a PEM private key into a rustls
/// [`CertifiedKey`], failing if the key is not the certificate's; `cert_path` and
/// `key_path` only name them in errors.
pub fn parse_key_pair(
    cert_pem: &[u8],
    key_pem: &[u8],
    cert_path: &Path,
    key_path: &Path,
) -> Result<CertifiedKey, Error> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| Error::Parse {
            path: cert_path.to_path_buf(),
            reason: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(Error::Parse {
            path: cert_path.to_path_buf(),
            reason: "no CERTIFICATE block".into(),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| Error::Parse {
        path: key_path.to_path_buf(),
        reason: e.to_string(),
    })?;
    CertifiedKey::from_der(chain, key, &crypto_provider()).map_err(Error::KeyPair)
}

type Stamp = Option<(SystemTime, u64)>;

fn stamp(path: &Path) -> Stamp {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// A certificate/key pair on disk, kept current (Go's `certwatcher.CertWatcher`).
pub struct CertWatcher {
    cert_path: PathBuf,
    key_path: PathBuf,
    current: RwLock<Arc<CertifiedKey>>,
    stamps: parking_lot::Mutex<(Stamp, Stamp)>,
    watch_interval: Duration,
    change_check: Duration,
}

impl fmt::Debug for CertWatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertWatcher")
            .field("cert_path", &self.cert_path)
            .field("key_path", &self.key_path)
            .finish_non_exhaustive()
    }
}

impl CertWatcher {
    /// Loads the pair now (failing if it cannot) and returns a watcher for it (Go's
    /// `certwatcher.New`).
    pub fn new(cert_path: impl Into<PathBuf>, key_path: impl Into<PathBuf>) -> Result<Self, Error> {
        let cert_path = cert_path.into();
        let key_path = key_path.into();
        let stamps = (stamp(&cert_path), stamp(&key_path));
        let first = Self::read(&cert_path, &key_path)?;
        Ok(Self {
            cert_path,
            key_path,
            current: RwLock::new(Arc::new(first)),
            stamps: parking_lot::Mutex::new(stamps),
            watch_interval: DEFAULT_WATCH_INTERVAL,
            change_check: DEFAULT_CHANGE_CHECK,
        })
    }

    /// Sets the unconditional re-read interval (Go's `WithWatchInterval`).
    pub fn with_watch_interval(mut self, every: Duration) -> Self {
        self.watch_interval = every.max(Duration::from_millis(10));
        self
    }

    /// Sets how often the files' metadata is checked for a change.
    pub fn with_change_check(mut self, every: Duration) -> Self {
        self.change_check = every.max(Duration::from_millis(10));
        self
    }

    fn read(cert: &Path, key: &Path) -> Result<CertifiedKey, Error> {
        let m = metrics();
        m.reads.inc();
        load_key_pair(cert, key).inspect_err(|_| m.errors.inc())
    }

    /// Re-reads the pair now (Go's `ReadCertificate`); on failure the previous pair
    /// stays in use.
    pub fn read_certificate(&self) -> Result<(), Error> {
        let stamps = (stamp(&self.cert_path), stamp(&self.key_path));
        let pair = Self::read(&self.cert_path, &self.key_path)?;
        *self.current.write() = Arc::new(pair);
        *self.stamps.lock() = stamps;
        tracing::info!(cert = %self.cert_path.display(), key = %self.key_path.display(), "Updated current TLS certificate");
        Ok(())
    }

    /// The pair served now.
    pub fn certificate(&self) -> Arc<CertifiedKey> {
        self.current.read().clone()
    }

    fn changed(&self) -> bool {
        let now = (stamp(&self.cert_path), stamp(&self.key_path));
        *self.stamps.lock() != now
    }

    /// Keeps the pair current until `ctx` is cancelled (Go's `Start`).
    pub async fn watch(&self, ctx: CancellationToken) {
        let mut check = tokio::time::interval(self.change_check);
        check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut poll = tokio::time::interval(self.watch_interval);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        poll.tick().await;
        loop {
            let forced = tokio::select! {
                _ = ctx.cancelled() => return,
                _ = check.tick() => false,
                _ = poll.tick() => true,
            };
            if (forced || self.changed())
                && let Err(error) = self.read_certificate()
            {
                // Mid-rotation (key written, cert not yet): keep the old pair, retry later.
                tracing::error!(%error, "error re-reading certificate");
                *self.stamps.lock() = (None, None);
            }
        }
    }
}

impl ResolvesServerCert for CertWatcher {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.certificate())
    }
}
