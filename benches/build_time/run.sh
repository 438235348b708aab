#!/usr/bin/env bash
# The build times a newcomer feels, side by side: a `cargo ctrl` project (init + create api
# --image, as docs/tutorial.md starts) and the same operator written on kube-runtime alone
# (benches/build_time/kube-operator/: a Deployment per Memcached, finalizer, conditions,
# Events, metrics and probes), with the same dependency versions (this checkout's Cargo.lock)
# and the same profile, each in a fresh target dir.
#
# Steps, run interleaved (ctrl, kube, ctrl, kube, ...) so that both see the same load:
#   cold     `cargo build` on an empty target dir (the registry already downloaded)
#   test     `cargo test --no-run` after it (ctrl's compiles the in-process API server)
#   rebuild  `cargo build` after touching the reconciler (src/controller/memcached.rs)
# Each step prints wall seconds, CPU seconds (user + sys, steadier on a shared machine), the
# crates compiled and the 1-minute load average before it; the last lines are the ratios.
#
# Usage: benches/build_time/run.sh [WORKDIR]
#   WORKDIR               where the projects and their target dirs go (default: a new temp
#                         dir, removed at the end unless KEEP=1); about 3 GB
#   BUILD_TIME_QUICK=1    reuse WORKDIR's target dirs from an earlier run and measure the
#                         rebuild only (a minute: shows the script works)
#   CARGO_INCREMENTAL     passed through (cargo's dev default is on: the rebuild a user sees;
#                         0 measures a full recompile of the operator crate)
# Numbers and the command that produced them: docs/benchmarks.md, "Build time".
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-}
if [[ -z "$work" ]]; then
    work=$(mktemp -d -t ctrl-build-time.XXXXXX)
    [[ "${KEEP:-0}" == 1 ]] || trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
quick=${BUILD_TIME_QUICK:-0}

# cargo-ctrl itself is built in the caller's target dir, not measured.
(cd "$root" && cargo build -q -p cargo-ctrl)
cargo_ctrl="${CARGO_TARGET_DIR:-$root/target}/debug/cargo-ctrl"

if [[ "$quick" != 1 || ! -d "$work/ctrl" ]]; then
    rm -rf "$work/ctrl" "$work/kube" "$work/target-ctrl" "$work/target-kube"
    mkdir -p "$work/ctrl"
    (cd "$work/ctrl" &&
        "$cargo_ctrl" ctrl init --domain example.com --name memcached-operator --ctrl-path "$root" >/dev/null &&
        "$cargo_ctrl" ctrl create api --group cache --version v1alpha1 --kind Memcached \
            --image memcached:1.6 --port 11211 >/dev/null)
    cp -r "$root/benches/build_time/kube-operator" "$work/kube"
    cp "$root/Cargo.lock" "$work/ctrl/"
    cp "$root/Cargo.lock" "$work/kube/"
fi

reconciler() {
    case $1 in
    ctrl) echo "$work/ctrl/src/controller/memcached.rs" ;;
    kube) echo "$work/kube/src/controller.rs" ;;
    esac
}

# measure <project> <step> <cargo args...>: one timed cargo command in the project's own target.
measure() {
    local p=$1 step=$2
    shift 2
    local load
    load=$(cut -d' ' -f1 /proc/loadavg)
    local log="$work/$p-$step.log"
    if ! (cd "$work/$p" && CARGO_TARGET_DIR="$work/target-$p" \
        /usr/bin/time -f "%e %U %S" -o "$log.time" cargo "$@" >"$log" 2>&1); then
        cat "$log" >&2
        exit 1
    fi
    local wall user sys crates
    read -r wall user sys <"$log.time"
    crates=$(grep -c '^ *Compiling ' "$log" || true)
    local cpu
    cpu=$(echo "$user + $sys" | bc)
    printf '%-5s %-8s wall %7.1f s  cpu %7.1f s  crates %4d  load %s\n' "$p" "$step" "$wall" "$cpu" "$crates" "$load"
    echo "$wall $cpu" >"$work/$p-$step.result"
}

echo "# build times: ctrl ($(cd "$root" && git rev-parse --short HEAD)) vs kube-runtime, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-unset}"
steps=(rebuild)
[[ "$quick" == 1 && -d "$work/target-ctrl" ]] || steps=(cold test rebuild)
for step in "${steps[@]}"; do
    for p in ctrl kube; do
        case $step in
        cold) measure "$p" cold build ;;
        test) measure "$p" test test --no-run ;;
        rebuild)
            touch "$(reconciler "$p")"
            measure "$p" rebuild build
            ;;
        esac
    done
done

echo "# ctrl / kube-runtime"
for step in "${steps[@]}"; do
    read -r cw cc <"$work/ctrl-$step.result"
    read -r kw kc <"$work/kube-$step.result"
    printf '%-8s wall %5.2fx  cpu %5.2fx\n' "$step" "$(echo "$cw / $kw" | bc -l)" "$(echo "$cc / $kc" | bc -l)"
done
