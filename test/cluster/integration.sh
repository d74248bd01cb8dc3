#!/usr/bin/env bash
# Runs the integration tier's mocha against the cluster KUBECONFIG points at.
#   test/cluster/integration.sh MOCHA SPEC
# The whole tier (the default spec) runs as two mocha processes side by side, because both halves mostly wait on the
# control plane (kwok's timers, CronJobs on whole minutes, the garbage collector's 30 s rediscovery, backoffs):
# - the kube runtime's fault suites (test/integration/kube/{apiserver-restart,faults,scale,leader,informer}): a
#   private apiserver stopped and restarted, a faulty proxy, 500 objects, leader failovers; and the garbage
#   collector's suite, which waits for its 30 s rediscovery of a new CRD. They use only CRDs of their own in their
#   own namespaces, never the OracleNode CRD or a webhook configuration;
# - everything else, which shares the cluster-wide OracleNode CRD and webhook configurations, one file after another.
# A spec of your own (INTEGRATION_SPEC=...) or INTEGRATION_SERIAL=1 runs one mocha. The exit status is the worse of
# the two; the side process' output follows the rest's.
# INTEGRATION_BUILD, when set, is a command that builds what only the rest needs (helm, promtool and Prometheus, the
# test tools): it runs while the side process already tests, so on a fresh machine those compiles overlap the
# waiting instead of coming before it. A failed build fails the run.
set -uo pipefail

mocha=$1
spec=$2
readonly DEFAULT_SPEC='test/integration/**/*.test.ts'
readonly FAULT_SUITES=(
  test/integration/kube/apiserver-restart.test.ts
  test/integration/kube/faults.test.ts
  test/integration/kube/scale.test.ts
  test/integration/kube/leader.test.ts
  test/integration/kube/informer.test.ts
  test/integration/cluster/gc.test.ts
)

build=${INTEGRATION_BUILD:-}

if [ "$spec" != "$DEFAULT_SPEC" ] || [ -n "${INTEGRATION_SERIAL:-}" ]; then
  if [ -n "$build" ]; then bash -c "$build" || exit $?; fi
  exec "$mocha" --timeout 120000 "$spec"
fi

log=$(mktemp "${TMPDIR:-/tmp}/oracle-node-integration-side.XXXXXX")
trap 'rm -f "$log"' EXIT
"$mocha" --timeout 120000 "${FAULT_SUITES[@]}" >"$log" 2>&1 &
faults_pid=$!
# Ctrl-C or a stop of make stops both halves.
trap 'kill "$faults_pid" 2>/dev/null; exit 130' INT TERM

if [ -n "$build" ]; then
  built=0
  bash -c "$build" || built=$?
  if [ "$built" -ne 0 ]; then
    # The side process runs its after hooks (a private control plane to stop) before the run ends.
    wait "$faults_pid"
    echo "== building what the rest needs failed ($built); the side process' report:"
    cat "$log"
    exit "$built"
  fi
fi

ignores=()
for suite in "${FAULT_SUITES[@]}"; do ignores+=(--ignore "$suite"); done
rest=0
"$mocha" --timeout 120000 "${ignores[@]}" "$spec" || rest=$?
faults=0
wait "$faults_pid" || faults=$?
echo "== the fault suites and the garbage collector's (run beside the rest): ${FAULT_SUITES[*]}"
cat "$log"
[ "$rest" -ne 0 ] && exit "$rest"
exit "$faults"
