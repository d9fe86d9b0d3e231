#!/usr/bin/env bash
# A throwaway Kubernetes control plane on 127.0.0.1 for jsctl's integration tests (and for trying jsctl).
#
#   bash scripts/k8s-up.sh up      build the binaries once (cached), (re)start the cluster, fake nodes
#   bash scripts/k8s-up.sh down    stop the processes this script started (by pid file)
#   bash scripts/k8s-up.sh env     print the export line for this cluster
#
# Real components, built from source with Go (no containers, no kubelet): etcd, kube-apiserver,
# kube-controller-manager (Job controller etc.), kube-scheduler, the JobSet controller (out of
# cluster, its webhooks served on 127.0.0.1) and kwok, which plays the kubelets of six fake nodes:
#   pool a100: a100-0..a100-3, 8 nvidia.com/gpu, 96 cpu, 2Ti, rdma/ib 1, taint nvidia.com/gpu=present:NoSchedule
#   pool cpu:  cpu-0, cpu-1, 32 cpu, 128Gi
# Pods bound to them go Running at once (pod IP, container statuses); then, steered by pod labels
# (kwok stages in scripts/k8s/stages/):
#   (none)               a pod owned by a Job exits 0 after 3 s (pods of no Job keep running)
#   kwok-run: long       runs until deleted
#   kwok-exit: fail      fails after 2 s, containers exit 1 (any pod, kwok-run or not)
#   kwok-exit: requeue   fails after 2 s, containers exit 75 (any pod)
#   kwok-duration: 10s   changes those waits (a Go duration)
# Deleted pods go at once (finalizers dropped). `kubectl logs` of a fake pod answers a fixed text.
# Installed: CRDs of JobSet, Volcano Job, Kubeflow TrainJob (from ../shared/data/crds, or
# $JSCTL_K8S_CRDS), namespace jsctl-ci (the kubeconfig's default), PriorityClasses
# jsctl-low/normal/high (100/1000/10000, none the global default). No Volcano or Trainer controller.
#
# Everything lives under $JSCTL_K8S_BASE (default /tmp/jsctl-k8s): pki, kubeconfig, etcd data (fresh
# on every 'up'), logs (log/), pid files (run/). Binaries are cached per version set under
# $JSCTL_K8S_CACHE (default ~/.cache/jsctl/k8s); the first build takes minutes (Go 1.24+).
# Ports on 127.0.0.1: apiserver 16443, etcd 12379/12380, controller-manager 16257, scheduler 16259,
# kwok (kubelet API) 16250, JobSet webhooks 16943 and health 16981 (JSCTL_K8S_PORT_OFFSET shifts them).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BASE=${JSCTL_K8S_BASE:-/tmp/jsctl-k8s}
CMD=${1:-up}

# The versions are those the wrapper modules in scripts/k8s/*/go.mod require (one Go module per
# program, each with its go.sum): kube v1.34.4, etcd v3.6.4, kwok v0.7.0, jobset v0.10.1.
modver() { awk -v m="$2" '$1 == "require" && $2 == m {print $3}' "$ROOT/scripts/k8s/$1/go.mod"; }
KUBE_VERSION=$(modver kube k8s.io/kubernetes)
ETCD_VERSION=$(modver etcd go.etcd.io/etcd/server/v3)
KWOK_VERSION=$(modver kwok sigs.k8s.io/kwok)
JOBSET_VERSION=$(modver jobset sigs.k8s.io/jobset)
# binaries cached per version set and go.mod/go.sum contents
MODSUM=$(cat "$ROOT"/scripts/k8s/{kube,etcd,kwok,jobset}/go.{mod,sum} | sha256sum | cut -c1-10)
CACHE=${JSCTL_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/jsctl/k8s}
BIN=$CACHE/kube-$KUBE_VERSION.etcd-$ETCD_VERSION.kwok-$KWOK_VERSION.jobset-$JOBSET_VERSION.$MODSUM/bin
CRDS=${JSCTL_K8S_CRDS:-$ROOT/../shared/data/crds}

# fixed ports; JSCTL_K8S_PORT_OFFSET=N moves them all by N (a second cluster, with its own BASE)
OFF=${JSCTL_K8S_PORT_OFFSET:-0}
API_PORT=$((16443 + OFF))
ETCD_PORT=$((12379 + OFF))
ETCD_PEER_PORT=$((12380 + OFF))
KCM_PORT=$((16257 + OFF))
SCHED_PORT=$((16259 + OFF))
KWOK_PORT=$((16250 + OFF))
JOBSET_WEBHOOK_PORT=$((16943 + OFF))
JOBSET_HEALTH_PORT=$((16981 + OFF))
PORTS="$API_PORT $ETCD_PORT $ETCD_PEER_PORT $KCM_PORT $SCHED_PORT $KWOK_PORT $JOBSET_WEBHOOK_PORT $JOBSET_HEALTH_PORT"
KUBECONFIG_FILE=$BASE/kubeconfig
KUBECTL=${KUBECTL:-kubectl}
# stopped in this order (dependents first)
DAEMONS="jobset kwok kube-scheduler kube-controller-manager kube-apiserver etcd"

log() { printf 'k8s-up: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
k() { "$KUBECTL" --kubeconfig="$KUBECONFIG_FILE" --request-timeout=20s "$@"; }

stop_daemons() {  # only ours: by pid file; TERM, wait up to 10 s, then KILL
  local d pid pids=()
  for d in $DAEMONS; do
    pid=$(cat "$BASE/run/$d.pid" 2>/dev/null || true)
    rm -f "$BASE/run/$d.pid"
    if [[ $pid =~ ^[0-9]+$ ]] && kill "$pid" 2>/dev/null; then pids+=("$pid"); fi
  done
  local _ alive
  for _ in $(seq 100); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [[ $alive == 0 ]] && return 0
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  for _ in $(seq 50); do  # and until they are gone (their ports with them)
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [[ $alive == 0 ]] && return 0
    sleep 0.1
  done
}

# ---------------------------------------------------------------------------------------------
# binaries

timed() {  # timed NAME COMMAND...: run, log the time it took
  local t0=$SECONDS name=$1
  shift
  "$@"
  log "built $name in $((SECONDS - t0)) s"
}

build_kube() {
  # the version ldflags make `kubectl version` and the apiserver's /version say v1.34.4
  (cd "$ROOT/scripts/k8s/kube" && go build \
    -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(cut -d. -f2 <<<"$KUBE_VERSION")" \
    -o "$TMPBIN/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler)
}

build_etcd() {
  if (cd "$ROOT/scripts/k8s/etcd" && go build -ldflags "-s -w" -o "$TMPBIN/etcd" go.etcd.io/etcd/server/v3); then
    return 0
  fi
  log "building etcd $ETCD_VERSION failed; falling back to Debian's etcd-server"
  if [[ ! -x /usr/bin/etcd ]]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null
  fi
  ln -sf /usr/bin/etcd "$TMPBIN/etcd"
}

build_kwok() {
  (cd "$ROOT/scripts/k8s/kwok" && go build -ldflags "-s -w" -o "$TMPBIN/kwok" sigs.k8s.io/kwok/cmd/kwok)
}

build_jobset() {  # a wrapper module: `go install sigs.k8s.io/jobset@v0.10.1` is refused by the proxy
  (cd "$ROOT/scripts/k8s/jobset" && go build \
    -ldflags "-s -w -X sigs.k8s.io/jobset/pkg/version.GitVersion=$JOBSET_VERSION" -o "$TMPBIN/jobset" sigs.k8s.io/jobset)
  # its CRD, for when the shared CRD folder is absent
  cp "$(cd "$ROOT/scripts/k8s/jobset" && go list -m -f '{{.Dir}}' sigs.k8s.io/jobset)/config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml" \
    "$TMPBIN/jobset-crd.yaml"
}

build() {
  local need=0 b
  for b in kube-apiserver kube-controller-manager kube-scheduler etcd kwok jobset; do
    [[ -x $BIN/$b ]] || need=1
  done
  [[ $need == 0 ]] && return 0
  command -v go >/dev/null || die "Go (1.24 or newer) is needed to build the control plane once"
  export GOFLAGS=-buildvcs=false
  mkdir -p "$(dirname "$BIN")"
  TMPBIN=$(mktemp -d "$(dirname "$BIN")/bin.tmp.XXXXXX")
  log "building the control plane into $BIN (first time only; minutes on 2 cores)"
  [[ -x $BIN/kube-apiserver && -x $BIN/kube-controller-manager && -x $BIN/kube-scheduler ]] \
    && cp "$BIN"/kube-* "$TMPBIN/" || timed kube-apiserver+controller-manager+scheduler build_kube
  [[ -x $BIN/etcd ]] && cp -P "$BIN/etcd" "$TMPBIN/" || timed etcd build_etcd
  [[ -x $BIN/kwok ]] && cp "$BIN/kwok" "$TMPBIN/" || timed kwok build_kwok
  [[ -x $BIN/jobset ]] && cp "$BIN"/jobset* "$TMPBIN/" || timed jobset build_jobset
  rm -rf "$BIN"
  mv "$TMPBIN" "$BIN"
}

# ---------------------------------------------------------------------------------------------
# certificates and configuration

pki() {
  local p=$BASE/pki
  mkdir -p "$p"
  (
    cd "$p"
    umask 077
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 \
      -subj "/CN=jsctl-ci-ca" 2>/dev/null
    # one serving cert for everything on 127.0.0.1: apiserver, JobSet webhooks, kwok's kubelet API
    cat > serving.ext <<EOF
basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
EOF
    openssl req -newkey rsa:2048 -nodes -keyout serving.key -out serving.csr -subj "/CN=127.0.0.1" 2>/dev/null
    openssl x509 -req -in serving.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile serving.ext -out serving.crt 2>/dev/null
    # admin client: a member of system:masters (as envtest's)
    printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' > client.ext
    openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr -subj "/O=system:masters/CN=default" 2>/dev/null
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile client.ext -out admin.crt 2>/dev/null
    # service-account token signing pair
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    mkdir -p jobset
    cp serving.crt jobset/tls.crt
    cp serving.key jobset/tls.key
  )
  local b64='base64 -w0'
  cat > "$KUBECONFIG_FILE" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: jsctl-ci
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $($b64 < "$p/ca.crt")
users:
- name: admin
  user:
    client-certificate-data: $($b64 < "$p/admin.crt")
    client-key-data: $($b64 < "$p/admin.key")
contexts:
- name: jsctl-ci
  context:
    cluster: jsctl-ci
    user: admin
    namespace: jsctl-ci
current-context: jsctl-ci
EOF
  chmod 600 "$KUBECONFIG_FILE"
}

kwok_config() {
  mkdir -p "$BASE/kwok"
  # CRI log format (what kwok's logs endpoint reads): time, stream, P(artial)/F(ull), text
  printf '%s stdout F %s\n' "$(date -u +%Y-%m-%dT%H:%M:%S.000000000Z)" \
    "kwok: a fake pod on a fake node of jsctl's test cluster; no container ran, this is its only log line" \
    > "$BASE/kwok/fake.log"
  {
    local f
    for f in "$ROOT"/scripts/k8s/stages/*.yaml; do
      cat "$f"
      printf '\n---\n'
    done
    cat <<EOF
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: jsctl-fake-logs
spec:
  logs:
  - logsFile: $BASE/kwok/fake.log
EOF
  } > "$BASE/kwok/kwok.yaml"
}

# ---------------------------------------------------------------------------------------------
# processes

start() {  # start NAME BINARY ARGS...: detached, output to log/NAME.log, pid to run/NAME.pid
  local name=$1
  shift
  setsid "$@" </dev/null >"$BASE/log/$name.log" 2>&1 9>&- &  # (fd 9: the lock, not theirs)
  echo $! > "$BASE/run/$name.pid"
}

alive() {  # alive NAME: or die with its log
  local pid
  pid=$(cat "$BASE/run/$1.pid" 2>/dev/null || echo 0)
  kill -0 "$pid" 2>/dev/null && return 0
  log "$1 died; the end of $BASE/log/$1.log:"
  tail -n 25 "$BASE/log/$1.log" >&2 || true
  exit 1
}

wait_until() {  # wait_until SECONDS WHAT DAEMON COMMAND...: poll every 0.2 s while DAEMON lives
  local secs=$1 what=$2 daemon=$3 i
  shift 3
  for i in $(seq $((secs * 5))); do
    "$@" >/dev/null 2>&1 && return 0
    [[ -n $daemon ]] && alive "$daemon"
    sleep 0.2
  done
  log "timed out after $secs s waiting for $what"
  [[ -n $daemon ]] && tail -n 25 "$BASE/log/$daemon.log" >&2
  exit 1
}

port_free() {  # nothing accepts connections on 127.0.0.1:PORT (for 3 s, in case one is closing)
  local _
  for _ in $(seq 15); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null || return 0
    sleep 0.2
  done
  return 1
}

start_etcd() {
  local extra=()  # (Debian's etcd 3.4, the fallback, may lack it)
  [[ $("$BIN/etcd" --help 2>&1 || true) == *--unsafe-no-fsync* ]] && extra+=(--unsafe-no-fsync)
  start etcd "$BIN/etcd" "${extra[@]}" --name=jsctl-ci --data-dir="$BASE/etcd" \
    --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="jsctl-ci=http://127.0.0.1:$ETCD_PEER_PORT" --log-level=warn
  wait_until 30 "etcd" etcd curl -sf "http://127.0.0.1:$ETCD_PORT/health"
}

start_apiserver() {
  local p=$BASE/pki
  # flags as controller-runtime's envtest starts it, plus a kubelet client cert (logs via kwok)
  start kube-apiserver "$BIN/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
    --secure-port="$API_PORT" --cert-dir="$p" --tls-cert-file="$p/serving.crt" --tls-private-key-file="$p/serving.key" \
    --client-ca-file="$p/ca.crt" --service-cluster-ip-range=10.0.0.0/24 \
    --service-account-issuer="https://127.0.0.1:$API_PORT" --service-account-key-file="$p/sa.pub" \
    --service-account-signing-key-file="$p/sa.key" --authorization-mode=RBAC --allow-privileged=true \
    --disable-admission-plugins=ServiceAccount \
    --kubelet-client-certificate="$p/admin.crt" --kubelet-client-key="$p/admin.key" \
    --endpoint-reconciler-type=none --profiling=false --v=0
  wait_until 90 "kube-apiserver /readyz" kube-apiserver k get --raw /readyz
}

start_controllers() {
  local p=$BASE/pki kc=$KUBECONFIG_FILE
  start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$kc" \
    --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" --leader-elect=false \
    --bind-address=127.0.0.1 --secure-port="$KCM_PORT" --cert-dir="$BASE/kcm" --controllers='*' \
    --service-account-private-key-file="$p/sa.key" --root-ca-file="$p/ca.crt" \
    --cluster-signing-cert-file="$p/ca.crt" --cluster-signing-key-file="$p/ca.key" \
    --service-cluster-ip-range=10.0.0.0/24 --profiling=false
  start kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$kc" \
    --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" --leader-elect=false \
    --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --cert-dir="$BASE/scheduler" --profiling=false
  start kwok "$BIN/kwok" --kubeconfig="$kc" --config="$BASE/kwok/kwok.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --node-ip=127.0.0.1 --node-port="$KWOK_PORT" --server-address="127.0.0.1:$KWOK_PORT" \
    --tls-cert-file="$p/serving.crt" --tls-private-key-file="$p/serving.key" --cidr=10.244.0.1/16
  cat > "$BASE/jobset-config.yaml" <<EOF
apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: $JOBSET_WEBHOOK_PORT
  certDir: $p/jobset
health:
  healthProbeBindAddress: 127.0.0.1:$JOBSET_HEALTH_PORT
EOF
  KUBECONFIG=$kc start jobset "$BIN/jobset" --kubeconfig="$kc" --config="$BASE/jobset-config.yaml" \
    --metrics-bind-address=0 --zap-log-level=info
}

jobset_webhooks() {  # JobSet's own webhook configurations, pointed at 127.0.0.1 with our CA
  local ca url=https://127.0.0.1:$JOBSET_WEBHOOK_PORT pod_selector
  ca=$(base64 -w0 < "$BASE/pki/ca.crt")
  pod_selector='objectSelector: {matchExpressions: [{key: jobset.sigs.k8s.io/jobset-name, operator: Exists}]}'
  k apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: jsctl-jobset-mutating
webhooks:
- name: mjobset.kb.io
  admissionReviewVersions: [v1]
  clientConfig: {url: "$url/mutate-jobset-x-k8s-io-v1alpha2-jobset", caBundle: "$ca"}
  failurePolicy: Fail
  sideEffects: None
  rules: [{apiGroups: [jobset.x-k8s.io], apiVersions: [v1alpha2], operations: [CREATE], resources: [jobsets]}]
- name: mpod.kb.io
  admissionReviewVersions: [v1]
  clientConfig: {url: "$url/mutate--v1-pod", caBundle: "$ca"}
  failurePolicy: Fail
  sideEffects: None
  $pod_selector
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: jsctl-jobset-validating
webhooks:
- name: vjobset.kb.io
  admissionReviewVersions: [v1]
  clientConfig: {url: "$url/validate-jobset-x-k8s-io-v1alpha2-jobset", caBundle: "$ca"}
  failurePolicy: Fail
  sideEffects: None
  rules: [{apiGroups: [jobset.x-k8s.io], apiVersions: [v1alpha2], operations: [CREATE, UPDATE], resources: [jobsets]}]
- name: vpod.kb.io
  admissionReviewVersions: [v1]
  clientConfig: {url: "$url/validate--v1-pod", caBundle: "$ca"}
  failurePolicy: Fail
  sideEffects: None
  $pod_selector
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
EOF
}

# ---------------------------------------------------------------------------------------------
# cluster contents

install_crds() {
  local f files=()
  if [[ -d $CRDS ]]; then
    for f in "$CRDS"/*.yaml; do files+=(-f "$f"); done
  else
    log "no CRD folder at $CRDS (set JSCTL_K8S_CRDS): installing only JobSet's CRD, from its module"
    files=(-f "$BIN/jobset-crd.yaml")
  fi
  k apply --server-side --force-conflicts "${files[@]}" >/dev/null
  # (kubectl wait errs at once while a new CRD has no status yet: retry)
  wait_until 60 "the CRDs to be established" kube-apiserver k wait --for=condition=Established --timeout=5s crd --all
}

basics() {
  k apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Namespace
metadata:
  name: jsctl-ci
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: jsctl-low
value: 100
description: jsctl test cluster, low priority (preemptible)
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: jsctl-normal
value: 1000
description: jsctl test cluster, normal priority
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: jsctl-high
value: 10000
description: jsctl test cluster, high priority (preempts lower)
EOF
}

node_yaml() {  # node_yaml NAME POOL: one fake node
  local name=$1 pool=$2 res labels taints=""
  if [[ $pool == a100 ]]; then
    res='{cpu: "96", memory: 2Ti, pods: "110", nvidia.com/gpu: "8", rdma/ib: "1", ephemeral-storage: 2Ti}'
    labels='nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB
    nvidia.com/gpu.count: "8"
    node.kubernetes.io/instance-type: a100-80gb-x8'
    taints='taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]'
  else
    res='{cpu: "32", memory: 128Gi, pods: "110", ephemeral-storage: 1Ti}'
    labels='node.kubernetes.io/instance-type: cpu-x32'
  fi
  cat <<EOF
apiVersion: v1
kind: Node
metadata:
  name: $name
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    jsctl.dev/pool: $pool
    kubernetes.io/hostname: $name
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
    $labels
spec:
  $taints
status:
  capacity: $res
  allocatable: $res
---
EOF
}

nodes() {
  local i
  {
    for i in 0 1 2 3; do node_yaml "a100-$i" a100; done
    for i in 0 1; do node_yaml "cpu-$i" cpu; done
  } | k apply -f - >/dev/null
}

nodes_ready() {  # all six Ready and without the not-ready taint the node controller sets first
  local out
  out=$(k get nodes -l jsctl.dev/pool -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.status.conditions[?(@.type=="Ready")].status}{" "}{.spec.taints[*].key}{"\n"}{end}')
  [[ $(grep -c ' True' <<<"$out") == 6 ]] && ! grep -q 'node.kubernetes.io/' <<<"$out"
}

STEPS=""
step() {  # step NAME COMMAND...: run it, note how long it took
  local t=$EPOCHREALTIME name=$1
  shift
  "$@"
  STEPS+=" $name $(awk -v a="$t" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b - a}')"
}

up() {
  local t0=$EPOCHREALTIME p
  command -v "$KUBECTL" >/dev/null || die "kubectl is needed"
  command -v openssl >/dev/null || die "openssl is needed"
  build
  step stop stop_daemons
  for p in $PORTS; do
    port_free "$p" || die "port 127.0.0.1:$p is taken by another process (not one of this script's, see $BASE/run)"
  done
  rm -rf "${BASE:?}"/{pki,etcd,run,log,kwok,kcm,scheduler,kubeconfig,jobset-config.yaml}  # ours only
  mkdir -p "$BASE"/{run,log}
  step pki pki
  kwok_config
  step etcd start_etcd
  step apiserver start_apiserver
  step crds install_crds
  start_controllers
  step objects basics
  step nodes nodes
  step jobset wait_until 60 "the JobSet controller's webhooks" jobset curl -sf "http://127.0.0.1:$JOBSET_HEALTH_PORT/readyz"
  jobset_webhooks
  step ready wait_until 60 "six Ready nodes" kwok nodes_ready
  for p in kube-controller-manager kube-scheduler; do alive $p; done
  k get nodes -L jsctl.dev/pool >&2
  log "up in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b - a}') s (s per step:$STEPS); logs in $BASE/log; to use it:"
  echo "export KUBECONFIG=$KUBECONFIG_FILE"
}

lock() {  # one up/down at a time on this BASE (several test sessions may share it)
  mkdir -p "$BASE"
  exec 9>"$BASE/.lock"
  flock -w 300 9 || die "another k8s-up.sh holds $BASE/.lock"
}

case $CMD in
  up) lock; up ;;
  down) lock; stop_daemons; log "stopped" ;;
  env) echo "export KUBECONFIG=$KUBECONFIG_FILE" ;;
  *) echo "usage: $0 up|down|env" >&2; exit 2 ;;
esac
