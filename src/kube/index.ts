// The public face of the Kubernetes layer: with api.ts (the client alone, for processes that run no controller),
// the only files of src/kube/ that code outside it imports (scripts/check-layers.ts holds everyone to them), as
// @kubernetes/client-node's src/index.ts is that package's only entry. Behind it: the REST transport (rest.ts), the
// typed client (client.ts), informers and their cache, the work queue, the controller loop, leader election, Events
// and the manager that runs them; docs/operator-runtime.md describes each. Everything api.ts exports is exported
// here too; what is exported by neither is internal and may change with the runtime.

export * from './api.js';
export { InformerCache } from './cache.js';
export { projectToFieldManager } from './fields.js';
export {
  createManager,
  type Readiness,
  RuntimeManager,
  type RuntimeManagerOptions,
  type RuntimeTuning,
} from './manager.js';
export * from './types.js';
