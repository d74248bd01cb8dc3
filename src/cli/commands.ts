// The table of subcommands: a one-line summary for `oracle-node --help` (and shell completion), and the module,
// loaded lazily so `oracle-node validate` does not pay for the Kubernetes client or the gateway.
import type { Subcommand } from './subcommand.js';

export type CommandEntry = { summary: string; load: () => Promise<Subcommand> };

export const subcommands: Record<string, CommandEntry> = {
  status: {
    summary: 'Show what an OracleNode is doing: conditions, gateways, last cycles, providers, wallets, failures',
    load: async () => (await import('./status-command.js')).statusCommand,
  },
  logs: {
    summary: 'Print the logs of the latest coordinator and worker pods of an OracleNode',
    load: async () => (await import('./logs-command.js')).logsCommand,
  },
  cycle: {
    summary: 'Run one coordinator cycle of an OracleNode now (a Job from its CronJob)',
    load: async () => (await import('./cycle-command.js')).cycleCommand,
  },
  request: {
    summary: 'Where is my request: its timeline from the chain and what the node recorded',
    load: async () => (await import('./request-command.js')).requestCommand,
  },
  usage: {
    summary: 'Usage to bill from: requests, fulfilments, failures and gas paid per sponsor, requester and endpoint',
    load: async () => (await import('./usage-command.js')).usageCommand,
  },
  validate: {
    summary: 'Validate config.json with secrets.env',
    load: async () => (await import('./validate-command.js')).validateCommand,
  },
  manifest: {
    summary: 'Print the Secret and the OracleNode of an existing config.json + secrets.env, for kubectl apply -f -',
    load: async () => (await import('./manifest-command.js')).manifestCommand,
  },
  derive: {
    summary: 'Derive endpoint ids, template ids, the node address, xpub and sponsor wallets',
    load: async () => (await import('./derive-command.js')).deriveCommand,
  },
  schema: {
    summary: 'Print the JSON Schema of config.json (or --ois)',
    load: async () => (await import('./schema-command.js')).schemaCommand,
  },
  operator: {
    summary: 'Run the OracleNode operator (controller manager)',
    load: async () => (await import('./operator.js')).default,
  },
  coordinator: {
    summary: 'Run one request-response cycle (and the heartbeat) and exit',
    load: async () => (await import('./coordinator.js')).command,
  },
  worker: {
    summary: 'Run one shard of a cycle (one sponsor wallet)',
    load: async () => (await import('./worker.js')).command,
  },
  start: {
    summary: 'Run the node locally: gateway server and the cycle every minute',
    load: async () => (await import('./start.js')).command,
  },
  gateway: {
    summary: 'Serve the HTTP, signed-data and OEV gateways',
    load: async () => (await import('./gateway.js')).gatewayCommand,
  },
  feed: {
    summary: 'Run an Airnode feed (@api3/airnode-feed config.json): fetch, sign, push to Signed APIs',
    load: async () => (await import('./feed.js')).feedCommand,
  },
  completion: {
    summary: 'Print a shell completion script: oracle-node completion bash|zsh',
    load: async () => (await import('./completion.js')).completionCommand,
  },
};
