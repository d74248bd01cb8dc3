#!/usr/bin/env bash
# Renders the chart into one manifest for `kubectl apply -f` (the CRD is one of the chart's templates).
#   charts/render-install.sh <helm> <chart> <namespace> [helm template flags, e.g. --set image.digest=sha256:...]
set -euo pipefail
helm=$1 chart=$2 namespace=$3
shift 3
cat <<YAML
# oracle-node-operator install manifest, rendered from $chart with default values (make manifests).
# kubectl apply --server-side -f manifests/install.yaml
---
apiVersion: v1
kind: Namespace
metadata:
  name: $namespace
  labels:
    pod-security.kubernetes.io/enforce: restricted
YAML
"$helm" template oracle-node-operator "$chart" --namespace "$namespace" "$@"
