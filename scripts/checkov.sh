#!/usr/bin/env bash
# Scans what the project installs and what its operator creates with checkov's Kubernetes policies (scripts/checkov.ts,
# docs/security.md "Policy scanners"). checkov is installed once from PyPI into a virtual environment under
# .cache/tools/checkov, pinned with its dependencies by scripts/checkov/requirements.txt (installed again when that
# file changes). Without Python >= 3.11 and its venv module, or when PyPI cannot be reached, it skips with a message,
# except in CI, where a skipped scan would pass unnoticed.
#
# Usage: scripts/checkov.sh
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
REQUIREMENTS="$HERE/checkov/requirements.txt"
VENV="${CHECKOV_VENV:-$ROOT/.cache/tools/checkov}"
STAMP="$VENV/.requirements.cksum"
VERSION="$(awk -F'==' '$1 == "checkov" { print $2 }' "$REQUIREMENTS")"
[[ -n $VERSION ]] || { echo "checkov: cannot read its pinned version from $REQUIREMENTS" >&2; exit 1; }
WANT="$(cksum < "$REQUIREMENTS")"

unavailable() {
  if [[ -n ${CI:-} ]]; then
    echo "checkov: $1; CI needs it to scan the manifests" >&2
    exit 1
  fi
  echo "checkov: $1: skipping the policy scan (it needs Python >= 3.11 with its venv module, and PyPI once)"
  exit 0
}

if ! [[ -x $VENV/bin/checkov && -f $STAMP && "$(cat "$STAMP")" == "$WANT" ]]; then
  command -v python3 >/dev/null 2>&1 || unavailable "python3 not found"
  python3 -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null ||
    unavailable "python3 is older than 3.11 or lacks its venv module"
  echo "checkov: installing $VERSION from PyPI into $VENV"
  rm -rf "$VENV"
  if ! { python3 -m venv "$VENV" &&
    nice -n 10 "$VENV/bin/pip" install --quiet --disable-pip-version-check --require-virtualenv -r "$REQUIREMENTS"; }; then
    rm -rf "$VENV"
    unavailable "could not install it from PyPI"
  fi
  echo "$WANT" > "$STAMP"
fi

# The chart hardened is scanned too with the repository's helm (make cluster-bins; CI builds it before make lint).
HELM="${CLUSTER_BIN_DIR:-$ROOT/.cache/cluster/bin}/helm"
if ! [[ -x $HELM ]]; then
  [[ -z ${CI:-} ]] || { echo "checkov: $HELM not found; CI scans the hardened chart too (make cluster-bins)" >&2; exit 1; }
  HELM=
fi

cd "$ROOT"
exec node --import tsx scripts/checkov.ts "$VENV/bin/checkov" ${HELM:+"$HELM"}
