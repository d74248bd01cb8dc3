// A real OTLP/HTTP trace receiver for the tests (test/support/otlp-receiver/: the OpenTelemetry Collector's pdata
// decoder, built once from Go modules into .cache/tools). It refuses what is not valid OTLP, and stores each accepted
// export request as one JSON line; `spans()` reads them back.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './binary.js';

const run = promisify(execFile);

export type StoredAttribute = {
  key: string;
  value: { stringValue?: string; intValue?: string; boolValue?: boolean; doubleValue?: number };
};
export type StoredSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: StoredAttribute[];
  status?: { code?: number; message?: string };
  /** The resource's attributes (service.name, oracle_node.role), copied onto each span for the tests. */
  resource: Record<string, string>;
};
type ExportRequest = {
  resourceSpans?: {
    resource?: { attributes?: StoredAttribute[] };
    scopeSpans?: { spans?: Omit<StoredSpan, 'resource'>[] }[];
  }[];
};

export type OtlpReceiver = {
  /** The base URL for OTEL_EXPORTER_OTLP_ENDPOINT. */
  endpoint: string;
  file: string;
  spans(): StoredSpan[];
  /** How many export requests it answered 503 (`unavailable`). */
  refused(): number;
  stop(): Promise<void>;
};

/** Builds the receiver when needed (minutes on a cold Go cache) and returns its path; undefined without Go. */
export async function buildOtlpReceiver(): Promise<string | undefined> {
  try {
    const { stdout } = await run(join(repoRoot, 'test/support/otlp-receiver/build.sh'), [], { timeout: 900_000 });
    return stdout.trim().split('\n').at(-1);
  } catch (error) {
    if ((error as { code?: number }).code === 3) return undefined;
    throw error;
  }
}

const LISTEN_TIMEOUT_MS = 30_000;

/** A collector's answers to play: 401 without `requireHeader` ("Name: value"), 503 to the first `unavailable` exports. */
export type ReceiverOptions = { requireHeader?: string; unavailable?: number };

export async function startOtlpReceiver(binary: string, options: ReceiverOptions = {}): Promise<OtlpReceiver> {
  const file = join(mkdtempSync(join(tmpdir(), 'otlp-')), 'spans.jsonl');
  const args = ['-listen', '127.0.0.1:0', '-out', file];
  if (options.requireHeader !== undefined) args.push('-require-header', options.requireHeader);
  if (options.unavailable !== undefined) args.push('-unavailable', String(options.unavailable));
  const child: ChildProcess = spawn(binary, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // stderr is read as it comes (a full pipe would stall the receiver) and its end kept for the error below.
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000);
  });
  const address = await new Promise<string>((resolve, reject) => {
    let out = '';
    // Bounded, so that a receiver that never listens fails the suite's hook with its stderr instead of stalling it.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`otlp-receiver did not listen within ${LISTEN_TIMEOUT_MS} ms: ${stderr}`));
    }, LISTEN_TIMEOUT_MS);
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening on (\S+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`otlp-receiver exited with ${code}: ${stderr}`));
    });
  });
  const lines = (): (ExportRequest & { refused?: number })[] => {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return [];
    }
    return text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as ExportRequest & { refused?: number });
  };
  return {
    endpoint: `http://${address}`,
    file,
    refused: () => lines().filter((line) => line.refused !== undefined).length,
    spans() {
      return lines()
        .filter((line) => line.refused === undefined)
        .flatMap((request) => {
          return (request.resourceSpans ?? []).flatMap((resourceSpans) => {
            const resource = Object.fromEntries(
              (resourceSpans.resource?.attributes ?? []).map((a) => [a.key, String(a.value.stringValue)]),
            );
            return (resourceSpans.scopeSpans ?? []).flatMap((scope) =>
              (scope.spans ?? []).map((span) => ({ ...span, resource })),
            );
          });
        });
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** A span's attributes as a plain object (int values as numbers). */
export function attributesOf(span: StoredSpan): Record<string, string | number | boolean> {
  return Object.fromEntries(
    (span.attributes ?? []).map(({ key, value }) => [
      key,
      value.stringValue ??
        (value.intValue !== undefined ? Number(value.intValue) : (value.boolValue ?? value.doubleValue ?? '')),
    ]),
  );
}
