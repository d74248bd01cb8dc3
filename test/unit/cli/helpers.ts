// Runs a subcommand with captured output.
import type { CliIo } from '../../../src/cli/args.js';

export type Captured = { code: number; stdout: string; stderr: string };

export async function capture(
  run: (argv: string[], io: CliIo) => Promise<number>,
  argv: string[],
  options: { stdin?: string; env?: Record<string, string> } = {},
): Promise<Captured> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    readStdin: async () => options.stdin,
    env: options.env ?? {},
  };
  const code = await run(argv, io);
  return { code, stdout, stderr };
}
