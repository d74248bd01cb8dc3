// What every subcommand module exports: a one-line summary for `oracle-node --help` and its entry point, which
// returns the exit code (0 success, 1 a finding such as an invalid config, 2 usage or I/O error).
export type Subcommand = {
  summary: string;
  run: (argv: string[]) => Promise<number>;
};
