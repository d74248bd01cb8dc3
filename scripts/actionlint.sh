#!/usr/bin/env bash
# Checks .github/workflows/ offline with actionlint, built once from its Go module pinned in scripts/actionlint/
# into .cache/tools/ (rebuilt when the pinned version changes). Without Go it skips with a message, except in CI,
# where a skipped check would pass unnoticed.
#
# Usage: scripts/actionlint.sh [actionlint args...]   (default: every workflow under .github/workflows/)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
MODULE="$HERE/actionlint"
BIN="${ACTIONLINT_BIN:-$ROOT/.cache/tools/actionlint}"
VERSION="$(awk '$1 == "require" && $2 == "github.com/rhysd/actionlint" { print $3 }' "$MODULE/go.mod")"
[[ -n $VERSION ]] || { echo "actionlint: cannot read its pinned version from $MODULE/go.mod" >&2; exit 1; }

if ! [[ -x $BIN && "$("$BIN" -version 2>/dev/null | head -n1)" == "$VERSION" ]]; then
  if ! command -v go >/dev/null 2>&1; then
    if [[ -n ${CI:-} ]]; then
      echo "actionlint: go not found; CI needs Go to check the workflows" >&2
      exit 1
    fi
    echo "actionlint: go not found: skipping the workflow check (install Go >= 1.24 to run it)"
    exit 0
  fi
  # As build.sh does for the control plane: keep Go's caches under .cache/ when there is no HOME.
  if [[ -z ${GOCACHE:-} && "$(go env GOCACHE 2>/dev/null)" != /* ]]; then export GOCACHE="$ROOT/.cache/go/build"; fi
  if [[ -z ${GOMODCACHE:-} && "$(go env GOMODCACHE 2>/dev/null)" != /* ]]; then export GOMODCACHE="$ROOT/.cache/go/mod"; fi
  echo "actionlint: building $VERSION from its Go module into $(dirname "$BIN")"
  mkdir -p "$(dirname "$BIN")"
  (cd "$MODULE" && CGO_ENABLED=0 nice -n 10 go build -trimpath \
    -ldflags "-s -w -X github.com/rhysd/actionlint.version=$VERSION" -o "$BIN" github.com/rhysd/actionlint/cmd/actionlint)
fi

cd "$ROOT"
if (($# == 0)); then
  "$BIN" -no-color
  echo "actionlint $VERSION: .github/workflows/ is clean"
else
  "$BIN" -no-color "$@"
fi
