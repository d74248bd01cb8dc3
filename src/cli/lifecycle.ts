// What every long-running subcommand sets up the same way: the stop signals, and the message for a server that
// cannot listen.
import { errorMessage } from '../common/errors.js';

/**
 * Calls `stop` on each of `signals` (SIGTERM and SIGINT by default) until the returned function is called. With
 * `once`, the first signal removes them all, so a second one ends the process as Node's default does.
 */
export function onStopSignals(
  stop: (signal: NodeJS.Signals) => void,
  options: { signals?: readonly NodeJS.Signals[]; once?: boolean } = {},
): () => void {
  const signals = options.signals ?? ['SIGTERM', 'SIGINT'];
  const unsubscribe = () => {
    for (const signal of signals) process.off(signal, handler);
  };
  const handler = (signal: NodeJS.Signals) => {
    if (options.once) unsubscribe();
    stop(signal);
  };
  for (const signal of signals) process.on(signal, handler);
  return unsubscribe;
}

/** Why a server could not start (a line for stderr): a port in use is named as such. */
export function cannotListen(server: string, port: string | number | undefined, error: unknown): string {
  return (error as NodeJS.ErrnoException).code === 'EADDRINUSE'
    ? `Cannot start the ${server}: port ${port ?? 'configured'} is already in use\n`
    : `Cannot start the ${server}: ${errorMessage(error)}\n`;
}
