// The public face of the Kubernetes layer: the only file of src/kube/ that code outside it imports
// (scripts/check-layers.ts holds everyone to it), as @kubernetes/client-node's src/index.ts is that package's only
// entry. Behind it: the REST transport (rest.ts), the typed client (client.ts), informers and their cache, the work
// queue, the controller loop, leader election, Events and the manager that runs them; docs/operator-runtime.md
// describes each. What is not exported here is internal and may change with the runtime.

export { InformerCache } from './cache.js';
export { RuntimeClient } from './client.js';
export type { Clock } from './clock.js';
export { systemClock } from './clock.js';
export { projectToFieldManager } from './fields.js';
export { type ClientConfig, KubeConfigError, type LoadOptions, loadClientConfig } from './kubeconfig.js';
export {
  createManager,
  type Readiness,
  RuntimeManager,
  type RuntimeManagerOptions,
  type RuntimeTuning,
} from './manager.js';
export { apiVersionOf, collectionPath, keyOf, keyString, objectPath } from './paths.js';
export { ApiError, type RequestOptions, RestClient, type RestClientOptions } from './rest.js';
export * from './types.js';
