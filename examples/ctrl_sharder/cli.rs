//! `ctrl-sharder`'s command line: the cli's flags, kubebuilder's manager
//! flags, the leader-election Lease, and the sharder's own (shard lease namespace, sync
//! period, webhook serving); and the webhook endpoint those flags describe.

use std::path::PathBuf;
use std::time::Duration;

use ctrl::manager::{Args, BoxError};
use ctrl::webhook::{self, Server, certs};

use ctrl::cli::{Flags, LeaderElectionFlags, parse_duration};

/// The Lease the sharder replicas compete for, unless `--leader-election-id` names one.
pub const DEFAULT_LEASE_NAME: &str = "ctrl-sharder";

/// The command line.
#[derive(clap::Parser, Debug)]
#[command(
    name = "ctrl-sharder",
    about = "The sharder of kubernetes-controller-sharding ControllerRings (a ctrl example)"
)]
pub struct Cli {
    #[command(flatten)]
    pub flags: Flags,
    #[command(flatten)]
    pub manager: Args,
    #[command(flatten)]
    pub leader: LeaderElectionFlags,
    /// The namespace of the rings' shard Leases.
    #[arg(long, value_name = "NAMESPACE", default_value = "default")]
    pub lease_namespace: String,
    /// How often every object of a ring is checked even when no shard came or went.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub sync_period: Duration,
    /// Where the webhook server listens.
    #[arg(long, value_name = "ADDR", default_value = ":9443")]
    pub webhook_bind_address: String,
    /// The URL the API server calls the webhook at, without the path (default:
    /// `https://<the bound address>`, 127.0.0.1 for an unspecified host).
    #[arg(long, value_name = "URL")]
    pub webhook_url: Option<String>,
    /// A directory with the serving certificate (`tls.crt`, `tls.key`); default: a
    /// fresh self-signed one for localhost and 127.0.0.1.
    #[arg(long, value_name = "DIR", requires = "webhook_ca_file")]
    pub webhook_cert_dir: Option<PathBuf>,
    /// The PEM file of the CA that signed `--webhook-cert-dir`'s certificate (the
    /// webhook configuration's caBundle).
    #[arg(long, value_name = "FILE")]
    pub webhook_ca_file: Option<PathBuf>,
}

/// Splits `host:port` (`:9443` = every interface); a clear error on anything else.
fn split_addr(addr: &str) -> Result<(String, u16), BoxError> {
    let (host, port) = addr
        .rsplit_once(':')
        .ok_or_else(|| format!("--webhook-bind-address {addr:?}: expected host:port"))?;
    let port = port
        .parse()
        .map_err(|_| format!("--webhook-bind-address {addr:?}: {port:?} is not a port"))?;
    Ok((host.trim_matches(['[', ']']).to_string(), port))
}

/// The webhook server `bind_address` describes, bound, with the URL the API server
/// calls and the CA bundle that trusts it.
pub fn webhook_endpoint(
    cli: &Cli,
    bind_address: &str,
) -> Result<(Server, String, String), BoxError> {
    let (host, port) = split_addr(bind_address)?;
    let (cert_dir, ca_pem) = match (&cli.webhook_cert_dir, &cli.webhook_ca_file) {
        (Some(dir), Some(ca)) => (dir.clone(), std::fs::read_to_string(ca)?),
        _ => {
            let dir = certs::temp_cert_dir()?;
            let generated = certs::generate_self_signed(&dir, &[])?;
            (dir, generated.ca_pem)
        }
    };
    let server = Server::new(webhook::Options {
        host,
        port,
        cert_dir,
        ..Default::default()
    });
    let mut addr = server.bind()?;
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    let url = cli
        .webhook_url
        .clone()
        .unwrap_or_else(|| format!("https://{addr}"));
    Ok((server, url, ca_pem))
}

#[cfg(test)]
mod tests {
    #[test]
    fn bind_addresses_split_into_host_and_port() {
        assert_eq!(super::split_addr(":9443").unwrap(), (String::new(), 9443));
        assert_eq!(
            super::split_addr("127.0.0.1:0").unwrap(),
            ("127.0.0.1".into(), 0)
        );
        assert!(super::split_addr("9443").is_err());
        assert!(super::split_addr("host:http").is_err());
    }
}
