//! The Deployment a Memcached asks for (kube-runtime has no in-process API server: a
//! kube-runtime operator's cluster tests need a cluster, so this test checks the desired
//! object only).

use kube::Resource;
use kube_memcached_operator::api::{Memcached, MemcachedSpec};
use kube_memcached_operator::controller::desired_deployment;

#[test]
fn the_deployment_is_owned_and_sized() {
    let mut m = Memcached::new("m", MemcachedSpec { size: Some(3), container_port: None });
    m.meta_mut().namespace = Some("default".into());
    m.meta_mut().uid = Some("u".into());
    let d = desired_deployment(&m);
    assert_eq!(d.spec.and_then(|s| s.replicas), Some(3));
    assert_eq!(d.metadata.owner_references.map(|o| o.len()), Some(1));
}
