//! IP addresses, CIDRs and request URIs as Kubernetes parses them: the strict parsing of the
//! CEL IP / CIDR libraries (`k8s.io/apiserver/pkg/cel/library/ip.go`, `cidr.go`: no zones, no
//! IPv4-mapped IPv6 addresses, no leading zeros in a prefix length) and Go's
//! `url.ParseRequestURI` (`library/urls.go`).
//!
//! Two users: the `format` checks of CRD schemas ([`crate::registry::format`]: `ipv4`, `ipv6`,
//! `cidr`, `uri`) and the CEL libraries ([`crate::cel`], behind the `cel` feature), which wrap
//! these values and add their functions.

use std::net::IpAddr;

/// Parses an address as upstream's `ip()` accepts it.
pub(crate) fn parse_ip(s: &str) -> Result<IpAddr, String> {
    if s.contains('%') {
        return Err(format!("IP address with zone value is not allowed: {s}"));
    }
    let ip: IpAddr = s
        .parse()
        .map_err(|_| format!("IP Address {s:?} parse error during conversion from string"))?;
    if let IpAddr::V6(v6) = ip
        && v6.to_ipv4_mapped().is_some()
    {
        return Err(format!("IPv4-mapped IPv6 address is not allowed: {s}"));
    }
    Ok(ip)
}

/// Parses a CIDR as upstream's `cidr()` accepts it: the address and the prefix length.
pub(crate) fn parse_cidr(s: &str) -> Result<(IpAddr, u8), String> {
    let err = || format!("network address parse error during conversion from string: {s:?}");
    let (addr, len) = s.split_once('/').ok_or_else(err)?;
    let ip = parse_ip(addr).map_err(|_| err())?;
    let len: u8 = len.parse().map_err(|_| err())?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    if len > max || len.to_string().len() != s.len() - addr.len() - 1 {
        return Err(err());
    }
    Ok((ip, len))
}

/// A URL as `url.ParseRequestURI` accepts it: absolute (`scheme://...`) or an absolute path
/// (`/...`); the fragment is dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Url {
    /// `https`; empty for a path.
    pub(crate) scheme: String,
    /// `host:port` (user info dropped); empty for a path.
    pub(crate) host: String,
    /// The path as written (escaped).
    pub(crate) path: String,
    /// The query, without its `?`.
    pub(crate) query: String,
}

impl Url {
    /// Parses `s` as `url.ParseRequestURI` would accept it.
    pub(crate) fn parse(s: &str) -> Option<Url> {
        if s.is_empty() || s.contains(|c: char| c.is_control() || c == ' ') {
            return None;
        }
        let s = s.split('#').next().unwrap_or(s);
        let (rest, query) = s.split_once('?').unwrap_or((s, ""));
        if rest.starts_with('/') {
            return Some(Url {
                scheme: String::new(),
                host: String::new(),
                path: rest.into(),
                query: query.into(),
            });
        }
        let (scheme, after) = rest.split_once(':')?;
        let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
        if !scheme_ok {
            return None;
        }
        let (host, path) = match after.strip_prefix("//") {
            Some(auth) => auth.split_at(auth.find('/').unwrap_or(auth.len())),
            None if after.starts_with('/') => ("", after),
            None => return None,
        };
        let host = host.rsplit('@').next().unwrap_or(host);
        Some(Url {
            scheme: scheme.into(),
            host: host.into(),
            path: path.into(),
            query: query.into(),
        })
    }
}

/// What the CEL URL library reads of a URL (`getHostname`, `getPort`).
#[cfg(feature = "cel")]
impl Url {
    /// The host without its port (an IPv6 address without its brackets).
    pub(crate) fn hostname(&self) -> &str {
        if let Some(rest) = self.host.strip_prefix('[') {
            return rest.split(']').next().unwrap_or(rest);
        }
        self.host.split(':').next().unwrap_or("")
    }

    /// The port, empty if none.
    pub(crate) fn port(&self) -> &str {
        let after = match self.host.rfind(']') {
            Some(i) => &self.host[i + 1..],
            None => &self.host,
        };
        after.rsplit_once(':').map_or("", |(_, p)| p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_addresses_as_upstream() {
        assert!(parse_ip("10.0.0.1").is_ok());
        assert!(parse_ip("::ffff:1.2.3.4").is_err());
        assert!(parse_ip("fe80::1%eth0").is_err());
        assert!(parse_cidr("10.0.0.0/8").is_ok());
        assert!(parse_cidr("10.0.0.0/08").is_err());
        assert!(parse_cidr("10.0.0.0/33").is_err());
        assert!(parse_cidr("10.0.0.0").is_err());
    }

    #[test]
    fn parses_request_uris() {
        let u = Url::parse("https://user@example.com:8080/a/b?x=1&x=2#f").unwrap();
        assert_eq!(
            (u.scheme.as_str(), u.host.as_str(), u.path.as_str()),
            ("https", "example.com:8080", "/a/b")
        );
        assert_eq!(u.query, "x=1&x=2");
        assert!(Url::parse("/just/a/path").is_some());
        assert!(Url::parse("example.com").is_none());
        assert!(Url::parse("").is_none());
    }

    #[cfg(feature = "cel")]
    #[test]
    fn splits_host_and_port() {
        let u = Url::parse("https://user@example.com:8080/a/b").unwrap();
        assert_eq!((u.hostname(), u.port()), ("example.com", "8080"));
        let v6 = Url::parse("http://[::1]:80/").unwrap();
        assert_eq!((v6.hostname(), v6.port()), ("::1", "80"));
    }
}
