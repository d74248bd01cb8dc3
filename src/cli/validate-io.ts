// Where the validate, derive and schema subcommands read and write; tests pass their own to capture output.
export type CliIo = {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Reads all of standard input; undefined when stdin is a terminal. */
  readStdin: () => Promise<string | undefined>;
  env: Record<string, string | undefined>;
};

export const processIo: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  readStdin: async () => {
    if (process.stdin.isTTY) return undefined;
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  },
  env: process.env,
};

/** parseArgs throws TypeError with a readable message on unknown or malformed options. */
export function usageError(io: CliIo, message: string, usage: string): number {
  io.stderr(`${message}\n\n${usage}\n`);
  return 2;
}
