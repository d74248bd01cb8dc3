// Each subcommand's one-line summary, in the order `oracle-node --help` lists them: what the table of subcommands
// (commands.ts) and shell completion (completion.ts) both read, so neither imports the other.
export const SUMMARIES = {
  status: 'Show what an OracleNode is doing: conditions, gateways, last cycles, providers, wallets, failures',
  logs: 'Print the logs of the latest coordinator and worker pods of an OracleNode',
  cycle: 'Run one coordinator cycle of an OracleNode now (a Job from its CronJob)',
  request: 'Where is my request: its timeline from the chain and what the node recorded',
  usage: 'Usage to bill from: requests, fulfilments, failures and gas paid per sponsor, requester and endpoint',
  validate: 'Validate config.json with secrets.env',
  manifest: 'Print the Secret and the OracleNode of an existing config.json + secrets.env, for kubectl apply -f -',
  derive: 'Derive endpoint ids, template ids, the node address, xpub and sponsor wallets',
  schema: 'Print the JSON Schema of config.json (or --ois)',
  operator: 'Run the OracleNode operator (controller manager)',
  coordinator: 'Run one request-response cycle (and the heartbeat) and exit',
  worker: 'Run one shard of a cycle (one sponsor wallet)',
  start: 'Run the node locally: gateway server and the cycle every minute',
  gateway: 'Serve the HTTP, signed-data and OEV gateways',
  feed: 'Run an Airnode feed (@api3/airnode-feed config.json): fetch, sign, push to Signed APIs',
  completion: 'Print a shell completion script: oracle-node completion bash|zsh',
} as const;

export type CommandName = keyof typeof SUMMARIES;
