// The registry of subcommands; each entry loads its module lazily so `oracle-node validate`
// does not pay for the Kubernetes client or the gateway.
import { registerSubcommand } from './main.js';

registerSubcommand('validate', async () => (await import('./validate-command.js')).validateCommand);
registerSubcommand('derive', async () => (await import('./derive-command.js')).deriveCommand);
registerSubcommand('schema', async () => (await import('./schema-command.js')).schemaCommand);
registerSubcommand('coordinator', async () => (await import('./coordinator.js')).command);
registerSubcommand('worker', async () => (await import('./worker.js')).command);
registerSubcommand('start', async () => (await import('./start.js')).command);
registerSubcommand('gateway', async () => (await import('./gateway.js')).gatewayCommand);
registerSubcommand('operator', async () => (await import('./operator.js')).default);
