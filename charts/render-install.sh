#!/usr/bin/env bash
# Renders the chart with its default values into one manifest for `kubectl apply -f`.
set -euo pipefail
helm=$1 chart=$2 namespace=$3
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
"$helm" template oracle-node-operator "$chart" --namespace "$namespace" --include-crds
