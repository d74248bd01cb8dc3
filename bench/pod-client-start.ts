// A coordinator pod's start on its Kubernetes side, as one whole process to time from outside (start-up time and
// peak RSS): load the node's Kubernetes adapters from a build (`make build`), build them from the pod's environment
// as `oracle-node coordinator` does (the client from the kubeconfig loader, the Job executor, the ConfigMap stores)
// and make the first API call of a cycle (the response cache's ConfigMap read), then exit.
//   KUBECONFIG=... POD_NAMESPACE=ns node bench/pod-client-start.ts [DIST_DIR]
// Pairing two builds compares two clients, e.g. with GNU time: /usr/bin/time -v node bench/pod-client-start.ts dist
// (docs/benchmarks.md, "Kubernetes client at start-up").
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const dist = resolve(process.argv[2] ?? 'dist');
const { coordinatorKubernetes } = await import(pathToFileURL(join(dist, 'node/kubernetes/index.js')).href);
const workerTemplate = {
  namePrefix: 'bench-worker',
  labels: {},
  ownerReferences: [],
  activeDeadlineSeconds: 60,
  ttlSecondsAfterFinished: 60,
  template: { spec: { containers: [{ name: 'worker' }] } },
};
const pod = await coordinatorKubernetes({
  ORACLE_NODE_CACHE_CONFIGMAP: 'bench-cache',
  ORACLE_NODE_CYCLE_CONFIGMAP: 'bench-cycle',
  ...process.env,
  ORACLE_NODE_WORKER_TEMPLATE: JSON.stringify(workerTemplate),
});
if (!pod) throw new Error('not a coordinator environment (POD_NAMESPACE set?)');
await pod.cache.get(`0x${'ab'.repeat(32)}`);
// Only the start is measured: an idle keep-alive socket must not decide when the process ends.
process.exit(0);
