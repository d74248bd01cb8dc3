#!/usr/bin/env bash
# Stages the base root filesystem of the engine image into <dest>: the glibc set that the given
# dynamically linked binaries need (as `ldd` reports it on this Debian/glibc host), their packages'
# copyright files, a merged-/usr layout, /etc/passwd and /etc/group with the non-root user 65532
# ("nonroot", as in distroless), /etc/nsswitch.conf, /tmp and /home/nonroot.
#
#   image/rootfs.sh <dest> <binary>...
#
# ROOTFS_SYSROOT=<dir> builds the base of another architecture (arm64 on an amd64 host): the binaries' needed
# libraries are then read from their ELF headers (readelf: DT_NEEDED and the program interpreter) and taken from
# that directory, where image/build.sh unpacked the architecture's Debian packages (libc6, libgcc-s1, libstdc++6).
#
# Used by image/build.sh (offline `make image`) and by the Dockerfile's rootfs stage, so both images
# have the same base. Ownership and modes are set on disk only when running as root; image/build.sh
# sets them in the layer tar itself, so a non-root build gives the same layer.
set -euo pipefail

dest="${1:?usage: rootfs.sh <dest> <binary>...}"
shift
(($#)) || { echo "rootfs.sh: name at least one binary" >&2; exit 2; }
SYSROOT="${ROOTFS_SYSROOT:-}"
if [[ -n $SYSROOT ]]; then
  command -v readelf >/dev/null || { echo "rootfs.sh: readelf not found (Debian package binutils)" >&2; exit 1; }
else
  command -v ldd >/dev/null || { echo "rootfs.sh: ldd not found (Debian package libc-bin)" >&2; exit 1; }
fi

mkdir -p "$dest"/{etc,tmp,home/nonroot,usr/bin,usr/sbin,usr/lib,usr/lib64,usr/share/doc}
# Debian 12's merged /usr: the top-level directories are symlinks into /usr.
for d in bin sbin lib lib64; do
  [[ -L $dest/$d ]] || ln -s "usr/$d" "$dest/$d"
done

# to_usr </lib/...|/usr/lib/...>: the path inside the merged-/usr image.
to_usr() {
  case "$1" in
  /usr/*) printf '%s' "$1" ;;
  /*) printf '/usr%s' "$1" ;;
  esac
}

# resolve <path>: the file behind a path of the image's filesystem; in a sysroot, absolute symlink targets are
# the sysroot's, not this host's.
resolve() {
  [[ -n $SYSROOT ]] || { readlink -f "$1"; return; }
  local path="$SYSROOT$1" target hops=0
  while [[ -L $path ]] && ((hops++ < 16)); do
    target="$(readlink "$path")"
    if [[ $target == /* ]]; then path="$SYSROOT$target"; else path="$(dirname "$path")/$target"; fi
  done
  printf '%s' "$path"
}

declare -A seen=()
pkgs=()
copy_lib() { # <path as ldd printed it>
  local src="$1" real target pkg
  [[ -n ${seen[$src]:-} ]] && return 0
  seen[$src]=1
  real="$(resolve "$src")"
  target="$dest$(to_usr "$src")"
  mkdir -p "$(dirname "$target")"
  # The file under its soname, dereferenced: the image needs no library symlink chains.
  cp -f --preserve=mode "$real" "$target"
  chmod 0755 "$target"
  if [[ -z $SYSROOT ]] && command -v dpkg >/dev/null 2>&1; then
    pkg="$(dpkg -S "$real" 2>/dev/null || dpkg -S "$src" 2>/dev/null || true)"
    pkg="${pkg%%:*}"
    [[ -n $pkg ]] && pkgs+=("$pkg")
  fi
}

# sysroot_lib <soname>: the library's path inside the image as the sysroot's multiarch directories hold it.
sysroot_lib() {
  local dir
  for dir in "$SYSROOT"/lib/*-linux-gnu "$SYSROOT"/usr/lib/*-linux-gnu "$SYSROOT/lib" "$SYSROOT/usr/lib"; do
    [[ -e $dir/$1 ]] && { printf '%s/%s' "${dir#"$SYSROOT"}" "$1"; return 0; }
  done
  echo "rootfs.sh: $1 is in none of the sysroot's library folders ($SYSROOT)" >&2
  return 1
}

# cross_deps <file in the sysroot or on the host>: copies its interpreter and needed libraries, recursively.
cross_deps() {
  local file="$1" interp lib path
  interp="$(readelf -l "$file" 2>/dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')"
  if [[ -n $interp && -z ${seen[$interp]:-} ]]; then
    [[ -e $SYSROOT$interp ]] || { echo "rootfs.sh: interpreter $interp of $file is not in $SYSROOT" >&2; exit 1; }
    copy_lib "$interp"
  fi
  while read -r lib; do
    path="$(sysroot_lib "$lib")" || exit 1
    [[ -n ${seen[$path]:-} ]] && continue
    copy_lib "$path"
    cross_deps "$SYSROOT$path"
  done < <(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
}

if [[ -n $SYSROOT ]]; then
  for bin in "$@"; do
    [[ -f $bin ]] || { echo "rootfs.sh: $bin is missing" >&2; exit 1; }
    cross_deps "$bin"
  done
  # The unpacked packages' copyright files (every package unpacked there is one the base may carry).
  while read -r doc; do
    mkdir -p "$dest/$(dirname "$doc")"
    cp -f "$SYSROOT/$doc" "$dest/$doc"
  done < <(cd "$SYSROOT" && find usr/share/doc -name copyright -type f 2>/dev/null | LC_ALL=C sort)
  set -- # the host path below (ldd) is for native binaries only
fi

for bin in "$@"; do
  # Executables, and shared objects such as native addons (which need no execute bit).
  [[ -f $bin ]] || { echo "rootfs.sh: $bin is missing" >&2; exit 1; }
  # Lines look like `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)` or `/lib64/ld-linux-x86-64.so.2 (0x...)`.
  out="$(ldd "$bin" 2>&1)" || { [[ $out == *"not a dynamic executable"* ]] && continue; echo "rootfs.sh: ldd $bin: $out" >&2; exit 1; }
  if grep -q 'not found' <<<"$out"; then
    echo "rootfs.sh: $bin needs libraries this host lacks:" >&2
    grep 'not found' <<<"$out" >&2
    exit 1
  fi
  while read -r lib; do
    copy_lib "$lib"
  done < <(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$out")
done

if ((${#pkgs[@]})); then
  while read -r pkg; do
    [[ -f /usr/share/doc/$pkg/copyright ]] || continue
    mkdir -p "$dest/usr/share/doc/$pkg"
    cp -f "/usr/share/doc/$pkg/copyright" "$dest/usr/share/doc/$pkg/copyright"
  done < <(printf '%s\n' "${pkgs[@]}" | LC_ALL=C sort -u)
fi

cat >"$dest/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/usr/sbin/nologin
EOF
cat >"$dest/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
nonroot:x:65532:
EOF
cat >"$dest/etc/nsswitch.conf" <<'EOF'
passwd: files
group: files
hosts: files dns
EOF
# The kubelet and container engines bind-mount /etc/hosts, /etc/resolv.conf and /etc/hostname over these.
printf "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" >"$dest/etc/hosts"
: >"$dest/etc/resolv.conf"
chmod 0644 "$dest"/etc/{passwd,group,nsswitch.conf,hosts,resolv.conf}
chmod 0755 "$dest/home"
if ((EUID == 0)); then
  chmod 1777 "$dest/tmp"
  chown 65532:65532 "$dest/home/nonroot"
fi
