// Logging, metrics and health endpoints shared by the gateway, the chain node and the operator.
export * from './http.js';
export * from './logger.js';
export * from './metrics.js';
export * from './redaction.js';
