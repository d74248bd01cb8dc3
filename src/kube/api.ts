// The API client alone, the second public face of src/kube: loading a kubeconfig, the REST transport, the typed
// client, the paths, the one API error type and the Lease elector (the coordinator's hand-over). What a process that
// only talks to the API server imports (the CLI's commands, the coordinator and worker pods), without the runtime
// behind index.ts: its metrics load prom-client (~70 ms and ~20 MiB at start-up), which those processes never use.
// index.ts re-exports all of it.

export { RuntimeClient } from './client.js';
export { type Clock, systemClock } from './clock.js';
export { ApiError, apiStatusOf, isConflict, isGone, isInvalid, isNotFound } from './errors.js';
export { BUILTIN_KINDS } from './kinds.js';
export {
  type ClientConfig,
  KubeConfigError,
  type LoadedClientConfig,
  type LoadOptions,
  loadClientConfig,
} from './kubeconfig.js';
export {
  LeaderElector,
  type Lease,
  type LeaseStore,
  RestLeaseStore,
} from './leader.js';
export { apiVersionOf, collectionPath, keyOf, keyString, objectPath } from './paths.js';
export { type RequestOptions, RestClient, type RestClientOptions } from './rest.js';
export type { KubeWriter, ObjectKey, ResourceKind } from './types.js';
