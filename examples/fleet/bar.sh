#!/usr/bin/env bash
# The issue's bar for examples/fleet, through kubectl only: a hub and three members
# with `ctrl-envtest serve`, two fleet replicas against the hub; members registered,
# removed and re-added as kubeconfig Secrets, a replica killed and its members taken over.
# Build first: cargo build -p ctrl-envtest --bin ctrl-envtest && cargo build --example fleet
set -u
T=${CARGO_TARGET_DIR:-target}/debug
E=${E:-$T/ctrl-envtest}; F=${F:-$T/examples/fleet}; D=$(mktemp -d)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null; }
trap cleanup EXIT
for n in hub m1 m2 m3; do "$E" serve --kubeconfig-out "$D/$n.kc" > "$D/$n.log" 2>&1 & pids+=($!); done
for n in hub m1 m2 m3; do until [ -s "$D/$n.kc" ]; do sleep 0.1; done; done
k() { kubectl --kubeconfig "$D/$1.kc" "${@:2}"; }
"$F" --print-crd | k hub apply -f - >/dev/null
replica() { "$F" --kubeconfig "$D/hub.kc" --identity "$1" --cluster-lease-duration 4s \
  --metrics-bind-address 0 --health-probe-bind-address 0 > "$D/$1.log" 2>&1 & pids+=($!); echo $!; }
A=$(replica replica-a); B=$(replica replica-b)
register() { k hub create secret generic "member-$1" --from-file=kubeconfig="$D/m$1.kc" >/dev/null
  k hub label secret "member-$1" sigs.k8s.io/multicluster-runtime-kubeconfig=true env="e$1" >/dev/null; }
for i in 1 2 3; do register $i; done
k hub apply -f - >/dev/null <<YAML
apiVersion: fleet.example.com/v1
kind: FleetConfigMap
metadata: {name: settings, namespace: default}
spec:
  data: {greeting: hello}
  clusterSelector: {matchExpressions: [{key: env, operator: In, values: [e1, e2]}]}
YAML
copy() { k "m$1" get cm settings -o jsonpath='{.data.greeting}/{.metadata.annotations.fleet\.example\.com/written-by}' 2>/dev/null; }
status() { k hub get fleetconfigmap settings -o jsonpath='{range .status.clusters[*]}{.name}={.current} {end}'; }
wait_for() { for _ in $(seq 1 150); do eval "$2" && return 0; sleep 0.2; done; echo "FAIL: $1"; exit 1; }
wait_for "copies in member-1 and member-2" '[[ $(copy 1) == hello/* && $(copy 2) == hello/* ]]'
wait_for "status lists member-1 and member-2" '[ "$(status)" = "member-1=true member-2=true " ]'
[ -z "$(copy 3)" ] || { echo "FAIL: member-3 is not selected"; exit 1; }
echo "ok: selected members have the copy: m1=$(copy 1) m2=$(copy 2); status: $(status)"
k hub delete secret member-2 >/dev/null
wait_for "member-2 dropped from the status" '[ "$(status)" = "member-1=true " ]'
k m2 delete cm settings >/dev/null; register 2
wait_for "member-2 back" '[[ $(copy 2) == hello/* && "$(status)" == "member-1=true member-2=true " ]]'
echo "ok: member-2 removed and re-added: $(status)"
victim=$(copy 1); victim=${victim#hello/}
if [ "$victim" = replica-a ]; then kill -9 "$A"; other=replica-b; else kill -9 "$B"; other=replica-a; fi
k m1 delete cm settings >/dev/null
wait_for "member-1 taken over by $other" '[ "$(copy 1)" = "hello/$other" ]'
echo "ok: $victim killed, member-1 rewritten by $(copy 1)"
k hub patch fleetconfigmap settings --type merge -p '{"spec":{"data":{"greeting":"hi"}}}' >/dev/null
wait_for "new data in both members" '[[ $(copy 1) == hi/* && $(copy 2) == hi/* ]]'
echo "ok: data change reached m1=$(copy 1) m2=$(copy 2); status: $(status)"
k hub get leases
