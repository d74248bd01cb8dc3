// The table of subcommands; each entry loads its module lazily so `oracle-node validate` does not pay for the
// Kubernetes client or the gateway.
import type { Subcommand } from './subcommand.js';

export const subcommands: Record<string, () => Promise<Subcommand>> = {
  validate: async () => (await import('./validate-command.js')).validateCommand,
  derive: async () => (await import('./derive-command.js')).deriveCommand,
  schema: async () => (await import('./schema-command.js')).schemaCommand,
  operator: async () => (await import('./operator.js')).default,
  coordinator: async () => (await import('./coordinator.js')).command,
  worker: async () => (await import('./worker.js')).command,
  start: async () => (await import('./start.js')).command,
  gateway: async () => (await import('./gateway.js')).gatewayCommand,
};
