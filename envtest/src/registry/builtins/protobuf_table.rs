//! Every served built-in kind has a protobuf form, and a representative object of it (every
//! field set, `api::protobuf::sample`) goes JSON -> protobuf -> JSON unchanged and is accepted
//! by the kind's type check (so the JSON names and types the codec writes are Kubernetes' own).

use super::builtin_types;

#[test]
fn every_served_builtin_kind_round_trips_through_protobuf() {
    let types = builtin_types();
    assert!(types.len() > 40, "the built-in list");
    for rt in types {
        let av = rt.api_version();
        let sample = crate::api::protobuf::sample(&av, &rt.kind)
            .unwrap_or_else(|| panic!("no protobuf message for {av} {}", rt.kind));
        // A view (events.k8s.io Events over core Events) is checked as its storage type.
        let go_type = rt.decode.as_deref().unwrap_or_default();
        assert!(super::decode::knows(go_type), "{av} {}: no schema", rt.kind);
        if rt.view.is_none() {
            super::decode::check(go_type, &sample)
                .unwrap_or_else(|e| panic!("{av} {}: {e}", rt.kind));
        }
        let back = crate::api::protobuf::round_trip(&sample);
        assert_eq!(back.as_ref(), Ok(&sample), "{av} {}", rt.kind);
    }
}
