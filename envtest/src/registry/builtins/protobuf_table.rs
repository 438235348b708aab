//! Every served built-in kind has a protobuf form, and a representative object of it (every
//! field set, `api::protobuf::sample`) goes JSON -> protobuf -> JSON unchanged and is accepted
//! by the kind's k8s-openapi type (so the JSON names the codec writes are Kubernetes' own).

use super::builtin_types;

#[test]
fn every_served_builtin_kind_round_trips_through_protobuf() {
    let types = builtin_types();
    assert!(types.len() > 40, "the built-in list");
    for rt in types {
        let av = rt.api_version();
        let sample = crate::api::protobuf::sample(&av, &rt.kind)
            .unwrap_or_else(|| panic!("no protobuf message for {av} {}", rt.kind));
        // A view (events.k8s.io Events over core Events) decodes as its storage type.
        if let Some(decode) = rt.decode.filter(|_| rt.view.is_none()) {
            decode(&sample).unwrap_or_else(|e| panic!("{av} {}: {e}", rt.kind));
        }
        let back = crate::api::protobuf::round_trip(&sample);
        assert_eq!(back.as_ref(), Ok(&sample), "{av} {}", rt.kind);
    }
}
