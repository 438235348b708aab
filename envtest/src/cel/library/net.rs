//! Kubernetes' CEL IP and CIDR libraries (`library/ip.go`, `library/cidr.go`): `ip(s)`,
//! `isIP(s)`, `ip.isCanonical(s)`, `family`, `isUnspecified`, `isLoopback`,
//! `isLinkLocalMulticast`, `isLinkLocalUnicast`, `isGlobalUnicast`; `cidr(s)`, `isCIDR(s)`,
//! `containsIP`, `containsCIDR`, `ip()` (of a CIDR), `masked`, `prefixLength`. As upstream,
//! IPv4-mapped IPv6 addresses and zones are refused: the parsing is [`crate::api::net`]'s, this
//! module makes the values CEL values and adds the functions.

use std::net::IpAddr;
use std::sync::Arc;

use cel::extractors::This;
use cel::objects::Opaque;
use cel::{Context, ExecutionError, Value};

use crate::api::net::{parse_cidr, parse_ip};

use super::fail;

/// An IP address value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ip(IpAddr);

/// A CIDR value: an address and a prefix length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cidr(IpAddr, u8);

impl Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        "net.IP"
    }
}
impl Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        "net.IPPrefix"
    }
}

fn bits(ip: IpAddr) -> (u128, u32) {
    match ip {
        IpAddr::V4(a) => (u32::from(a) as u128, 32),
        IpAddr::V6(a) => (u128::from(a), 128),
    }
}

fn masked(ip: IpAddr, len: u8) -> IpAddr {
    let (b, width) = bits(ip);
    let mask = if len == 0 {
        0
    } else {
        u128::MAX << (width - len as u32)
    };
    let mask = if width == 32 {
        mask & 0xffff_ffff
    } else {
        mask
    };
    match ip {
        IpAddr::V4(_) => IpAddr::V4(((b & mask) as u32).into()),
        IpAddr::V6(_) => IpAddr::V6((b & mask).into()),
    }
}

fn contains(c: Cidr, ip: IpAddr) -> bool {
    ip.is_ipv4() == c.0.is_ipv4() && masked(ip, c.1) == masked(c.0, c.1)
}

fn ip_of(v: &Value, f: &str) -> Result<IpAddr, ExecutionError> {
    match v {
        Value::Opaque(o) => o.downcast_ref::<Ip>().map(|i| i.0),
        Value::String(s) => parse_ip(s).ok(),
        _ => None,
    }
    .ok_or_else(|| fail(f, format!("no such overload: {f}")))
}

fn cidr_of(v: &Value, f: &str) -> Result<Cidr, ExecutionError> {
    match v {
        Value::Opaque(o) => o.downcast_ref::<Cidr>().copied(),
        Value::String(s) => parse_cidr(s).ok().map(|(a, l)| Cidr(a, l)),
        _ => None,
    }
    .ok_or_else(|| fail(f, format!("no such overload: {f}")))
}

fn wrap<T: Opaque>(t: T) -> Value {
    Value::Opaque(Arc::new(t))
}

/// `ip(s)`, or on a CIDR `c.ip()`.
fn ip(This(v): This<Value>) -> Result<Value, ExecutionError> {
    match &v {
        Value::String(s) => parse_ip(s).map(|i| wrap(Ip(i))).map_err(|e| fail("ip", e)),
        other => cidr_of(other, "ip").map(|c| wrap(Ip(c.0))),
    }
}

/// Context functions of this library.
pub(super) fn register(ctx: &mut Context) -> Result<(), cel::DeclarationError> {
    ctx.add_function("ip", ip)?;
    ctx.add_function("isIP", |s: Arc<String>| parse_ip(&s).is_ok())?;
    ctx.add_function("ip.isCanonical", |s: Arc<String>| {
        let ip = parse_ip(&s).map_err(|e| fail("ip.isCanonical", e))?;
        Ok::<_, ExecutionError>(ip.to_string() == *s)
    })?;
    ctx.add_function("family", |This(v): This<Value>| {
        ip_of(&v, "family").map(|i| if i.is_ipv4() { 4i64 } else { 6 })
    })?;
    register_predicates(ctx)?;
    register_cidr(ctx)
}

fn register_predicates(ctx: &mut Context) -> Result<(), cel::DeclarationError> {
    ctx.add_function("isUnspecified", |This(v): This<Value>| {
        ip_of(&v, "isUnspecified").map(|i| i.is_unspecified())
    })?;
    ctx.add_function("isLoopback", |This(v): This<Value>| {
        ip_of(&v, "isLoopback").map(|i| i.is_loopback())
    })?;
    ctx.add_function("isLinkLocalMulticast", |This(v): This<Value>| {
        ip_of(&v, "isLinkLocalMulticast").map(|i| match i {
            IpAddr::V4(a) => a.octets()[..3] == [224, 0, 0],
            IpAddr::V6(a) => a.segments()[0] & 0xff0f == 0xff02,
        })
    })?;
    ctx.add_function("isLinkLocalUnicast", |This(v): This<Value>| {
        ip_of(&v, "isLinkLocalUnicast").map(|i| match i {
            IpAddr::V4(a) => a.is_link_local(),
            IpAddr::V6(a) => a.segments()[0] & 0xffc0 == 0xfe80,
        })
    })?;
    ctx.add_function("isGlobalUnicast", |This(v): This<Value>| {
        ip_of(&v, "isGlobalUnicast").map(|i| match i {
            IpAddr::V4(a) => {
                !(a.is_unspecified()
                    || a.is_loopback()
                    || a.is_link_local()
                    || a.is_multicast()
                    || a.is_broadcast())
            }
            IpAddr::V6(a) => {
                !(a.is_unspecified() || a.is_loopback() || a.is_multicast())
                    && a.segments()[0] & 0xffc0 != 0xfe80
            }
        })
    })?;
    Ok(())
}

fn register_cidr(ctx: &mut Context) -> Result<(), cel::DeclarationError> {
    ctx.add_function("cidr", |s: Arc<String>| {
        parse_cidr(&s)
            .map(|(a, l)| wrap(Cidr(a, l)))
            .map_err(|e| fail("cidr", e))
    })?;
    ctx.add_function("isCIDR", |s: Arc<String>| parse_cidr(&s).is_ok())?;
    ctx.add_function("containsIP", |This(v): This<Value>, o: Value| {
        Ok::<_, ExecutionError>(contains(
            cidr_of(&v, "containsIP")?,
            ip_of(&o, "containsIP")?,
        ))
    })?;
    ctx.add_function("containsCIDR", |This(v): This<Value>, o: Value| {
        let (outer, inner) = (cidr_of(&v, "containsCIDR")?, cidr_of(&o, "containsCIDR")?);
        Ok::<_, ExecutionError>(inner.1 >= outer.1 && contains(outer, inner.0))
    })?;
    ctx.add_function("masked", |This(v): This<Value>| {
        cidr_of(&v, "masked").map(|c| wrap(Cidr(masked(c.0, c.1), c.1)))
    })?;
    ctx.add_function("prefixLength", |This(v): This<Value>| {
        cidr_of(&v, "prefixLength").map(|c| c.1 as i64)
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs_contain_their_addresses() {
        let c = Cidr("10.0.0.0".parse().unwrap(), 8);
        assert!(contains(c, "10.1.2.3".parse().unwrap()));
        assert!(!contains(c, "11.0.0.1".parse().unwrap()));
    }
}
