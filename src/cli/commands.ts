// The registry of subcommands; each entry loads its module lazily so `oracle-node validate`
// does not pay for the Kubernetes client or the gateway.
import { registerSubcommand } from './main.js';

registerSubcommand('validate', async () => (await import('./validate-command.js')).validateCommand);
registerSubcommand('derive', async () => (await import('./derive-command.js')).deriveCommand);
registerSubcommand('schema', async () => (await import('./schema-command.js')).schemaCommand);
