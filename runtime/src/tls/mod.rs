//! TLS for every server the manager runs over TLS — the webhook server and the secure
//! metrics server, both above this module: the
//! hardening options ([`TlsOptions`]: HTTP/2 off unless enabled, a minimum TLS
//! version, hooks that adjust the rustls configuration, as Go's `TLSOpts
//! []func(*tls.Config)`), the rustls [`ServerConfig`] built from them, an in-memory
//! self-signed certificate ([`self_signed`]) for servers with no certificate on disk,
//! and the accept step both servers share (`accept`: plain HTTP on the TLS port gets
//! Go's `400`, the handshake is bounded in time).
//!
//! Certificates on disk come from [`crate::certwatcher`], which keeps them current; the
//! crypto provider is ring ([`crate::certwatcher::crypto_provider`]).

mod accept;
mod insecure;

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{RootCertStore, ServerConfig};

use crate::certwatcher::crypto_provider;

pub(crate) use accept::{accept, negotiated_h2};
pub use insecure::insecure_client_config;

/// The ALPN protocol id of HTTP/2.
pub const ALPN_H2: &[u8] = b"h2";
/// The ALPN protocol id of HTTP/1.1.
pub const ALPN_HTTP1: &[u8] = b"http/1.1";

/// Why `enable_http2` (`--enable-http2=true`) is refused when ctrl was built without HTTP/2.
pub const HTTP2_NEEDS_FEATURE: &str = "HTTP/2 (--enable-http2, TlsOptions::enable_http2) needs ctrl's `http2` feature \
     (ctrl-runtime's `http2`): this build serves HTTP/1.1 only";

/// The lowest TLS version a server accepts (Go's `tls.Config.MinVersion`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TlsVersion {
    /// TLS 1.2 and 1.3 (the default, as Go's `tls.VersionTLS12`).
    #[default]
    Tls12,
    /// TLS 1.3 only.
    Tls13,
}

const TLS12_UP: &[&rustls::SupportedProtocolVersion] =
    &[&rustls::version::TLS13, &rustls::version::TLS12];
const TLS13_ONLY: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS13];

impl TlsVersion {
    fn versions(self) -> &'static [&'static rustls::SupportedProtocolVersion] {
        match self {
            TlsVersion::Tls12 => TLS12_UP,
            TlsVersion::Tls13 => TLS13_ONLY,
        }
    }
}

/// A hook that adjusts a server's rustls configuration after ctrl has built it (one
/// of Go's `TLSOpts []func(*tls.Config)`): ALPN, session storage, a certificate
/// resolver of your own...
pub type ConfigHook = Arc<dyn Fn(&mut ServerConfig) + Send + Sync>;

/// How a TLS server is hardened (kubebuilder's `tlsOpts`). The default serves TLS
/// 1.2 and 1.3 and offers only HTTP/1.1 (ALPN `http/1.1`): HTTP/2 stays off unless
/// `enable_http2` (kubebuilder's `--enable-http2`, off by default since the HTTP/2
/// rapid-reset CVEs), which needs the `http2` feature: without it hyper's HTTP/2 (h2) is not
/// compiled, [`TlsOptions::server_config`] refuses `enable_http2` with
/// [`HTTP2_NEEDS_FEATURE`], and no hook can make ALPN offer `h2`.
#[derive(Clone, Default)]
pub struct TlsOptions {
    /// Offer HTTP/2 (ALPN `h2`, then `http/1.1`). Default false: only HTTP/1.1, and a
    /// client that negotiates nothing gets HTTP/1.1 too. True needs the `http2` feature.
    pub enable_http2: bool,
    /// The lowest TLS version accepted; default TLS 1.2.
    pub min_version: TlsVersion,
    /// Hooks run in order on the built configuration.
    pub hooks: Vec<ConfigHook>,
}

impl std::fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsOptions")
            .field("enable_http2", &self.enable_http2)
            .field("min_version", &self.min_version)
            .field("hooks", &self.hooks.len())
            .finish()
    }
}

impl TlsOptions {
    /// These options with `hook` added (Go's `append(tlsOpts, f)`).
    pub fn with_hook(mut self, hook: impl Fn(&mut ServerConfig) + Send + Sync + 'static) -> Self {
        self.hooks.push(Arc::new(hook));
        self
    }

    /// The ALPN protocols offered.
    pub fn alpn(&self) -> Vec<Vec<u8>> {
        if self.enable_http2 {
            vec![ALPN_H2.to_vec(), ALPN_HTTP1.to_vec()]
        } else {
            vec![ALPN_HTTP1.to_vec()]
        }
    }

    /// The rustls server configuration: certificates from `certs`, client
    /// certificates required (signed by the PEM CA file `client_ca`) if given, then
    /// these options and hooks.
    pub fn server_config(
        &self,
        certs: Arc<dyn ResolvesServerCert>,
        client_ca: Option<&Path>,
    ) -> Result<ServerConfig, String> {
        if self.enable_http2 && !cfg!(feature = "http2") {
            return Err(HTTP2_NEEDS_FEATURE.to_string());
        }
        let provider = crypto_provider();
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(self.min_version.versions())
            .map_err(|e| e.to_string())?;
        let builder = match client_ca {
            None => builder.with_no_client_auth(),
            Some(path) => {
                let roots = Arc::new(read_roots(path)?);
                let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider)
                    .build()
                    .map_err(|e| format!("client CA verifier: {e}"))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut cfg = builder.with_cert_resolver(certs);
        cfg.alpn_protocols = self.alpn();
        for hook in &self.hooks {
            hook(&mut cfg);
        }
        if !cfg!(feature = "http2") {
            // Served as HTTP/1.1 whatever ALPN chose: never let a hook offer h2.
            cfg.alpn_protocols.retain(|p| p != ALPN_H2);
        }
        Ok(cfg)
    }
}

fn read_roots(path: &Path) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    let pems = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("reading client CA {}: {e}", path.display()))?;
    for c in pems {
        let c = c.map_err(|e| format!("parsing client CA {}: {e}", path.display()))?;
        roots
            .add(c)
            .map_err(|e| format!("adding client CA {}: {e}", path.display()))?;
    }
    Ok(roots)
}

/// Serves one certificate for every connection.
#[derive(Debug)]
pub struct FixedCert(pub Arc<CertifiedKey>);

impl ResolvesServerCert for FixedCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}

/// A self-signed certificate for `localhost` and `127.0.0.1`, in memory (what Go's
/// metrics server falls back to, `certutil.GenerateSelfSignedCertKey`): the traffic is
/// encrypted, the client does not verify the server.
pub fn self_signed() -> Result<FixedCert, String> {
    let hosts = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let c = rcgen::generate_simple_self_signed(hosts).map_err(|e| e.to_string())?;
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(c.signing_key.serialize_der()));
    let chain = vec![c.cert.der().clone()];
    let pair = CertifiedKey::from_der(chain, key, &crypto_provider()).map_err(|e| e.to_string())?;
    Ok(FixedCert(Arc::new(pair)))
}

/// What a server needs to serve TLS: the rustls configuration, the certificate
/// watcher to keep running while it serves (if its certificates come from files) and
/// how long a client has for the handshake.
#[derive(Clone)]
pub struct Serving {
    pub(crate) acceptor: tokio_rustls::TlsAcceptor,
    pub(crate) certs: Option<Arc<crate::certwatcher::CertWatcher>>,
    pub(crate) handshake_timeout: std::time::Duration,
}

impl std::fmt::Debug for Serving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serving")
            .field("certs", &self.certs)
            .field("handshake_timeout", &self.handshake_timeout)
            .finish_non_exhaustive()
    }
}

/// How long a client has for the TLS handshake by default.
pub const DEFAULT_HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl Serving {
    /// Serves with `cfg`; `certs`, if given, is watched while the server runs.
    pub fn new(cfg: ServerConfig, certs: Option<Arc<crate::certwatcher::CertWatcher>>) -> Self {
        Self {
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(cfg)),
            certs,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
        }
    }
}
