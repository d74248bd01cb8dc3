// A reader that stops early (`oracle-node schema | head -c 10`) closes the pipe: the rest of the output has nowhere
// to go, which is no failure of the command. Without a listener, the EPIPE of the next write is an unhandled 'error'
// event: a stack trace and exit code 1. Like `cat` or `git`, the command ends quietly instead.

/** Ends the process quietly, with the exit code set so far, when stdout or stderr is closed by its reader. */
export function endQuietlyOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
    });
  }
}
