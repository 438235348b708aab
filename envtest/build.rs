//! Compiles the vendored Kubernetes `generated.proto` files (`proto/`, see `proto/vendor.sh`) into
//! one `FileDescriptorSet` with protox (pure Rust, no `protoc`), which `api::protobuf` loads as
//! its descriptor pool: the codec reads every built-in kind's fields from it instead of
//! converting kinds by hand.

use std::path::{Path, PathBuf};

fn protos(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            protos(&p, out);
        } else if p.extension().is_some_and(|x| x == "proto") {
            out.push(p);
        }
    }
}

fn main() {
    let root = PathBuf::from("proto");
    println!("cargo:rerun-if-changed=proto");
    let mut files = Vec::new();
    protos(&root, &mut files);
    files.sort();
    let fds = protox::compile(&files, [&root]).expect("the vendored .proto files compile");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("k8s.fds");
    std::fs::write(out, prost::Message::encode_to_vec(&fds)).expect("write the descriptor set");
}
