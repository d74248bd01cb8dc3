#!/usr/bin/env bash
# Runs the integration tier's mocha against the cluster KUBECONFIG points at.
#   test/cluster/integration.sh MOCHA SPEC
# The whole tier (the default spec) runs as two mocha processes side by side, because both halves mostly wait on the
# control plane (kwok's timers, CronJobs on whole minutes, the garbage collector's 30 s rediscovery, backoffs):
# - the side process: the kube runtime's fault suites (test/integration/kube/{apiserver-restart,faults,scale,leader,
#   informer}): a private apiserver stopped and restarted, a faulty proxy, 500 objects, leader failovers; and the
#   garbage collector's suite, which waits for its 30 s rediscovery of a new CRD. They use only CRDs of their own in
#   their own namespaces, never the OracleNode CRD or a webhook configuration;
# - everything else, which shares the cluster-wide OracleNode CRD and webhook configurations, one file after another.
# A spec of your own (INTEGRATION_SPEC=...) or INTEGRATION_SERIAL=1 runs one mocha. The exit status is the worst of
# them; the side process' output follows the rest's.
#
# INTEGRATION_BUILD, when set, is a command that builds what only a few suites need (helm, promtool and Prometheus,
# the test tools: NEEDS_BUILD). It runs while the side process and the other suites already test, and those few
# suites run after it, so on a fresh machine the last compiles overlap the waiting instead of coming before it. A
# failed build fails the run.
set -uo pipefail

mocha=$1
spec=$2
readonly DEFAULT_SPEC='test/integration/**/*.test.ts'
readonly SIDE_SUITES=(
  test/integration/kube/apiserver-restart.test.ts
  test/integration/kube/faults.test.ts
  test/integration/kube/scale.test.ts
  test/integration/kube/leader.test.ts
  test/integration/kube/informer.test.ts
  test/integration/cluster/gc.test.ts
)
# helm (the chart's suites, the ServiceMonitor as rendered), Prometheus (the scrape), kstatus and argocd-lua (GitOps).
readonly NEEDS_BUILD=(
  'test/integration/helm/**/*.test.ts'
  test/integration/operator/metrics.test.ts
  test/integration/operator/gitops.test.ts
)
build=${INTEGRATION_BUILD:-}
run_mocha() { "$mocha" --timeout 120000 "$@"; }

if [ "$spec" != "$DEFAULT_SPEC" ] || [ -n "${INTEGRATION_SERIAL:-}" ]; then
  if [ -n "$build" ]; then bash -c "$build" || exit $?; fi
  exec "$mocha" --timeout 120000 "$spec"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/oracle-node-integration.XXXXXX")
trap 'rm -rf "$work"' EXIT
run_mocha "${SIDE_SUITES[@]}" >"$work/side.log" 2>&1 &
side_pid=$!
build_pid=
if [ -n "$build" ]; then
  bash -c "$build" >"$work/build.log" 2>&1 &
  build_pid=$!
fi
# Ctrl-C or a stop of make stops every part.
trap 'kill "$side_pid" $build_pid 2>/dev/null; exit 130' INT TERM

ignores=()
for suite in "${SIDE_SUITES[@]}"; do ignores+=(--ignore "$suite"); done
if [ -n "$build_pid" ]; then
  for suite in "${NEEDS_BUILD[@]}"; do ignores+=(--ignore "$suite"); done
fi
rest=0
run_mocha "${ignores[@]}" "$spec" || rest=$?
if [ -n "$build_pid" ]; then
  built=0
  wait "$build_pid" || built=$?
  cat "$work/build.log"
  if [ "$built" -ne 0 ]; then
    # The side process runs its after hooks (a private control plane to stop) before the run ends.
    wait "$side_pid"
    echo "== building what ${NEEDS_BUILD[*]} need failed ($built); the side process' report:"
    cat "$work/side.log"
    exit "$built"
  fi
  needs_build=0
  run_mocha "${NEEDS_BUILD[@]}" || needs_build=$?
  [ "$rest" -ne 0 ] || rest=$needs_build
fi
side=0
wait "$side_pid" || side=$?
echo "== the fault suites and the garbage collector's (run beside the rest): ${SIDE_SUITES[*]}"
cat "$work/side.log"
[ "$rest" -ne 0 ] && exit "$rest"
exit "$side"
