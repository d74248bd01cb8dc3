#!/usr/bin/env bash
# A real Kubernetes control plane on 127.0.0.1 for the integration tests: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and kwok (one fake, untainted Node), run as plain processes.
#
#   test/cluster/cluster.sh up       start (or reuse) the cluster, print `export KUBECONFIG=...`
#   test/cluster/cluster.sh down     stop exactly the processes recorded by `up`, remove the state
#   test/cluster/cluster.sh status   show each component's pid and whether it is alive; exit 1 if not running
#   test/cluster/cluster.sh env      print the export lines for a running cluster
#
# The binaries come from test/cluster/build.sh (`make cluster-bins`). Runtime state lives in
# $CLUSTER_RUN_DIR (default .cache/cluster/run): pki/, logs/, pids/, ports.env, *.kubeconfig.
# etcd's data dir is on tmpfs (/dev/shm) when available. Ports default to non-standard ones and move
# up to the next free port when taken by something else (e.g. a second checkout's cluster).
# Extra flags per component (space-separated): CLUSTER_ETCD_ARGS, CLUSTER_APISERVER_ARGS, CLUSTER_KCM_ARGS,
# CLUSTER_SCHEDULER_ARGS, CLUSTER_KWOK_ARGS, e.g. CLUSTER_APISERVER_ARGS=--feature-gates=SomeGate=true.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BIN_DIR="${CLUSTER_BIN_DIR:-$ROOT/.cache/cluster/bin}"
RUN_DIR="${CLUSTER_RUN_DIR:-$ROOT/.cache/cluster/run}"
PKI="$RUN_DIR/pki"
LOGS="$RUN_DIR/logs"
PIDS="$RUN_DIR/pids"
ADMIN_KUBECONFIG="$RUN_DIR/admin.kubeconfig"
RESTRICTED_KUBECONFIG="$RUN_DIR/restricted.kubeconfig"
# The second identity: a client certificate with no RBAC bindings of its own; tests grant it what they need.
RESTRICTED_USER="oracle-test-restricted"
RESTRICTED_GROUP="oracle-test:restricted"
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
START_TIMEOUT="${CLUSTER_START_TIMEOUT:-120}"
read -ra ETCD_ARGS <<<"${CLUSTER_ETCD_ARGS:-}"
read -ra APISERVER_ARGS <<<"${CLUSTER_APISERVER_ARGS:-}"
read -ra KCM_ARGS <<<"${CLUSTER_KCM_ARGS:-}"
read -ra SCHEDULER_ARGS <<<"${CLUSTER_SCHEDULER_ARGS:-}"
read -ra KWOK_ARGS <<<"${CLUSTER_KWOK_ARGS:-}"

if [[ -d /dev/shm && -w /dev/shm ]]; then
  ETCD_DATA="/dev/shm/oracle-node-operator-etcd-$(printf '%s' "$RUN_DIR" | cksum | cut -d' ' -f1)"
else
  ETCD_DATA="$RUN_DIR/etcd-data"
fi

say() { echo "cluster: $*"; }

# fail <component> <message>: print the component's log tail, stop what was started, exit non-zero.
fail() {
  local component="$1"
  shift
  echo "cluster: FAILED at $component: $*" >&2
  if [[ -f "$LOGS/$component.log" ]]; then
    echo "----- last 40 lines of $LOGS/$component.log -----" >&2
    tail -n 40 "$LOGS/$component.log" >&2 || true
    echo "-----" >&2
  fi
  stop_all >&2 || true
  echo "cluster: logs are kept in $LOGS" >&2
  exit 1
}

# ---------------------------------------------------------------------------------------------------
# processes

pid_of() { [[ -f "$PIDS/$1" ]] && cat "$PIDS/$1"; }

# alive <component>: the recorded pid runs our binary for that component (guards against pid reuse).
alive() {
  local pid exe
  pid="$(pid_of "$1")" || return 1
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 1
  exe="$(readlink "/proc/$pid/exe" 2>/dev/null)" || return 1
  [[ $exe == "$BIN_DIR/$1" ]]
}

start() { # <component> <args...>
  local name="$1"
  shift
  # setsid: a Ctrl-C in the terminal that ran `up` does not reach the cluster; `down` stops it.
  # 9>&-: the daemons must not inherit (and so keep holding) the lock of this script.
  setsid "$BIN_DIR/$name" "$@" >"$LOGS/$name.log" 2>&1 </dev/null 9>&- &
  echo $! >"$PIDS/$name"
  exec_done "$!" "$BIN_DIR/$name"
}

# exec_done <pid> <binary>: returns once the started process runs the binary (or is gone; at most 10 s). From fork to
# exec /proc/<pid>/exe names bash or setsid, and `alive` would call a healthy start dead: on a loaded machine that
# lasted long enough for the first check of wait_until ("the process exited" with an empty log, the process running).
exec_done() {
  local i
  for ((i = 0; i < 200; i++)); do
    [[ "$(readlink "/proc/$1/exe" 2>/dev/null)" == "$2" ]] && return 0
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.05
  done
}

# stop_group <component>...: SIGTERM to all of them at once, SIGKILL for whatever still runs after 5 s.
stop_group() {
  local c pid i entry waiting=()
  for c in "$@"; do
    pid="$(pid_of "$c")" || continue
    if alive "$c"; then
      kill -TERM "$pid" 2>/dev/null || true
      waiting+=("$c:$pid")
    elif [[ -n $pid ]]; then
      say "$c (recorded pid $pid) is not running"
    fi
  done
  for entry in "${waiting[@]}"; do
    c="${entry%%:*}" pid="${entry##*:}"
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      say "$c (pid $pid) did not exit within 5 s of SIGTERM: sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    say "stopped $c (pid $pid)"
  done
}

# Clients first (together), then the apiserver, then etcd: each exits quickly once nothing talks to it.
stop_all() {
  local c
  stop_group kwok kube-scheduler kube-controller-manager
  stop_group kube-apiserver
  stop_group etcd
  for c in "${COMPONENTS[@]}"; do rm -f "$PIDS/$c"; done
  rm -rf "$ETCD_DATA" "$PKI" "$RUN_DIR/ports.env" "$RUN_DIR/env" "$ADMIN_KUBECONFIG" "$RESTRICTED_KUBECONFIG"
}

any_recorded() {
  local c
  for c in "${COMPONENTS[@]}"; do [[ -f "$PIDS/$c" ]] && return 0; done
  return 1
}

all_alive() {
  local c
  for c in "${COMPONENTS[@]}"; do alive "$c" || return 1; done
}

# ---------------------------------------------------------------------------------------------------
# ports

port_busy() {
  if command -v ss >/dev/null 2>&1; then
    [[ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]]
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
  fi
}

TAKEN=" "
pick_port() { # <variable> <preferred>: the first free port from preferred on, not yet handed out by this run
  local p="$2"
  while port_busy "$p" || [[ $TAKEN == *" $p "* ]]; do
    p=$((p + 1))
    ((p < $2 + 200)) || fail ports "no free port in $2..$p"
  done
  [[ $p == "$2" ]] || say "port $2 is taken: using $p for $1"
  TAKEN+="$p "
  printf -v "$1" '%s' "$p"
}

choose_ports() {
  pick_port ETCD_PORT "${CLUSTER_ETCD_PORT:-23790}"
  pick_port ETCD_PEER_PORT "${CLUSTER_ETCD_PEER_PORT:-23800}"
  pick_port APISERVER_PORT "${CLUSTER_APISERVER_PORT:-16443}"
  pick_port KCM_PORT "${CLUSTER_KCM_PORT:-20257}"
  pick_port SCHEDULER_PORT "${CLUSTER_SCHEDULER_PORT:-20259}"
  cat >"$RUN_DIR/ports.env" <<EOF
ETCD_PORT=$ETCD_PORT
ETCD_PEER_PORT=$ETCD_PEER_PORT
APISERVER_PORT=$APISERVER_PORT
KCM_PORT=$KCM_PORT
SCHEDULER_PORT=$SCHEDULER_PORT
EOF
}

# ---------------------------------------------------------------------------------------------------
# PKI and kubeconfigs

gen_pki() {
  mkdir -p "$PKI"
  (
    cd "$PKI"
    local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
    openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.crt -days 3650 -subj "/CN=oracle-node-operator-test-ca" 2>/dev/null
    printf '%s\n' \
      "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" \
      "extendedKeyUsage=serverAuth" "keyUsage=critical,digitalSignature,keyEncipherment" >server.ext
    printf '%s\n' "extendedKeyUsage=clientAuth" "keyUsage=critical,digitalSignature,keyEncipherment" >client.ext
    sign() { # <name> <subject> <ext file>
      openssl req "${ec[@]}" -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days 3650 -extfile "$3" 2>/dev/null
      rm -f "$1.csr"
    }
    sign apiserver "/CN=kube-apiserver" server.ext
    sign admin "/O=system:masters/CN=kubernetes-admin" client.ext
    sign restricted "/O=$RESTRICTED_GROUP/CN=$RESTRICTED_USER" client.ext
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  ) >"$LOGS/pki.log" 2>&1 || true
  local f
  for f in ca.crt apiserver.crt apiserver.key admin.crt admin.key restricted.crt restricted.key sa.key sa.pub; do
    [[ -s "$PKI/$f" ]] || fail pki "openssl did not produce $PKI/$f"
  done
  openssl verify -CAfile "$PKI/ca.crt" "$PKI/apiserver.crt" "$PKI/admin.crt" "$PKI/restricted.crt" >>"$LOGS/pki.log" 2>&1 \
    || fail pki "the generated certificates do not verify against the CA"
}

write_kubeconfig() { # <file> <user> <cert name>
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: oracle-node-operator-test
    cluster:
      server: https://127.0.0.1:$APISERVER_PORT
      certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
  - name: $2
    user:
      client-certificate-data: $(base64 -w0 "$PKI/$3.crt")
      client-key-data: $(base64 -w0 "$PKI/$3.key")
contexts:
  - name: $2@oracle-node-operator-test
    context:
      cluster: oracle-node-operator-test
      user: $2
current-context: $2@oracle-node-operator-test
EOF
  chmod 600 "$1"
}

# ---------------------------------------------------------------------------------------------------
# readiness

# wait_until <component> <what> <command...>: poll every 0.25 s; fail fast when the component died.
wait_until() {
  local component="$1" what="$2" deadline
  shift 2
  deadline=$(($(date +%s) + START_TIMEOUT))
  until "$@" >/dev/null 2>&1; do
    alive "$component" || fail "$component" "the process exited while waiting for $what"
    (($(date +%s) < deadline)) || fail "$component" "timed out after ${START_TIMEOUT}s waiting for $what"
    sleep 0.25
  done
}

kubectl_admin() { "$BIN_DIR/kubectl" --kubeconfig="$ADMIN_KUBECONFIG" "$@"; }
https_ok() { # <port> <path>
  curl -sf --max-time 2 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "https://127.0.0.1:$1$2"
}
insecure_ok() { curl -skf --max-time 2 "https://127.0.0.1:$1$2"; }
node_ready() {
  [[ "$(kubectl_admin get node kwok-node-0 -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]]
}

print_env() {
  cat <<EOF
export KUBECONFIG=$ADMIN_KUBECONFIG
export CLUSTER_RESTRICTED_KUBECONFIG=$RESTRICTED_KUBECONFIG
EOF
}

# ---------------------------------------------------------------------------------------------------
# commands

up() {
  local t0 advertise=()
  t0=$(date +%s%N)
  local b
  for b in "${COMPONENTS[@]}" kubectl; do
    [[ -x "$BIN_DIR/$b" ]] || {
      echo "cluster: $BIN_DIR/$b is missing: run 'make cluster-bins' (or test/cluster/build.sh) first" >&2
      exit 1
    }
  done
  command -v openssl >/dev/null || { echo "cluster: openssl is needed for the PKI" >&2; exit 1; }
  command -v curl >/dev/null || { echo "cluster: curl is needed for the readiness checks" >&2; exit 1; }

  if any_recorded; then
    # shellcheck source=/dev/null
    if all_alive && [[ -f "$RUN_DIR/ports.env" ]] && source "$RUN_DIR/ports.env" && https_ok "$APISERVER_PORT" /readyz >/dev/null 2>&1; then
      say "already running (apiserver https://127.0.0.1:$APISERVER_PORT)"
      print_env
      return 0
    fi
    say "found a partial or stale cluster: stopping it first"
    stop_all
  fi
  rm -rf "$ETCD_DATA" "$LOGS"
  mkdir -p "$LOGS" "$PIDS"
  choose_ports
  gen_pki
  write_kubeconfig "$ADMIN_KUBECONFIG" kubernetes-admin admin
  write_kubeconfig "$RESTRICTED_KUBECONFIG" "$RESTRICTED_USER" restricted

  say "starting etcd on 127.0.0.1:$ETCD_PORT (data in $ETCD_DATA)"
  start etcd --name=test --data-dir="$ETCD_DATA" \
    --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="test=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state=new \
    --unsafe-no-fsync=true --quota-backend-bytes=$((2 * 1024 * 1024 * 1024)) --log-level=warn "${ETCD_ARGS[@]}"
  wait_until etcd "etcd /readyz" curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/readyz"

  # The apiserver refuses a loopback advertise address for the `kubernetes` Service endpoints; with a
  # default route it picks the host's address itself, without one it needs the loopback and no reconciler.
  if ! ip route show default 2>/dev/null | grep -q . && ! awk 'NR>1 && $2=="00000000"{f=1} END{exit !f}' /proc/net/route 2>/dev/null; then
    advertise=(--advertise-address=127.0.0.1 --endpoint-reconciler-type=none)
  fi
  say "starting kube-apiserver on https://127.0.0.1:$APISERVER_PORT"
  start kube-apiserver --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --secure-port="$APISERVER_PORT" "${advertise[@]}" \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --service-cluster-ip-range=10.96.0.0/16 \
    --authorization-mode=Node,RBAC --allow-privileged=true --profiling=false --v=1 "${APISERVER_ARGS[@]}"
  wait_until kube-apiserver "kube-apiserver /readyz" https_ok "$APISERVER_PORT" /readyz

  local auth=(--kubeconfig="$ADMIN_KUBECONFIG" --authentication-kubeconfig="$ADMIN_KUBECONFIG"
    --authorization-kubeconfig="$ADMIN_KUBECONFIG" --bind-address=127.0.0.1 --leader-elect=false)
  say "starting kube-controller-manager (health on :$KCM_PORT) and kube-scheduler (health on :$SCHEDULER_PORT)"
  start kube-controller-manager "${auth[@]}" --secure-port="$KCM_PORT" \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
    --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
    --controllers='*' --kube-api-qps=100 --kube-api-burst=200 --profiling=false --v=1 "${KCM_ARGS[@]}"
  start kube-scheduler "${auth[@]}" --secure-port="$SCHEDULER_PORT" --kube-api-qps=100 --kube-api-burst=200 \
    --profiling=false --v=1 "${SCHEDULER_ARGS[@]}"
  wait_until kube-controller-manager "kube-controller-manager /healthz" insecure_ok "$KCM_PORT" /healthz
  wait_until kube-scheduler "kube-scheduler /healthz" insecure_ok "$SCHEDULER_PORT" /healthz

  say "starting kwok and registering node kwok-node-0"
  start kwok --kubeconfig="$ADMIN_KUBECONFIG" --manage-all-nodes=true \
    --cidr=10.244.0.1/16 --node-ip=10.243.0.1 --node-lease-duration-seconds=40 "${KWOK_ARGS[@]}"
  kubectl_admin apply -f "$HERE/kwok-node.yaml" >>"$LOGS/kwok.log" 2>&1 || fail kwok "could not create the fake Node"
  wait_until kwok "node kwok-node-0 Ready" node_ready
  # The default ServiceAccount shows the controller-manager's controllers are running (pods need it).
  wait_until kube-controller-manager "serviceaccount default/default" kubectl_admin -n default get serviceaccount default

  print_env >"$RUN_DIR/env"
  local ms=$((($(date +%s%N) - t0) / 1000000))
  say "ready in $((ms / 1000)).$((ms % 1000 / 100)) s: $(kubectl_admin get --raw /version 2>/dev/null | sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p') at https://127.0.0.1:$APISERVER_PORT"
  print_env
}

down() {
  if ! any_recorded && [[ ! -e $ETCD_DATA && ! -e $PKI ]]; then
    say "not running"
    return 0
  fi
  stop_all
  say "stopped; logs kept in $LOGS"
}

status() {
  local c rc=0 pid
  for c in "${COMPONENTS[@]}"; do
    pid="$(pid_of "$c" || true)"
    if alive "$c"; then
      printf '  %-24s pid %-8s running\n' "$c" "$pid"
    else
      printf '  %-24s pid %-8s not running\n' "$c" "${pid:--}"
      rc=1
    fi
  done
  [[ -f "$RUN_DIR/ports.env" ]] && sed 's/^/  /' "$RUN_DIR/ports.env"
  return $rc
}

mkdir -p "$RUN_DIR"
cmd="${1:-}"
case "$cmd" in
up | down)
  # One `up` or `down` at a time per run dir (several shells may share the working tree).
  exec 9>"$RUN_DIR/.lock"
  flock -w 180 9 || {
    echo "cluster: another cluster.sh holds $RUN_DIR/.lock" >&2
    exit 1
  }
  "$cmd"
  ;;
status) status ;;
env)
  all_alive || {
    echo "cluster: not running (make cluster-up)" >&2
    exit 1
  }
  print_env
  ;;
*)
  echo "usage: $0 up|down|status|env" >&2
  exit 2
  ;;
esac
