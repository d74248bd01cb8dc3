// The real `oracle-node` binary (src/cli/index.ts under tsx) as a child process of a test.
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { resolve } from 'node:path';

export const repoRoot = resolve(import.meta.dirname, '../..');

/** node's arguments that run the binary from the repository root; append the subcommand and its options. */
export const ORACLE_NODE_ARGS = ['--import', 'tsx', 'src/cli/index.ts'];

/** Spawns `oracle-node <args>` in the repository root; stdio are pipes unless the options say otherwise. */
export function spawnOracleNode(args: string[], options: SpawnOptions = {}): ChildProcess {
  return spawn(process.execPath, [...ORACLE_NODE_ARGS, ...args], { cwd: repoRoot, stdio: 'pipe', ...options });
}
