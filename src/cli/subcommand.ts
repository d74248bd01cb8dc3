// What every subcommand module exports: its entry point, which returns the exit code (0 success, 1 a finding
// such as an invalid config, 2 usage or I/O error). Its one-line summary lives in the table (commands.ts), so
// `oracle-node --help` lists every command without loading any.
export type Subcommand = {
  run: (argv: string[]) => Promise<number>;
};
