#!/usr/bin/env bash
# Builds the tests' OTLP/HTTP trace receiver (main.go: the OpenTelemetry Collector's pdata decoder behind an HTTP
# handler, modules pinned in go.mod/go.sum) into .cache/tools/otlp-receiver, once: it is rebuilt only when its
# sources change (a hash of them is kept beside the binary). Prints the binary's path.
# Cold (empty Go caches) it downloads ~15 modules and compiles them: see docs/development.md for the measured time.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
BIN="${OTLP_RECEIVER_BIN:-$ROOT/.cache/tools/otlp-receiver}"
HASH="$(cat "$HERE/go.mod" "$HERE/go.sum" "$HERE/main.go" | sha256sum | cut -c1-16)"

if [[ -x $BIN && -f $BIN.hash && "$(cat "$BIN.hash")" == "$HASH" ]]; then
  echo "$BIN"
  exit 0
fi
command -v go >/dev/null 2>&1 || { echo "otlp-receiver: go not found (Go >= 1.24 builds the tests' OTLP receiver)" >&2; exit 3; }
# As actionlint.sh: keep Go's caches under .cache/ when there is no HOME.
if [[ -z ${GOCACHE:-} && "$(go env GOCACHE 2>/dev/null)" != /* ]]; then export GOCACHE="$ROOT/.cache/go/build"; fi
if [[ -z ${GOMODCACHE:-} && "$(go env GOMODCACHE 2>/dev/null)" != /* ]]; then export GOMODCACHE="$ROOT/.cache/go/mod"; fi
mkdir -p "$(dirname "$BIN")"
echo "otlp-receiver: building from $HERE into $BIN" >&2
(cd "$HERE" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false nice -n 10 go build -trimpath -ldflags "-s -w" -o "$BIN" .)
echo "$HASH" >"$BIN.hash"
echo "$BIN"
