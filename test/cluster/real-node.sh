#!/usr/bin/env bash
# A real node for the test cluster (NODE=real make cluster-up): the control plane of cluster.sh in its
# own run dir, plus containerd + runc (Debian packages) and a kubelet built from test/cluster/k8s, so
# pods really run. kwok is stopped in this cluster: it manages every node (--manage-all-nodes) and
# would fight the kubelet over the node's status and its pods.
#
#   test/cluster/real-node.sh deps     install containerd, runc, containernetworking-plugins, iptables (apt)
#   test/cluster/real-node.sh build    build the kubelet and kube-proxy into $CLUSTER_BIN_DIR (skips up-to-date ones)
#   test/cluster/real-node.sh up       control plane + containerd + kubelet + kube-proxy; import the images; print env
#   test/cluster/real-node.sh down     stop what `up` started, remove pods, mounts, netns, bridge, rules
#   test/cluster/real-node.sh status   pid and liveness of each process; exit 1 when not all running
#   test/cluster/real-node.sh env      export lines for a running real-node cluster
#   test/cluster/real-node.sh import   (re-)import the engine and pause images into containerd
#
# Needs root (containerd, runc, network namespaces, iptables, mounts). Pod network: a Linux bridge
# $REAL_NODE_BRIDGE with $REAL_NODE_GATEWAY/24 on the host, the Debian CNI `bridge` + `host-local`
# plugins put each pod in its own network namespace on it. net.ipv4.ip_forward stays as it was; forwarding
# is on for the bridge only, and a FORWARD rule sends what pods send back onto the bridge or nowhere: pods
# reach the host's bridge address and each other, nothing beyond this machine. Pods reach
# the apiserver (127.0.0.1 only) through the `kubernetes` Service IP: one DNAT rule from the bridge to
# 127.0.0.1:<apiserver port> with route_localnet on the bridge (the apiserver runs without an endpoint
# reconciler, so kube-proxy has no endpoints for that Service and leaves it to this rule). Every other
# Service: kube-proxy (built from the same module) on the host, iptables mode; the Service CIDR is routed
# to the bridge, so ClusterIPs work from the host and from pods and never leave this machine. The kubelet
# listens on 127.0.0.1 only and the node is named `localhost`, so the apiserver reaches it for
# `kubectl logs/exec` without DNS and no pod can. See docs/real-pods.md.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BIN_DIR="${CLUSTER_BIN_DIR:-$ROOT/.cache/cluster/bin}"
# Its own run dir: a kwok cluster of another shell in .cache/cluster/run is left alone.
RUN_DIR="${REAL_NODE_RUN_DIR:-$ROOT/.cache/cluster/real}"
export CLUSTER_BIN_DIR="$BIN_DIR" CLUSTER_RUN_DIR="$RUN_DIR"
NODE_NAME="${REAL_NODE_NAME:-localhost}"
BRIDGE="${REAL_NODE_BRIDGE:-onobr0}"
POD_SUBNET="${REAL_NODE_POD_SUBNET:-10.244.0.0/24}"
GATEWAY="${REAL_NODE_GATEWAY:-10.244.0.1}"
# cluster.sh's --service-cluster-ip-range (checked against the running apiserver in `up`) and its `kubernetes` Service.
SERVICE_CIDR="${REAL_NODE_SERVICE_CIDR:-10.96.0.0/16}"
SERVICE_IP="${REAL_NODE_SERVICE_IP:-10.96.0.1}"
KUBELET_PORT="${REAL_NODE_KUBELET_PORT:-10250}"
KUBELET_HEALTHZ_PORT="${REAL_NODE_KUBELET_HEALTHZ_PORT:-10248}"
KUBE_PROXY_HEALTHZ_PORT="${REAL_NODE_KUBE_PROXY_HEALTHZ_PORT:-10256}"
KUBE_PROXY_METRICS_PORT="${REAL_NODE_KUBE_PROXY_METRICS_PORT:-10249}"
IMAGE_OUT="${IMAGE_OUT:-$ROOT/.cache/image}"
IMAGE_NAME="${IMAGE_NAME:-oracle-node}"
IMAGE_TAG="${IMAGE_TAG:-$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$ROOT/package.json" | head -n1)}"
PAUSE_IMAGE="${PAUSE_IMAGE:-oracle-node.test/pause:3.10}"
START_TIMEOUT="${CLUSTER_START_TIMEOUT:-120}"
NAT_CHAIN="ONO-REAL-NODE"
FWD_CHAIN="ONO-REAL-NODE-FWD" # filter table: what pods may have forwarded

NODE_DIR="$RUN_DIR/node"
CTD_ROOT="$NODE_DIR/containerd"
# containerd's state dir holds sockets: keep it short and on tmpfs.
CTD_STATE="/run/oracle-node-real-$(printf '%s' "$RUN_DIR" | cksum | cut -d' ' -f1)"
CTD_SOCK="$CTD_STATE/containerd.sock"
CNI_CONF_DIR="$NODE_DIR/cni"
CNI_IPAM_DIR="$NODE_DIR/cni-ipam"
KUBELET_DIR="$NODE_DIR/kubelet"
LOGS="$RUN_DIR/logs"
PIDS="$RUN_DIR/pids"
NODE_PKI="$NODE_DIR/pki"
CNI_BIN_DIR="${REAL_NODE_CNI_BIN_DIR:-/usr/lib/cni}"
DEBIAN_PACKAGES=(containerd runc containernetworking-plugins iptables conntrack)

say() { echo "real-node: $*"; }
die() {
  echo "real-node: $*" >&2
  exit 1
}

# ---------------------------------------------------------------------------------------------------
# deps and build

have_deps() {
  command -v containerd >/dev/null && command -v ctr >/dev/null && command -v runc >/dev/null \
    && [[ -x $CNI_BIN_DIR/bridge && -x $CNI_BIN_DIR/host-local && -x $CNI_BIN_DIR/loopback ]] \
    && command -v iptables >/dev/null && command -v conntrack >/dev/null
}

deps() {
  if have_deps; then
    say "containerd $(containerd --version | awk '{print $3}'), runc $(runc --version | awk 'NR==1{print $3}'), CNI plugins in $CNI_BIN_DIR, iptables: present"
    return 0
  fi
  ((EUID == 0)) || die "containerd/runc/CNI plugins are missing and installing them needs root: apt-get install ${DEBIAN_PACKAGES[*]}"
  command -v apt-get >/dev/null || die "apt-get not found: install ${DEBIAN_PACKAGES[*]} (or equivalents) by hand"
  say "installing ${DEBIAN_PACKAGES[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${DEBIAN_PACKAGES[@]}" >"/tmp/real-node-apt.log" 2>&1 || {
    apt-get update >>"/tmp/real-node-apt.log" 2>&1
    apt-get install -y --no-install-recommends "${DEBIAN_PACKAGES[@]}" >>"/tmp/real-node-apt.log" 2>&1
  } || die "apt-get install failed, see /tmp/real-node-apt.log"
  # The Debian package enables a system containerd service where systemd runs; ours is separate.
  have_deps || die "still missing after apt-get install (see /tmp/real-node-apt.log)"
}

k8s_version() {
  awk '($1 == "k8s.io/kubernetes" || ($1 == "require" && $2 == "k8s.io/kubernetes")) && !/=>/ { print ($1 == "require" ? $3 : $2); exit }' "$HERE/k8s/go.mod"
}

build() {
  build_kubelet
  # kube-proxy: the same module and version stamps, built by build.sh (not part of its `all`: only this node needs it).
  "$HERE/build.sh" kube-proxy 2>&1 | sed 's/^cluster-bins: /real-node: /'
  [[ -x $BIN_DIR/kube-proxy ]] || die "kube-proxy was not built (test/cluster/build.sh kube-proxy)"
}

build_kubelet() {
  local v minor ldflags start
  v="$(k8s_version)"
  [[ -n $v ]] || die "cannot read the k8s.io/kubernetes version from test/cluster/k8s/go.mod"
  if [[ -x $BIN_DIR/kubelet && "$("$BIN_DIR/kubelet" --version 2>/dev/null)" == "Kubernetes $v" ]]; then
    say "kubelet $v: up to date"
    return 0
  fi
  command -v go >/dev/null || die "go not found: the kubelet is built from test/cluster/k8s (Go >= 1.24)"
  minor="$(echo "$v" | cut -d. -f2)"
  ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$v -X k8s.io/component-base/version.gitMajor=1"
  ldflags+=" -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  ldflags+=" -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
  mkdir -p "$BIN_DIR"
  say "building kubelet $v (CGO_ENABLED=0)"
  start=$(date +%s)
  (cd "$HERE/k8s" && CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags "$ldflags" -o "$BIN_DIR/kubelet" k8s.io/kubernetes/cmd/kubelet)
  say "built kubelet $v in $(($(date +%s) - start)) s"
}

# ---------------------------------------------------------------------------------------------------
# processes (same conventions as cluster.sh: pid files, /proc/<pid>/exe guards against pid reuse)

pid_of() { [[ -f "$PIDS/$1" ]] && cat "$PIDS/$1"; }
alive() { # <name> <binary path>
  local pid exe
  pid="$(pid_of "$1")" || return 1
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 1
  exe="$(readlink "/proc/$pid/exe" 2>/dev/null)" || return 1
  [[ $exe == "$2" ]]
}
start() { # <name> <binary> <args...>
  local name="$1" bin="$2"
  shift 2
  # 8>&-: the daemon must not inherit (and so hold) this script's lock.
  setsid "$bin" "$@" >"$LOGS/$name.log" 2>&1 </dev/null 8>&- &
  echo $! >"$PIDS/$name"
  # Until the exec, /proc/<pid>/exe names bash or setsid and `alive` would call a healthy start dead (cluster.sh's
  # exec_done): wait for it, at most 10 s.
  local pid=$! i
  for ((i = 0; i < 200; i++)); do
    [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == "$bin" ]] && return 0
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.05
  done
}
stop_one() { # <name> <binary> [seconds before SIGKILL]
  local name="$1" bin="$2" wait="${3:-10}" pid i
  pid="$(pid_of "$name")" || return 0
  if alive "$name" "$bin"; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < wait * 10; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
    say "stopped $name (pid $pid)"
  fi
  rm -f "$PIDS/$name"
}

CONTAINERD_BIN="$(command -v containerd 2>/dev/null || echo /usr/bin/containerd)"
KUBELET_BIN="$BIN_DIR/kubelet"
KUBE_PROXY_BIN="$BIN_DIR/kube-proxy"
ctr_() { ctr --address "$CTD_SOCK" --namespace k8s.io "$@"; }
kubectl_() { "$BIN_DIR/kubectl" --kubeconfig="$RUN_DIR/admin.kubeconfig" "$@"; }

wait_until() { # <name> <binary> <what> <command...>
  local name="$1" bin="$2" what="$3" deadline
  shift 3
  deadline=$(($(date +%s) + START_TIMEOUT))
  until "$@" >/dev/null 2>&1; do
    if ! alive "$name" "$bin"; then
      echo "real-node: $name exited while waiting for $what; last lines of $LOGS/$name.log:" >&2
      tail -n 30 "$LOGS/$name.log" >&2 || true
      return 1
    fi
    if (($(date +%s) >= deadline)); then
      echo "real-node: timed out after ${START_TIMEOUT}s waiting for $what; last lines of $LOGS/$name.log:" >&2
      tail -n 30 "$LOGS/$name.log" >&2 || true
      return 1
    fi
    sleep 0.25
  done
}

# ---------------------------------------------------------------------------------------------------
# network: bridge, CNI config, the one NAT rule

apiserver_port() { sed -n 's/^APISERVER_PORT=//p' "$RUN_DIR/ports.env"; }

net_up() {
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
  fi
  ip addr replace "$GATEWAY/${POD_SUBNET#*/}" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  # The Service CIDR goes to the bridge: the host's own connections to a ClusterIP (DNAT-ed by kube-proxy in
  # OUTPUT) leave from the bridge address, and a ClusterIP without rules never goes out of eth0.
  ip route replace "$SERVICE_CIDR" dev "$BRIDGE" src "$GATEWAY"
  # Packets from pods to the Service IP are DNAT-ed to 127.0.0.1: allowed only with route_localnet.
  sysctl -qw "net.ipv4.conf.$BRIDGE.route_localnet=1"
  # A pod's connection to a ClusterIP arrives on the bridge for the gateway's MAC and is DNAT-ed to another
  # pod on the same bridge: the kernel routes it, which takes forwarding on the input interface (with it off,
  # the client's connection times out). On for this bridge only (net.ipv4.ip_forward stays as it is), and the
  # filter chain below lets what comes in from the bridge be forwarded only back onto it.
  sysctl -qw "net.ipv4.conf.$BRIDGE.forwarding=1"
  iptables -N "$FWD_CHAIN" 2>/dev/null || iptables -F "$FWD_CHAIN"
  iptables -A "$FWD_CHAIN" -o "$BRIDGE" -j RETURN
  iptables -A "$FWD_CHAIN" -j REJECT --reject-with icmp-net-unreachable
  iptables -C FORWARD -i "$BRIDGE" -j "$FWD_CHAIN" 2>/dev/null || iptables -I FORWARD 1 -i "$BRIDGE" -j "$FWD_CHAIN"
  mkdir -p "$CNI_CONF_DIR" "$CNI_IPAM_DIR"
  # isGateway false: the bridge already has the gateway address and the plugin then leaves
  # net.ipv4.ip_forward alone; the pods' default route (for the Service IP) comes from the IPAM routes.
  cat >"$CNI_CONF_DIR/10-oracle-real-node.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "oracle-real-node",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$CNI_IPAM_DIR",
        "ranges": [[{ "subnet": "$POD_SUBNET", "gateway": "$GATEWAY" }]],
        "routes": [{ "dst": "0.0.0.0/0", "gw": "$GATEWAY" }]
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
EOF
  local port
  port="$(apiserver_port)"
  iptables -t nat -N "$NAT_CHAIN" 2>/dev/null || iptables -t nat -F "$NAT_CHAIN"
  iptables -t nat -C PREROUTING -i "$BRIDGE" -j "$NAT_CHAIN" 2>/dev/null || iptables -t nat -A PREROUTING -i "$BRIDGE" -j "$NAT_CHAIN"
  # The host's own connections to the `kubernetes` Service too (kube-proxy has no endpoints for it, see up).
  iptables -t nat -C OUTPUT -d "$SERVICE_IP/32" -j "$NAT_CHAIN" 2>/dev/null || iptables -t nat -A OUTPUT -d "$SERVICE_IP/32" -j "$NAT_CHAIN"
  iptables -t nat -A "$NAT_CHAIN" -d "$SERVICE_IP/32" -p tcp --dport 443 -j DNAT --to-destination "127.0.0.1:$port"
  # Host ports a test wants pods to reach (e.g. REAL_NODE_HOST_PORTS="8545"): gateway:<port> -> 127.0.0.1:<port>.
  local p
  for p in ${REAL_NODE_HOST_PORTS:-}; do
    iptables -t nat -A "$NAT_CHAIN" -d "$GATEWAY/32" -p tcp --dport "$p" -j DNAT --to-destination "127.0.0.1:$p"
  done
}

net_down() {
  ip route del "$SERVICE_CIDR" dev "$BRIDGE" 2>/dev/null || true
  iptables -t nat -D PREROUTING -i "$BRIDGE" -j "$NAT_CHAIN" 2>/dev/null || true
  iptables -t nat -D OUTPUT -d "$SERVICE_IP/32" -j "$NAT_CHAIN" 2>/dev/null || true
  iptables -t nat -F "$NAT_CHAIN" 2>/dev/null || true
  iptables -t nat -X "$NAT_CHAIN" 2>/dev/null || true
  iptables -D FORWARD -i "$BRIDGE" -j "$FWD_CHAIN" 2>/dev/null || true
  iptables -F "$FWD_CHAIN" 2>/dev/null || true
  iptables -X "$FWD_CHAIN" 2>/dev/null || true
  ip link del "$BRIDGE" 2>/dev/null || true
  rm -rf "$CNI_IPAM_DIR"
}

# ---------------------------------------------------------------------------------------------------
# containerd

containerd_up() {
  mkdir -p "$CTD_ROOT" "$CTD_STATE"
  cat >"$NODE_DIR/containerd.toml" <<EOF
version = 2
root = "$CTD_ROOT"
state = "$CTD_STATE"
[grpc]
  address = "$CTD_SOCK"
[ttrpc]
  address = "$CTD_SOCK.ttrpc"
[debug]
  level = "info"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  # Sandboxes get oom_score_adj -998 and Guaranteed pods -997; lowering it needs CAP_SYS_RESOURCE, which
  # some hosts (this sandboxed CI machine among them) do not grant even to root: runc then fails with
  # "nsexec: failed to update /proc/self/oom_score_adj: Permission denied". Clamp to containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN_DIR"
    conf_dir = "$CNI_CONF_DIR"
    max_conf_num = 1
EOF
  say "starting containerd $(containerd --version | awk '{print $3}') (socket $CTD_SOCK)"
  start containerd "$CONTAINERD_BIN" --config "$NODE_DIR/containerd.toml"
  wait_until containerd "$CONTAINERD_BIN" "containerd's socket" ctr_ version
}

import_images() {
  local engine="$IMAGE_OUT/$IMAGE_NAME-$IMAGE_TAG.tar" pause="$IMAGE_OUT/pause-${PAUSE_IMAGE##*:}.tar" t0 f
  if [[ ! -f $pause || ! -f $engine ]]; then
    say "building the images first (make image image-pause)"
    make --no-print-directory -C "$ROOT" image image-pause >"$LOGS/images.log" 2>&1 \
      || die "make image image-pause failed (see $LOGS/images.log)"
  fi
  t0=$(date +%s%N)
  for f in "$pause" "$engine"; do
    ctr_ images import "$f" >>"$LOGS/import.log" 2>&1 || die "ctr images import $f failed (see $LOGS/import.log)"
  done
  say "imported $(basename "$pause") and $(basename "$engine") in $((($(date +%s%N) - t0) / 1000000)) ms"
}

# The sandboxes and containers the CRI plugin created, stopped and removed (for `down`).
remove_all_containers() {
  local id
  for id in $(ctr_ tasks ls -q 2>/dev/null); do
    ctr_ tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true
  done
  sleep 0.5
  for id in $(ctr_ tasks ls -q 2>/dev/null); do
    ctr_ tasks delete -f "$id" >/dev/null 2>&1 || true
  done
  for id in $(ctr_ containers ls -q 2>/dev/null); do
    ctr_ containers delete "$id" >/dev/null 2>&1 || true
  done
}

# ---------------------------------------------------------------------------------------------------
# kubelet

node_pki() {
  local ca="$RUN_DIR/pki"
  mkdir -p "$NODE_PKI"
  (
    cd "$NODE_PKI"
    local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
    printf '%s\n' "extendedKeyUsage=clientAuth" "keyUsage=critical,digitalSignature,keyEncipherment" >client.ext
    printf '%s\n' "subjectAltName=IP:127.0.0.1,IP:$GATEWAY,DNS:$NODE_NAME" "extendedKeyUsage=serverAuth" \
      "keyUsage=critical,digitalSignature,keyEncipherment" >server.ext
    openssl req "${ec[@]}" -keyout kubelet-client.key -out kubelet-client.csr -subj "/O=system:nodes/CN=system:node:$NODE_NAME"
    openssl x509 -req -in kubelet-client.csr -CA "$ca/ca.crt" -CAkey "$ca/ca.key" -CAcreateserial -out kubelet-client.crt -days 3650 -extfile client.ext
    # kube-proxy as system:kube-proxy: the bootstrap ClusterRoleBinding system:node-proxier grants what it reads.
    openssl req "${ec[@]}" -keyout kube-proxy.key -out kube-proxy.csr -subj "/CN=system:kube-proxy"
    openssl x509 -req -in kube-proxy.csr -CA "$ca/ca.crt" -CAkey "$ca/ca.key" -CAcreateserial -out kube-proxy.crt -days 3650 -extfile client.ext
    openssl req "${ec[@]}" -keyout kubelet.key -out kubelet.csr -subj "/CN=$NODE_NAME"
    openssl x509 -req -in kubelet.csr -CA "$ca/ca.crt" -CAkey "$ca/ca.key" -CAcreateserial -out kubelet.crt -days 3650 -extfile server.ext
    rm -f ./*.csr
  ) >"$LOGS/node-pki.log" 2>&1 || die "openssl failed (see $LOGS/node-pki.log)"
  node_kubeconfig kubelet "system:node:$NODE_NAME" kubelet-client
  node_kubeconfig kube-proxy system:kube-proxy kube-proxy
}

node_kubeconfig() { # <name> <user> <cert/key basename in $NODE_PKI>: writes $NODE_DIR/<name>.kubeconfig
  cat >"$NODE_DIR/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: oracle-node-operator-test
    cluster:
      server: https://127.0.0.1:$(apiserver_port)
      certificate-authority: $RUN_DIR/pki/ca.crt
users:
  - name: $2
    user:
      client-certificate: $NODE_PKI/$3.crt
      client-key: $NODE_PKI/$3.key
contexts:
  - name: $1
    context: { cluster: oracle-node-operator-test, user: "$2" }
current-context: $1
EOF
  chmod 600 "$NODE_DIR/$1.kubeconfig"
}

kubelet_up() {
  mkdir -p "$KUBELET_DIR" "$NODE_DIR/pod-logs" "$NODE_DIR/volume-plugins"
  : >"$NODE_DIR/resolv.conf"
  # cgroup v1 (this machine) or v2, cgroupfs driver (no systemd here); anonymous, AlwaysAllow on 127.0.0.1
  # only because the test apiserver calls kubelets without a client certificate (kubectl logs/exec).
  # Image garbage collection stays off: the images are imported, never pulled, so a collected one is gone.
  cat >"$NODE_DIR/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $NODE_PKI/kubelet.crt
tlsPrivateKeyFile: $NODE_PKI/kubelet.key
authentication:
  anonymous: { enabled: true }
  webhook: { enabled: false }
  x509: { clientCAFile: $RUN_DIR/pki/ca.crt }
authorization: { mode: AlwaysAllow }
containerRuntimeEndpoint: unix://$CTD_SOCK
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
resolvConf: $NODE_DIR/resolv.conf
podLogsDir: $NODE_DIR/pod-logs
volumePluginDir: $NODE_DIR/volume-plugins
clusterDomain: cluster.local
maxPods: 110
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
imageMinimumGCAge: 876000h
evictionHard: { memory.available: "100Mi", nodefs.available: "2%", imagefs.available: "2%" }
nodeStatusUpdateFrequency: 10s
syncFrequency: 10s
fileCheckFrequency: 10s
shutdownGracePeriod: 0s
protectKernelDefaults: false
EOF
  say "starting kubelet $("$KUBELET_BIN" --version | awk '{print $2}') as node $NODE_NAME (root dir $KUBELET_DIR)"
  start kubelet "$KUBELET_BIN" --config="$NODE_DIR/kubelet.yaml" --kubeconfig="$NODE_DIR/kubelet.kubeconfig" \
    --root-dir="$KUBELET_DIR" --cert-dir="$NODE_PKI" --hostname-override="$NODE_NAME" --node-ip="$GATEWAY" \
    --node-labels="oracle-node-operator.test/real-node=true" --v=1
}

# ---------------------------------------------------------------------------------------------------
# kube-proxy

kube_proxy_up() {
  # iptables mode on the host's iptables (nft backend here). Host-wide settings stay as they are:
  # --conntrack-* 0 leaves nf_conntrack_max and the TCP timeouts alone (kube-proxy would otherwise size them
  # for a dedicated node), and NodePorts listen on the node IP only (the bridge address), never on eth0
  # or 127.0.0.1 (which would also flip net.ipv4.conf.all.route_localnet). --cluster-cidr is the pod
  # subnet: traffic to a ClusterIP from outside it (the host) is masqueraded to the bridge address.
  say "starting kube-proxy $("$KUBE_PROXY_BIN" --version | awk '{print $2}') (iptables, cluster CIDR $POD_SUBNET, Services $SERVICE_CIDR)"
  start kube-proxy "$KUBE_PROXY_BIN" --kubeconfig="$NODE_DIR/kube-proxy.kubeconfig" --proxy-mode=iptables \
    --hostname-override="$NODE_NAME" --bind-address="$GATEWAY" --cluster-cidr="$POD_SUBNET" \
    --nodeport-addresses=primary --iptables-localhost-nodeports=false \
    --healthz-bind-address="127.0.0.1:$KUBE_PROXY_HEALTHZ_PORT" --metrics-bind-address="127.0.0.1:$KUBE_PROXY_METRICS_PORT" \
    --conntrack-max-per-core=0 --conntrack-min=0 --conntrack-tcp-timeout-established=0 \
    --conntrack-tcp-timeout-close-wait=0 --oom-score-adj=0 --v=1
}

# /healthz answers 200 once kube-proxy has written its first full set of rules.
kube_proxy_synced() { curl -sf --max-time 2 "http://127.0.0.1:$KUBE_PROXY_HEALTHZ_PORT/healthz"; }

kube_proxy_down() {
  if alive kube-proxy "$KUBE_PROXY_BIN"; then stop_one kube-proxy "$KUBE_PROXY_BIN" 10; fi
  rm -f "$PIDS/kube-proxy"
  # Its KUBE-* chains and jumps (nat and filter, IPv4 and IPv6), as kube-proxy itself removes them.
  if [[ -x $KUBE_PROXY_BIN ]] && iptables -t nat -S KUBE-SERVICES >/dev/null 2>&1; then
    "$KUBE_PROXY_BIN" --cleanup --proxy-mode=iptables --v=1 >"$LOGS/kube-proxy-cleanup.log" 2>&1 \
      || say "kube-proxy --cleanup reported errors (see $LOGS/kube-proxy-cleanup.log)"
  fi
}

# The Service CIDR of the running apiserver (its command line) must be the one kube-proxy's rules and the
# bridge route assume.
check_service_cidr() {
  local pid range
  pid="$(pid_of kube-apiserver)" || return 0
  range="$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | sed -n 's/^--service-cluster-ip-range=//p' | tail -n1)"
  [[ -z $range || $range == "$SERVICE_CIDR" ]] && return 0
  echo "real-node: the apiserver runs with --service-cluster-ip-range=$range, this script assumes $SERVICE_CIDR (REAL_NODE_SERVICE_CIDR)" >&2
  return 1
}

node_ready() {
  [[ "$(kubectl_ get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]]
}

unmount_under() { # <dir>: unmount everything mounted below dir, deepest first
  local m
  while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done < <(awk -v d="$1" '$2 ~ "^"d { print $2 }' /proc/self/mounts | sort -r)
}

# ---------------------------------------------------------------------------------------------------
# commands

need_root() { ((EUID == 0)) || die "needs root (containerd, runc, network namespaces, iptables, mounts)"; }

print_env() {
  cat <<EOF
export KUBECONFIG=$RUN_DIR/admin.kubeconfig
export CLUSTER_RESTRICTED_KUBECONFIG=$RUN_DIR/restricted.kubeconfig
export REAL_NODE_NAME=$NODE_NAME
export REAL_NODE_GATEWAY=$GATEWAY
export REAL_NODE_CONTAINERD_SOCK=$CTD_SOCK
export REAL_NODE_IMAGE=$IMAGE_NAME:$IMAGE_TAG
EOF
}

all_alive() {
  local c
  for c in etcd kube-apiserver kube-controller-manager kube-scheduler; do alive "$c" "$BIN_DIR/$c" || return 1; done
  alive containerd "$CONTAINERD_BIN" && alive kubelet "$KUBELET_BIN" && alive kube-proxy "$KUBE_PROXY_BIN"
}

up() {
  need_root
  local t0 t1 ms
  t0=$(date +%s%N)
  deps
  [[ -x $KUBELET_BIN && -x $KUBE_PROXY_BIN ]] || build
  [[ -x $BIN_DIR/kubectl ]] || die "$BIN_DIR/kubectl is missing: run 'make cluster-bins'"
  mkdir -p "$LOGS" "$PIDS" "$NODE_DIR"
  if all_alive && node_ready 2>/dev/null; then
    say "already running (node $NODE_NAME Ready)"
    import_images
    print_env
    return 0
  fi
  if [[ -f $PIDS/kubelet || -f $PIDS/kube-proxy || -f $PIDS/containerd || -f $PIDS/kube-apiserver ]]; then
    say "found a partial or stale real-node cluster: stopping it first"
    down_node
    stop_control_plane
  fi

  # The control plane of cluster.sh, in this run dir; its kwok is stopped right after (see the header).
  # No endpoint reconciler: the apiserver listens on 127.0.0.1 only, and the address it would advertise for
  # the `kubernetes` Service (this host's eth0) has nothing listening on its port. Without endpoints,
  # kube-proxy writes no DNAT for that Service and the bridge's rule (net_up) sends it to 127.0.0.1.
  CLUSTER_APISERVER_ARGS="${CLUSTER_APISERVER_ARGS:-} --endpoint-reconciler-type=none" \
    "$HERE/cluster.sh" up >"$RUN_DIR/cluster-up.out" 2>&1 8>&- || {
    cat "$RUN_DIR/cluster-up.out" >&2
    die "cluster.sh up failed"
  }
  grep -v '^export ' "$RUN_DIR/cluster-up.out" | sed 's/^/  /'
  local kwok_pid
  kwok_pid="$(cat "$PIDS/kwok" 2>/dev/null || true)"
  if [[ -n $kwok_pid ]] && [[ "$(readlink "/proc/$kwok_pid/exe" 2>/dev/null)" == "$BIN_DIR/kwok" ]]; then
    kill -TERM "$kwok_pid" 2>/dev/null || true
    say "stopped kwok (pid $kwok_pid): this cluster's node is real"
  fi
  rm -f "$PIDS/kwok"
  kubectl_ delete node kwok-node-0 --ignore-not-found >/dev/null 2>&1 || true
  check_service_cidr || {
    stop_control_plane
    die "Service CIDR mismatch"
  }
  t1=$(date +%s%N)

  net_up
  containerd_up || { down_node; die "containerd did not start"; }
  import_images
  node_pki
  kubelet_up
  local tp
  tp=$(date +%s%N)
  kube_proxy_up
  # kube-proxy waits for the Node object (its IPs) that the kubelet registers, then writes its rules.
  wait_until kube-proxy "$KUBE_PROXY_BIN" "kube-proxy's first sync (/healthz)" kube_proxy_synced || { down_node; die "kube-proxy did not sync"; }
  local proxy_ms=$((($(date +%s%N) - tp) / 1000000))
  wait_until kubelet "$KUBELET_BIN" "node $NODE_NAME Ready" node_ready || { down_node; die "the kubelet did not become Ready"; }
  ms=$((($(date +%s%N) - t1) / 1000000))
  printf '%s\n' "node_start_ms=$ms" "kube_proxy_start_ms=$proxy_ms" >"$RUN_DIR/timings.env"
  say "node $NODE_NAME Ready $((ms / 1000)).$((ms % 1000 / 100)) s after the control plane; kube-proxy synced $proxy_ms ms after its start; total $((($(date +%s%N) - t0) / 1000000)) ms"
  print_env >"$RUN_DIR/env"
  print_env
}

# The chains the kubelet writes at start and never removes: KUBE-FIREWALL (filter; drops packets to 127.0.0.0/8
# from other sources, jumped to from INPUT and OUTPUT), its canaries and the mangle hint, IPv4 and IPv6. Left
# alone while any other kubelet runs on the machine: they would be its chains too.
kubelet_chains_down() {
  if pgrep -x kubelet >/dev/null 2>&1; then
    say "another kubelet runs on this machine: its KUBE-FIREWALL and canary chains are left in place"
    return 0
  fi
  local ipt table
  for ipt in iptables ip6tables; do
    command -v "$ipt" >/dev/null 2>&1 || continue
    while "$ipt" -D INPUT -j KUBE-FIREWALL 2>/dev/null; do :; done
    while "$ipt" -D OUTPUT -j KUBE-FIREWALL 2>/dev/null; do :; done
    "$ipt" -F KUBE-FIREWALL 2>/dev/null && "$ipt" -X KUBE-FIREWALL 2>/dev/null || true
    for table in filter nat mangle; do
      "$ipt" -t "$table" -X KUBE-KUBELET-CANARY 2>/dev/null || true
    done
    "$ipt" -t mangle -X KUBE-IPTABLES-HINT 2>/dev/null || true
  done
  return 0
}

down_node() {
  kube_proxy_down
  if alive kubelet "$KUBELET_BIN"; then stop_one kubelet "$KUBELET_BIN" 15; fi
  rm -f "$PIDS/kubelet"
  kubelet_chains_down
  local netns=() id
  if alive containerd "$CONTAINERD_BIN"; then
    # The pod network namespaces of this containerd's sandboxes (from their OCI specs), removed below.
    for id in $(ctr_ containers ls -q 2>/dev/null); do
      mapfile -t -O "${#netns[@]}" netns < <(ctr_ containers info "$id" 2>/dev/null | grep -o '/var/run/netns/cni-[0-9a-f-]*' || true)
    done
    remove_all_containers
    stop_one containerd "$CONTAINERD_BIN" 10
  fi
  rm -f "$PIDS/containerd"
  # Shims of this containerd that outlived it (e.g. of sandboxes that failed to start): matched by the
  # exact containerd socket on their command line.
  local pid
  for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $CTD_SOCK" 2>/dev/null || true); do
    kill -KILL "$pid" 2>/dev/null || true
  done
  # Pod network namespaces the CNI plugins left, volume mounts of the kubelet, overlay mounts of containerd.
  local ns
  for ns in $( ((${#netns[@]})) && printf '%s\n' "${netns[@]}" | sort -u); do
    if [[ -e $ns ]]; then ip netns del "$(basename "$ns")" 2>/dev/null || true; fi
  done
  unmount_under "$KUBELET_DIR"
  unmount_under "$CTD_STATE"
  unmount_under "$CTD_ROOT"
  net_down
  rm -rf "$CTD_STATE"
}

# The control plane's processes, stopped by their recorded pids (kwok's is gone, so cluster.sh's own
# `down` would report it); `cluster.sh down` then removes its state.
stop_control_plane() {
  local c
  for c in kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
    stop_one "$c" "$BIN_DIR/$c" 10
  done
}

down() {
  need_root
  down_node
  stop_control_plane
  "$HERE/cluster.sh" down 8>&- || true
  # Container and kubelet state is per run; the logs stay.
  rm -rf "$NODE_DIR" "$RUN_DIR/env" "$RUN_DIR/timings.env"
  say "stopped; logs kept in $LOGS"
}

status() {
  local rc=0 c bin
  for c in etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy; do
    case "$c" in
    containerd) bin="$CONTAINERD_BIN" ;;
    *) bin="$BIN_DIR/$c" ;;
    esac
    if alive "$c" "$bin"; then
      printf '  %-24s pid %-8s running\n' "$c" "$(pid_of "$c")"
    else
      printf '  %-24s pid %-8s not running\n' "$c" "$(pid_of "$c" 2>/dev/null || echo -)"
      rc=1
    fi
  done
  if ((rc == 0)); then
    if node_ready; then
      echo "  node $NODE_NAME Ready"
    else
      echo "  node $NODE_NAME not Ready"
      rc=1
    fi
  fi
  return $rc
}

mkdir -p "$RUN_DIR"
cmd="${1:-}"
case "$cmd" in
up | down)
  exec 8>"$RUN_DIR/.real-node.lock"
  flock -w 600 8 || die "another real-node.sh holds $RUN_DIR/.real-node.lock"
  "$cmd"
  ;;
deps) deps ;;
build) build ;;
status) status ;;
import)
  need_root
  alive containerd "$CONTAINERD_BIN" || die "containerd of the real node is not running (NODE=real make cluster-up)"
  import_images
  ;;
env)
  status >/dev/null || die "not running (NODE=real make cluster-up)"
  print_env
  ;;
*)
  echo "usage: $0 deps|build|up|down|status|env|import" >&2
  exit 2
  ;;
esac
