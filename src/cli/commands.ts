// The table of subcommands: a one-line summary for `oracle-node --help` (and shell completion, summaries.ts), and
// the module, loaded lazily so `oracle-node validate` does not pay for the Kubernetes client or the gateway.
import type { Subcommand } from './subcommand.js';
import { type CommandName, SUMMARIES } from './summaries.js';

export type CommandEntry = { summary: string; load: () => Promise<Subcommand> };

export const subcommands: Record<string, CommandEntry> = {
  status: {
    summary: SUMMARIES.status,
    load: async () => (await import('./status-command.js')).statusCommand,
  },
  logs: {
    summary: SUMMARIES.logs,
    load: async () => (await import('./logs-command.js')).logsCommand,
  },
  cycle: {
    summary: SUMMARIES.cycle,
    load: async () => (await import('./cycle-command.js')).cycleCommand,
  },
  request: {
    summary: SUMMARIES.request,
    load: async () => (await import('./request-command.js')).requestCommand,
  },
  usage: {
    summary: SUMMARIES.usage,
    load: async () => (await import('./usage-command.js')).usageCommand,
  },
  validate: {
    summary: SUMMARIES.validate,
    load: async () => (await import('./validate-command.js')).validateCommand,
  },
  manifest: {
    summary: SUMMARIES.manifest,
    load: async () => (await import('./manifest-command.js')).manifestCommand,
  },
  derive: {
    summary: SUMMARIES.derive,
    load: async () => (await import('./derive-command.js')).deriveCommand,
  },
  schema: {
    summary: SUMMARIES.schema,
    load: async () => (await import('./schema-command.js')).schemaCommand,
  },
  operator: {
    summary: SUMMARIES.operator,
    load: async () => (await import('./operator.js')).default,
  },
  coordinator: {
    summary: SUMMARIES.coordinator,
    load: async () => (await import('./coordinator.js')).command,
  },
  worker: {
    summary: SUMMARIES.worker,
    load: async () => (await import('./worker.js')).command,
  },
  start: {
    summary: SUMMARIES.start,
    load: async () => (await import('./start.js')).command,
  },
  gateway: {
    summary: SUMMARIES.gateway,
    load: async () => (await import('./gateway.js')).gatewayCommand,
  },
  feed: {
    summary: SUMMARIES.feed,
    load: async () => (await import('./feed.js')).feedCommand,
  },
  completion: {
    summary: SUMMARIES.completion,
    load: async () => (await import('./completion.js')).completionCommand,
  },
} satisfies Record<CommandName, CommandEntry>;
