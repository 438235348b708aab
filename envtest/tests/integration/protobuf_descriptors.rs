//! The checked-in descriptor set `proto/k8s.fds` (what `api::protobuf` decodes and encodes
//! every built-in kind with) is exactly the vendored `proto/**/*.proto` compiled by protox, so a
//! build needs no proto compiler and cannot drift from the `.proto` files. `UPDATE_GOLDEN=1`
//! rewrites it (after `proto/vendor.sh`).

use std::path::{Path, PathBuf};

/// Every `.proto` file under `dir`.
fn protos(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read proto/").flatten() {
        let p = e.path();
        if p.is_dir() {
            protos(&p, out);
        } else if p.extension().is_some_and(|x| x == "proto") {
            out.push(p);
        }
    }
}

#[test]
fn the_checked_in_descriptor_set_is_the_compiled_protos() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("proto");
    let mut files = Vec::new();
    protos(&root, &mut files);
    files.sort();
    assert!(files.len() > 20, "vendored protos: {}", files.len());
    let fds = protox::compile(&files, [&root]).expect("the vendored .proto files compile");
    let compiled = prost::Message::encode_to_vec(&fds);
    let golden = root.join("k8s.fds");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &compiled).expect("write proto/k8s.fds");
    }
    let checked_in = std::fs::read(&golden).expect("read proto/k8s.fds");
    assert!(
        checked_in == compiled,
        "proto/k8s.fds is stale ({} bytes checked in, {} compiled): UPDATE_GOLDEN=1 cargo test -p ctrl-envtest --test protobuf_descriptors",
        checked_in.len(),
        compiled.len()
    );
}
