//! Service defaults (`pkg/apis/core/v1/defaults.go`, `SetDefaults_Service`) and what the
//! Service REST storage allocates (`pkg/registry/core/service/storage/alloc.go`): the IP
//! families of a single-stack IPv4 cluster, a cluster IP from the service CIDR [`CIDR`]
//! (10.0.0.0/24 as Go's envtest; [`KUBERNETES_IP`] is the `default/kubernetes` Service's) and
//! node ports from 30000-32767, each checked against the Services stored. Nothing is kept
//! besides the Services themselves, so deleting one frees its addresses; writes that allocate
//! are serialized by the Apiserver's allocation lock (`super::Allocation`).

use std::collections::HashSet;
use std::net::Ipv4Addr;

use serde_json::{Value, json};

use super::{each, object, or_set, or_set_str};
use crate::api::status::ApiError;
use crate::api::validation::FieldCause;
use crate::storage::{ObjKey, Store};

/// The service CIDR, as Go's envtest starts kube-apiserver (`--service-cluster-ip-range`).
pub(crate) const CIDR: &str = "10.0.0.0/24";
/// The first address of the CIDR: the `default/kubernetes` Service's.
pub(crate) const KUBERNETES_IP: &str = "10.0.0.1";
/// kube-apiserver's default `--service-node-port-range`.
const NODE_PORTS: std::ops::RangeInclusive<i64> = 30000..=32767;
/// `DefaultClientIPServiceAffinitySeconds`.
const CLIENT_IP_TIMEOUT: i64 = 10800;

/// `SetDefaults_Service`.
pub(crate) fn defaults(obj: &mut Value) {
    let Some(spec) = object(obj, "spec") else {
        return;
    };
    or_set_str(spec, "sessionAffinity", "None");
    match spec["sessionAffinity"].as_str() {
        Some("None") => {
            if let Some(o) = spec.as_object_mut() {
                o.remove("sessionAffinityConfig");
            }
        }
        Some("ClientIP") => {
            let t = spec.pointer("/sessionAffinityConfig/clientIP/timeoutSeconds");
            if t.is_none_or(Value::is_null) {
                spec["sessionAffinityConfig"] =
                    json!({"clientIP": {"timeoutSeconds": CLIENT_IP_TIMEOUT}});
            }
        }
        _ => {}
    }
    or_set_str(spec, "type", "ClusterIP");
    for p in each(spec, "ports") {
        or_set_str(p, "protocol", "TCP");
        let t = p.get("targetPort");
        if t.is_none_or(|t| t.is_null() || t == &json!(0) || t == &json!("")) {
            p["targetPort"] = p.get("port").cloned().unwrap_or(json!(0));
        }
    }
    let ty = spec["type"].as_str().unwrap_or("").to_string();
    let external_ips = spec
        .get("externalIPs")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    let accessible =
        ty == "LoadBalancer" || ty == "NodePort" || (ty == "ClusterIP" && external_ips);
    if accessible {
        or_set_str(spec, "externalTrafficPolicy", "Cluster");
    }
    if ["NodePort", "LoadBalancer", "ClusterIP"].contains(&ty.as_str()) {
        or_set(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if ty == "LoadBalancer" {
        or_set(spec, "allocateLoadBalancerNodePorts", json!(true));
        for ing in obj
            .pointer_mut("/status/loadBalancer/ingress")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if ing
                .get("ip")
                .and_then(Value::as_str)
                .is_some_and(|i| !i.is_empty())
            {
                or_set(ing, "ipMode", json!("VIP"));
            }
        }
    }
}

/// The addresses and node ports held by the stored Services (one excluded: the one being
/// updated).
#[derive(Debug, Default)]
pub(crate) struct Used {
    ips: HashSet<Ipv4Addr>,
    ports: HashSet<i64>,
}

impl Used {
    /// What the Services in `store` hold, `except` one.
    pub(crate) fn read(store: &Store, except: &ObjKey) -> Used {
        let key = crate::storage::store_key("", "services");
        let mut used = Used::default();
        let Ok((_, items)) = store.list(&key, None, None) else {
            return used;
        };
        for (k, bytes) in items.iter().filter(|(k, _)| k != except) {
            let _ = k;
            let svc = crate::storage::parse(bytes);
            let spec = svc.get("spec").unwrap_or(&Value::Null);
            for ip in spec
                .get("clusterIPs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(ip) = ip.as_str().and_then(|s| s.parse().ok()) {
                    used.ips.insert(ip);
                }
            }
            used.ports.extend(node_ports(spec));
        }
        used
    }
}

/// Every node port a Service spec holds (its ports' and its health check's).
fn node_ports(spec: &Value) -> impl Iterator<Item = i64> + '_ {
    let ports = spec
        .get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    ports
        .filter_map(|p| p.get("nodePort").and_then(Value::as_i64))
        .chain(spec.get("healthCheckNodePort").and_then(Value::as_i64))
        .filter(|p| *p != 0)
}

/// The create (`old` none) or update of a Service: an update keeps the allocated values the
/// new object leaves out, then the IP families, the cluster IP and the node ports are set
/// and checked against `used`.
pub(crate) fn allocate(obj: &mut Value, old: Option<&Value>, used: &Used) -> Result<(), ApiError> {
    let name = crate::api::meta::name(obj).to_string();
    let Some(spec) = object(obj, "spec") else {
        return Ok(());
    };
    if let Some(old) = old.and_then(|o| o.get("spec")) {
        keep_allocated(spec, old);
    }
    let invalid = |c: FieldCause| ApiError::invalid("", "Service", &name, &[c]);
    if spec["type"] == "ExternalName" {
        return Ok(());
    }
    ip_families(spec).map_err(invalid)?;
    cluster_ip(spec, used).map_err(invalid)?;
    node_port_allocation(spec, used).map_err(invalid)
}

/// `patchAllocatedValues`: what an update leaves out of an allocating Service is kept.
fn keep_allocated(spec: &mut Value, old: &Value) {
    if old.get("type").and_then(Value::as_str) == Some("ExternalName") {
        return;
    }
    let given = |spec: &Value, k: &str| spec.get(k).is_some_and(|v| !v.is_null() && v != "");
    if !given(spec, "clusterIP") && !given(spec, "clusterIPs") {
        for k in ["clusterIP", "clusterIPs"] {
            if let Some(v) = old.get(k) {
                spec[k] = v.clone();
            }
        }
    }
    for k in ["ipFamilies", "ipFamilyPolicy", "healthCheckNodePort"] {
        if !given(spec, k)
            && let Some(v) = old.get(k)
        {
            spec[k] = v.clone();
        }
    }
    let old_ports = old
        .get("ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for p in each(spec, "ports") {
        if p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
            continue;
        }
        let same = old_ports
            .iter()
            .find(|o| o.get("port") == p.get("port") && o.get("protocol") == p.get("protocol"));
        if let Some(np) = same
            .and_then(|o| o.get("nodePort"))
            .filter(|n| !n.is_null())
        {
            p["nodePort"] = np.clone();
        }
    }
}

/// `initIPFamilyFields` on a single-stack IPv4 cluster: policy `SingleStack` (a headless
/// Service without selector: `RequireDualStack`, which such a Service may ask of any
/// cluster), families `[IPv4]`; IPv6 or required dual-stack elsewhere is refused.
fn ip_families(spec: &mut Value) -> Result<(), FieldCause> {
    let headless = spec.get("clusterIP").and_then(Value::as_str) == Some("None");
    let selectorless = spec
        .get("selector")
        .and_then(Value::as_object)
        .is_none_or(|m| m.is_empty());
    let policy = if headless && selectorless {
        "RequireDualStack"
    } else {
        "SingleStack"
    };
    or_set(spec, "ipFamilyPolicy", json!(policy));
    if spec["ipFamilyPolicy"] == "RequireDualStack" && !(headless && selectorless) {
        return Err(FieldCause::invalid(
            "spec.ipFamilyPolicy",
            &json!("RequireDualStack"),
            "this cluster is not configured for dual-stack services",
        ));
    }
    let families = spec
        .get("ipFamilies")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some((i, f)) = families.iter().enumerate().find(|(_, f)| *f != "IPv4") {
        return Err(FieldCause::invalid(
            format!("spec.ipFamilies[{i}]"),
            f,
            "not configured on this cluster",
        ));
    }
    spec["ipFamilies"] = json!(["IPv4"]);
    Ok(())
}

/// The cluster IP: `None` stays (headless), one given must be in [`CIDR`] and free, none
/// given gets a random free address; `clusterIPs` repeats it.
fn cluster_ip(spec: &mut Value, used: &Used) -> Result<(), FieldCause> {
    let given = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .or_else(|| spec.pointer("/clusterIPs/0").and_then(Value::as_str))
        .map(str::to_string);
    let ip = match given.as_deref() {
        Some("None") => "None".to_string(),
        Some(s) => {
            let bad = |why: &str| {
                FieldCause::invalid(
                    "spec.clusterIPs",
                    &json!([s]),
                    &format!("failed to allocate IP {s}: {why}"),
                )
            };
            let ip: Ipv4Addr = s.parse().map_err(|_| bad("must be a valid IP address"))?;
            let o = ip.octets();
            if o[..3] != [10, 0, 0] || o[3] == 0 || o[3] == 255 {
                let why = format!(
                    "the provided IP ({s}) is not in the valid range. The range of valid IPs is {CIDR}"
                );
                return Err(bad(&why));
            }
            if used.ips.contains(&ip) {
                return Err(bad("provided IP is already allocated"));
            }
            s.to_string()
        }
        None => free_ip(used)
            .ok_or_else(|| FieldCause::invalid("spec.clusterIPs", &json!([]), "range is full"))?,
    };
    spec["clusterIP"] = json!(ip);
    spec["clusterIPs"] = json!([ip]);
    Ok(())
}

/// A random free address of [`CIDR`] (its first address is the `kubernetes` Service's).
fn free_ip(used: &Used) -> Option<String> {
    let free: Vec<u8> = (2..=254u8)
        .filter(|i| !used.ips.contains(&Ipv4Addr::new(10, 0, 0, *i)))
        .collect();
    let pick = free.get(rand::random_range(0..free.len().max(1)))?;
    Some(Ipv4Addr::new(10, 0, 0, *pick).to_string())
}

/// Node ports for a `NodePort` Service and a `LoadBalancer` that allocates them, and the
/// health check port of a `LoadBalancer` with `externalTrafficPolicy: Local`.
fn node_port_allocation(spec: &mut Value, used: &Used) -> Result<(), FieldCause> {
    let ty = spec["type"].as_str().unwrap_or("").to_string();
    let lb = ty == "LoadBalancer";
    let wants = ty == "NodePort"
        || (lb
            && spec
                .get("allocateLoadBalancerNodePorts")
                .and_then(Value::as_bool)
                != Some(false));
    let mut taken: HashSet<i64> = used.ports.clone();
    let ports = spec.get_mut("ports").and_then(Value::as_array_mut);
    for (i, p) in ports.into_iter().flatten().enumerate() {
        let given = p.get("nodePort").and_then(Value::as_i64).unwrap_or(0);
        if given != 0 {
            check_port(given, &taken, &format!("spec.ports[{i}].nodePort"))?;
            taken.insert(given);
        } else if wants {
            let port = free_port(&taken)?;
            taken.insert(port);
            p["nodePort"] = json!(port);
        }
    }
    let local = spec.get("externalTrafficPolicy").and_then(Value::as_str) == Some("Local");
    if lb
        && local
        && spec
            .get("healthCheckNodePort")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            == 0
    {
        spec["healthCheckNodePort"] = json!(free_port(&taken)?);
    }
    Ok(())
}

fn check_port(port: i64, taken: &HashSet<i64>, field: &str) -> Result<(), FieldCause> {
    let why = if !NODE_PORTS.contains(&port) {
        format!(
            "provided port is not in the valid range. The range of valid ports is {}-{}",
            NODE_PORTS.start(),
            NODE_PORTS.end()
        )
    } else if taken.contains(&port) {
        "provided port is already allocated".to_string()
    } else {
        return Ok(());
    };
    Err(FieldCause::invalid(field, &json!(port), &why))
}

fn free_port(taken: &HashSet<i64>) -> Result<i64, FieldCause> {
    let size = NODE_PORTS.end() - NODE_PORTS.start() + 1;
    let start = rand::random_range(0..size);
    (0..size)
        .map(|i| NODE_PORTS.start() + (start + i) % size)
        .find(|p| !taken.contains(p))
        .ok_or_else(|| FieldCause::invalid("spec.ports", &json!([]), "range is full"))
}
