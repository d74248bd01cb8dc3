// The registry of subcommands; each entry loads its module lazily so `oracle-node validate`
// does not pay for the Kubernetes client or the gateway.
import { registerSubcommand } from './main.js';

void registerSubcommand;
