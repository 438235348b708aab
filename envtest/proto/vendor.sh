#!/usr/bin/env bash
# Re-vendors the Kubernetes `generated.proto` files ctrl-envtest's protobuf codec reads, compiled
# into `k8s.fds` (after vendoring: `UPDATE_GOLDEN=1 cargo test -p ctrl-envtest --test
# protobuf_descriptors`): the stable group versions, from a checkout of kube-rs/k8s-pb at the tag
# that matches the k8s-pb crate in Cargo.toml (its protos are Kubernetes' own, with packages
# renamed after their import paths). Comment lines are dropped (the licence header stays):
# the codec needs the messages, not their docs, which are in k8s-pb and upstream.
#
# usage: envtest/proto/vendor.sh <k8s-pb checkout>
set -euo pipefail
src="$1/k8s-pb-codegen/protos"
dst="$(cd "$(dirname "$0")" && pwd)"
cd "$src"
find . -name generated.proto | sed 's|^\./||' | grep -E '/v1/|/v2/|^apimachinery/' \
  | grep -v -E 'testapigroup|imagepolicy|apidiscovery|^api/admission/|^metrics/' | sort \
  | while read -r f; do
      mkdir -p "$dst/$(dirname "$f")"
      awk 'NR<=15 || !/^[[:space:]]*\/\//' "$f" | cat -s > "$dst/$f"
    done
