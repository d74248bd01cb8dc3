// The controller runtime: informers, work queue, rate-limited client, leader election, events and the manager.
export * from './backoff.js';
export * from './cache.js';
export * from './client.js';
export * from './clock.js';
export * from './events.js';
export * from './informer.js';
export * from './leader.js';
export * from './manager.js';
export * from './metrics.js';
export * from './paths.js';
export * from './queue.js';
export * from './rest.js';
export type * from './types.js';
