// Its own module, importing only the redactor (not the observability index, which would load pino and
// prom-client): `validate`, and a startup snapshot of it, need this without the subcommand table of main.ts.
import { redact } from '../observability/redaction.js';

/**
 * Every text a subcommand writes to stdout or stderr (summaries, usage errors, messages) goes through the
 * secret redactor, like the log lines: a secret registered by the command never leaves the process in clear.
 */
export function redactStandardStreams(): void {
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream) as (chunk: unknown, ...rest: unknown[]) => boolean;
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      if (typeof chunk === 'string') return write(redact(chunk), ...rest);
      if (chunk instanceof Uint8Array) return write(redact(Buffer.from(chunk).toString('utf8')), ...rest);
      return write(chunk, ...rest);
    }) as typeof stream.write;
  }
}
