#!/usr/bin/env bash
# Builds the test control plane's binaries from the pinned Go modules under test/cluster/ into
# $CLUSTER_BIN_DIR (default .cache/cluster/bin). A binary whose --version already reports the pinned
# version is skipped, so a warm run costs a few seconds. Go's build and module caches stay where
# `go env` puts them (by default under $HOME), so a fresh clone on the same machine only relinks; on top of
# that, every built binary is also kept in $CLUSTER_SHARED_BIN_DIR (default ~/.cache/oracle-node-operator/
# cluster-bin/, keyed by the helper module's go.mod/go.sum, the Go version and RECIPE), from where a fresh
# clone copies it instead of relinking. CLUSTER_SHARED_BIN_DIR= (empty) turns that off.
#
# Before building, binaries already on the machine are used when they report the pinned version: from
# $KUBEBUILDER_ASSETS (envtest's layout: etcd, kube-apiserver, kubectl), then from PATH. Those are copied into
# $CLUSTER_BIN_DIR. CLUSTER_USE_HOST_BINS=0 turns that off. At the end, one line per binary says which file is
# used, its version and where it came from (kept, copied from the shared cache, from KUBEBUILDER_ASSETS or PATH,
# built).
#
# The same script builds the test tools: tiny Go programs under test/tools/<name>/ (each with its own go.mod) that
# the integration tests run as processes (kstatus: cli-utils' kstatus.Compute; argocd-lua: gopher-lua set up as
# Argo CD sets it up). They are stamped with a checksum of their module's files, so a changed source is rebuilt.
#
# Usage: test/cluster/build.sh [all|k8s|kube-proxy|etcd|kwok|helm|tools|prometheus]...   (default: all; kube-proxy and
# prometheus (promtool + the Prometheus server, for make test-alerts and the scrape test) only when named)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BIN_DIR="${CLUSTER_BIN_DIR:-$ROOT/.cache/cluster/bin}"
USER_CACHE="${XDG_CACHE_HOME:-${HOME:+$HOME/.cache}}" # empty without HOME: no shared copy then
SHARED_DIR="${CLUSTER_SHARED_BIN_DIR-${USER_CACHE:+$USER_CACHE/oracle-node-operator/cluster-bin}}"

die() {
  echo "cluster-bins: $*" >&2
  exit 1
}
log() { echo "cluster-bins: $*"; }

# Go is needed only when something must be built: binaries kept, copied or found on the machine need none.
HAVE_GO=0
command -v go >/dev/null 2>&1 && HAVE_GO=1
need_go() {
  ((HAVE_GO)) || die "go not found on PATH: $1 must be built from its Go module (Go >= 1.24), or put a binary of the pinned version in KUBEBUILDER_ASSETS or on PATH"
}

# The pinned versions come from the committed go.mod files, so there is one place to bump them.
mod_version() { # <dir> <module path>
  awk -v m="$2" '($1 == m || ($1 == "require" && $2 == m)) && !/=>/ { print ($1 == "require" ? $3 : $2); exit }' "$HERE/$1/go.mod"
}
K8S_VERSION="$(mod_version k8s k8s.io/kubernetes)"
ETCD_VERSION="$(mod_version etcd go.etcd.io/etcd/server/v3)"
KWOK_VERSION="$(mod_version kwok sigs.k8s.io/kwok)"
HELM_VERSION="$(mod_version helm helm.sh/helm/v3)"
PROMETHEUS_MODULE_VERSION="$(mod_version prometheus github.com/prometheus/prometheus)"
[[ -n $K8S_VERSION && -n $ETCD_VERSION && -n $KWOK_VERSION && -n $HELM_VERSION && -n $PROMETHEUS_MODULE_VERSION ]] || die "cannot read the pinned versions from test/cluster/*/go.mod"
# Prometheus 3.x.y is published as the Go module v0.(300+x).y.
PROMETHEUS_VERSION="$(echo "$PROMETHEUS_MODULE_VERSION" | awk -F. '{ sub(/^v0/, "", $1); print 3 "." ($2 - 300) "." $3 }')"
K8S_MINOR="$(echo "$K8S_VERSION" | cut -d. -f2)"

export CGO_ENABLED=0
# Without HOME (some CI runners) go has no build cache ("GOCACHE is not defined") and no module cache: keep
# both under .cache/ then.
if ((HAVE_GO)) && [[ -z ${GOCACHE:-} && "$(go env GOCACHE 2>/dev/null)" != /* ]]; then export GOCACHE="$ROOT/.cache/go/build"; fi
if ((HAVE_GO)) && [[ -z ${GOMODCACHE:-} && "$(go env GOMODCACHE 2>/dev/null)" != /* ]]; then export GOMODCACHE="$ROOT/.cache/go/mod"; fi
# Two parallel compiles per core is what go picks anyway; `nice` keeps an interactive machine usable.
GO_BUILD=(nice -n 10 go build -trimpath)

mkdir -p "$BIN_DIR"

# The shared copy of a binary lives under a key of what decides its bytes: the module's go.mod/go.sum, the Go
# toolchain and the build recipe below. Bump RECIPE when the flags change (the version checks catch most of it).
RECIPE=1
GO_VERSION="$( ((HAVE_GO)) && go env GOVERSION)" || true
shared_path() { # <binary> <module dir>
  local key
  # Files a module dir patches its build with (*.in: see build_prometheus) are part of the recipe.
  key="$({ cat "$HERE/$2/go.mod" "$HERE/$2/go.sum" "$HERE/$2/"*.in 2>/dev/null; echo "$GO_VERSION recipe $RECIPE"; } | cksum | cut -d' ' -f1)"
  echo "$SHARED_DIR/$2-$key/$1"
}
restore() { # <binary> <module dir>: copy a previously built binary from the shared cache
  [[ -n $SHARED_DIR && -n $GO_VERSION ]] || return 1
  local src
  src="$(shared_path "$1" "$2")"
  [[ -x $src ]] || return 1
  cp -f "$src" "$BIN_DIR/$1.tmp" && mv -f "$BIN_DIR/$1.tmp" "$BIN_DIR/$1" && log "$1: copied from $(dirname "$src")"
}
publish() { # <binary> <module dir>: keep a copy for other clones on this machine (best effort)
  [[ -n $SHARED_DIR && -n $GO_VERSION ]] || return 0
  local dst
  dst="$(shared_path "$1" "$2")"
  cmp -s "$BIN_DIR/$1" "$dst" && return 0
  { mkdir -p "$(dirname "$dst")" && cp -f "$BIN_DIR/$1" "$dst.tmp.$$" && mv -f "$dst.tmp.$$" "$dst"; } || rm -f "$dst.tmp.$$"
  # Keep the two most recently filled keys per module (e.g. two branches); older ones are dead weight.
  local old
  # shellcheck disable=SC2012
  while IFS= read -r old; do rm -rf -- "$old"; done < <(ls -1dt -- "$SHARED_DIR/$2-"* 2>/dev/null | tail -n +3)
}

# have <binary> <expected substring> <version command...>: true when the binary reports the pinned version.
# HAVE_PATH overrides where the binary is looked for (a candidate from KUBEBUILDER_ASSETS or PATH).
have() {
  local bin="${HAVE_PATH:-$BIN_DIR/$1}" want="$2"
  shift 2
  [[ -x $bin ]] || return 1
  local out
  out="$("$bin" "$@" 2>/dev/null)" || return 1
  [[ $out == *"$want"* ]]
}

# Where each binary in BIN_DIR came from, for the summary at the end.
declare -A ORIGIN=()
origin() { # <binary> <origin>: records the first origin only (a later publish/check does not overwrite it)
  [[ -n ${ORIGIN[$1]:-} ]] || ORIGIN[$1]="$2"
}

# adopt <binary> <check function>: copies a binary already on the machine that reports the pinned version:
# $KUBEBUILDER_ASSETS/<binary> first (envtest users have etcd, kube-apiserver and kubectl there), then PATH.
adopt() {
  [[ ${CLUSTER_USE_HOST_BINS:-1} != 0 ]] || return 1
  local name="$1" check="$2" candidate where
  for where in KUBEBUILDER_ASSETS PATH; do
    if [[ $where == KUBEBUILDER_ASSETS ]]; then
      [[ -n ${KUBEBUILDER_ASSETS:-} ]] || continue
      candidate="$KUBEBUILDER_ASSETS/$name"
    else
      candidate="$(command -v "$name" 2>/dev/null)" || continue
    fi
    [[ -x $candidate && "$(readlink -f "$candidate")" != "$(readlink -f "$BIN_DIR/$name")" ]] || continue
    if HAVE_PATH="$candidate" "$check" "$name"; then
      cp -f "$candidate" "$BIN_DIR/$name.tmp" && mv -f "$BIN_DIR/$name.tmp" "$BIN_DIR/$name"
      log "$name: using $candidate (from $where, pinned version)"
      origin "$name" "from $where $candidate"
      return 0
    fi
    log "$name: $candidate (from $where) is not the pinned version; not used"
  done
  return 1
}

# current <binary> <check function>: the binary in BIN_DIR is usable as it is, or after copying one in.
current() {
  local name="$1" check="$2" module="$3"
  if "$check" "$name"; then origin "$name" "kept"; return 0; fi
  if restore "$name" "$module" && "$check" "$name"; then origin "$name" "copied from the shared cache"; return 0; fi
  adopt "$name" "$check"
}

timed() { # <label> <command...>
  local label="$1" start
  shift
  start=$(date +%s)
  log "building $label"
  "$@"
  log "built $label in $(($(date +%s) - start)) s"
}

k8s_ok() {
  if [[ $1 == kubectl ]]; then have kubectl "Client Version: $K8S_VERSION" version --client; else have "$1" "Kubernetes $K8S_VERSION" --version; fi
}

# Without these stamps /version reports v0.0.0-master and clients (kubectl, Helm, kwok) misread the server.
k8s_ldflags() {
  local ldflags="-s -w"
  ldflags+=" -X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
  ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$K8S_MINOR"
  ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
  ldflags+=" -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
  ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
  ldflags+=" -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$K8S_MINOR"
  echo "$ldflags"
}

build_k8s() {
  local missing=() b
  for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    current "$b" k8s_ok k8s || missing+=("k8s.io/kubernetes/cmd/$b")
  done
  if ((${#missing[@]} == 0)); then
    log "kube-apiserver, kube-controller-manager, kube-scheduler, kubectl $K8S_VERSION: up to date"
    for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do publish "$b" k8s; done
    return
  fi
  need_go "${missing[*]##*/}"
  (cd "$HERE/k8s" && timed "${missing[*]##*/} $K8S_VERSION" "${GO_BUILD[@]}" -ldflags "$(k8s_ldflags)" -o "$BIN_DIR/" "${missing[@]}")
  for b in "${missing[@]##*/}"; do
    k8s_ok "$b" || die "$BIN_DIR/$b does not report $K8S_VERSION after the build"
    origin "$b" built
    publish "$b" k8s
  done
}

# kube-proxy: only the real node needs it (test/cluster/real-node.sh build; NODE=real make cluster-up), so
# `all` (make cluster-bins, CI) does not build it. Same module (pinned in k8s/tools.go), same version stamps.
build_kube_proxy() {
  if current kube-proxy k8s_ok k8s; then
    log "kube-proxy $K8S_VERSION: up to date"
    publish kube-proxy k8s
    return
  fi
  need_go kube-proxy
  (cd "$HERE/k8s" && timed "kube-proxy $K8S_VERSION" "${GO_BUILD[@]}" -ldflags "$(k8s_ldflags)" \
    -o "$BIN_DIR/kube-proxy" k8s.io/kubernetes/cmd/kube-proxy)
  k8s_ok kube-proxy || die "$BIN_DIR/kube-proxy does not report $K8S_VERSION after the build"
  origin kube-proxy built
  publish kube-proxy k8s
}

etcd_ok() { have etcd "etcd Version: ${ETCD_VERSION#v}" --version; }
build_etcd() {
  if current etcd etcd_ok etcd; then
    log "etcd $ETCD_VERSION: up to date"
    publish etcd etcd
    return
  fi
  # The version is a compiled-in constant of go.etcd.io/etcd/api/v3/version; no stamping needed.
  need_go etcd
  (cd "$HERE/etcd" && timed "etcd $ETCD_VERSION" "${GO_BUILD[@]}" -ldflags "-s -w" -o "$BIN_DIR/etcd" go.etcd.io/etcd/server/v3)
  origin etcd built
  etcd_ok || die "$BIN_DIR/etcd does not report $ETCD_VERSION after the build"
  publish etcd etcd
}

kwok_ok() { have kwok "${KWOK_VERSION#v}" --version; }
build_kwok() {
  if current kwok kwok_ok kwok; then
    log "kwok $KWOK_VERSION: up to date"
    publish kwok kwok
    return
  fi
  need_go kwok
  (cd "$HERE/kwok" && timed "kwok $KWOK_VERSION" "${GO_BUILD[@]}" \
    -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${K8S_VERSION#v}" \
    -o "$BIN_DIR/kwok" sigs.k8s.io/kwok/cmd/kwok)
  origin kwok built
  kwok_ok || die "$BIN_DIR/kwok does not report $KWOK_VERSION after the build"
  publish kwok kwok
}

# Helm must report its release and assume the pinned Kubernetes minor when rendering without a cluster.
helm_ok() {
  have helm "Version:\"$HELM_VERSION\"" version \
    && [[ "$("${HAVE_PATH:-$BIN_DIR/helm}" template x "$HERE/helm/capabilities-chart" 2>/dev/null)" == *"kube=v1.$K8S_MINOR.0"* ]]
}
build_helm() {
  if current helm helm_ok helm; then
    log "helm $HELM_VERSION: up to date"
    publish helm helm
    return
  fi
  # As helm's own Makefile does: stamp the release version, and make `helm template`/lint assume the
  # Kubernetes minor this repository tests against instead of helm's built-in v1.20.
  local ldflags="-s -w"
  ldflags+=" -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  ldflags+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$K8S_MINOR"
  ldflags+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$K8S_MINOR"
  need_go helm
  (cd "$HERE/helm" && timed "helm $HELM_VERSION" "${GO_BUILD[@]}" -ldflags "$ldflags" -o "$BIN_DIR/helm" helm.sh/helm/v3/cmd/helm)
  origin helm built
  helm_ok || die "$BIN_DIR/helm does not report $HELM_VERSION with Kubernetes v1.$K8S_MINOR capabilities after the build"
  publish helm helm
}

# promtool (`make test-alerts`: promtool test rules) and the Prometheus server (the scrape tests), one build: they
# share nearly every package. Stamped as Prometheus' own Makefile does, so --version names the release.
# Built from a copy of the pinned module (verified by `go mod download`) whose plugins/plugins.go is replaced by
# prometheus/plugins.go.in: only the file and HTTP service discoveries, so the cloud SDKs (Azure, AWS, GCE, ...) are
# not compiled. Rule evaluation, `promtool test rules` and scraping are the release's code unchanged.
prometheus_ok() { have "$1" "version $PROMETHEUS_VERSION " --version; }
build_prometheus() {
  local missing=() b
  for b in promtool prometheus; do
    current "$b" prometheus_ok prometheus || missing+=("github.com/prometheus/prometheus/cmd/$b")
  done
  if ((${#missing[@]} == 0)); then
    log "promtool, prometheus $PROMETHEUS_VERSION: up to date"
    for b in promtool prometheus; do publish "$b" prometheus; done
    return
  fi
  local ldflags="-s -w -X github.com/prometheus/common/version.Version=$PROMETHEUS_VERSION"
  ldflags+=" -X github.com/prometheus/common/version.Branch=release -X github.com/prometheus/common/version.Revision=$PROMETHEUS_MODULE_VERSION"
  need_go "${missing[*]##*/}"
  local source work
  source="$(cd "$HERE/prometheus" && go mod download -json "github.com/prometheus/prometheus@$PROMETHEUS_MODULE_VERSION" | awk -F'"' '$2 == "Dir" { print $4 }')"
  [[ -d $source ]] || die "cannot download github.com/prometheus/prometheus@$PROMETHEUS_MODULE_VERSION"
  work="$ROOT/.cache/prometheus-build"
  rm -rf "$work" && mkdir -p "$work"
  cp -R "$source" "$work/prometheus" && chmod -R u+w "$work/prometheus"
  cp "$HERE/prometheus/plugins.go.in" "$work/prometheus/plugins/plugins.go"
  cp "$HERE/prometheus/go.mod" "$work/build.mod" && cp "$HERE/prometheus/go.sum" "$work/build.sum"
  echo "replace github.com/prometheus/prometheus => $work/prometheus" >>"$work/build.mod"
  (cd "$HERE/prometheus" && timed "${missing[*]##*/} $PROMETHEUS_VERSION" "${GO_BUILD[@]}" -modfile "$work/build.mod" -ldflags "$ldflags" -o "$BIN_DIR/" "${missing[@]}")
  rm -rf "$work"
  for b in "${missing[@]##*/}"; do
    prometheus_ok "$b" || die "$BIN_DIR/$b does not report $PROMETHEUS_VERSION after the build"
    origin "$b" built
    publish "$b" prometheus
  done
}

# Test tools. Their key is a checksum of the module's files only (not of the Go version: a tool built by another Go
# behaves the same), so a binary built once stays usable on a machine without Go.
TOOLS_DIR="$ROOT/test/tools"
TOOLS=(kstatus argocd-lua)
tool_key() { # <tool>
  cat "$TOOLS_DIR/$1/go.mod" "$TOOLS_DIR/$1/go.sum" "$TOOLS_DIR/$1/"*.go | cksum | cut -d' ' -f1
}
tool_ok() { have "$1" "$(tool_key "$1")" --version; }
build_tool() { # <tool>
  local name="$1" key shared
  key="$(tool_key "$name")"
  shared="${SHARED_DIR:+$SHARED_DIR/tools/$name-$key/$name}"
  if tool_ok "$name"; then
    origin "$name" kept
  elif [[ -n $shared && -x $shared ]] && cp -f "$shared" "$BIN_DIR/$name.tmp" && mv -f "$BIN_DIR/$name.tmp" "$BIN_DIR/$name" && tool_ok "$name"; then
    log "$name: copied from $(dirname "$shared")"
    origin "$name" "copied from the shared cache"
  else
    need_go "$name"
    (cd "$TOOLS_DIR/$name" && timed "$name (test tool)" "${GO_BUILD[@]}" -ldflags "-s -w -X main.version=$key" -o "$BIN_DIR/$name" .)
    tool_ok "$name" || die "$BIN_DIR/$name does not report its module checksum $key after the build"
    origin "$name" built
  fi
  [[ -n $shared ]] || return 0
  if ! cmp -s "$BIN_DIR/$name" "$shared"; then
    { mkdir -p "$(dirname "$shared")" && cp -f "$BIN_DIR/$name" "$shared.tmp.$$" && mv -f "$shared.tmp.$$" "$shared"; } || rm -f "$shared.tmp.$$"
  fi
  local old # keep the two most recent keys per tool, as for the control plane
  # shellcheck disable=SC2012
  while IFS= read -r old; do rm -rf -- "$old"; done < <(ls -1dt -- "$SHARED_DIR/tools/$name-"* 2>/dev/null | tail -n +3)
}
build_tools() {
  local tool
  for tool in "${TOOLS[@]}"; do build_tool "$tool"; done
}

# version_of <binary>: the one line of its version output that names the version.
version_of() {
  local bin="$BIN_DIR/$1"
  case "$1" in
  kubectl) "$bin" version --client 2>/dev/null | head -n1 ;;
  helm) "$bin" version --short 2>/dev/null ;;
  etcd) "$bin" --version 2>/dev/null | head -n1 ;;
  *) "$bin" --version 2>/dev/null | head -n1 ;;
  esac
}

what=("$@")
((${#what[@]})) || what=(all)
for w in "${what[@]}"; do
  case "$w" in
  all) build_k8s && build_etcd && build_kwok && build_helm && build_tools ;;
  k8s) build_k8s ;;
  kube-proxy) build_kube_proxy ;;
  etcd) build_etcd ;;
  kwok) build_kwok ;;
  helm) build_helm ;;
  tools) build_tools ;;
  prometheus) build_prometheus ;;
  *) die "unknown component '$w' (all|k8s|kube-proxy|etcd|kwok|helm|tools|prometheus)" ;;
  esac
done
# Which binary each run uses, so `make test` says it (a control plane from the wrong binaries is hard to spot).
for b in kube-apiserver kube-controller-manager kube-scheduler kubectl kube-proxy etcd kwok helm "${TOOLS[@]}" promtool prometheus; do
  [[ -n ${ORIGIN[$b]:-} ]] || continue
  log "using $BIN_DIR/$b: $(version_of "$b") (${ORIGIN[$b]})"
done
