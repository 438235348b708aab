//! The ConfigMap the cache and sharding benches fill the API server with: two labels, an
//! annotation and three data keys, so per-object figures read like a small real object's.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;

/// Bench object number `i`, named `name`.
pub fn config_map(name: String, i: usize) -> ConfigMap {
    let data = BTreeMap::from([
        (
            "config.yaml".to_string(),
            format!("replicas: {}\nname: {name}\n", i % 5),
        ),
        ("mode".to_string(), "active".to_string()),
        ("version".to_string(), "1.2.3".to_string()),
    ]);
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name),
            labels: Some(BTreeMap::from([
                ("app.kubernetes.io/name".to_string(), "bench".to_string()),
                ("tier".to_string(), (i % 16).to_string()),
            ])),
            annotations: Some(BTreeMap::from([(
                "example.com/owner".to_string(),
                "team-a".to_string(),
            )])),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    }
}
