// Gateway callers with keys and rates: an API provider's customers of the HTTP, signed-data and OEV gateways. The
// keys come from a directory with one file per caller, named for the caller and holding its key: what a Kubernetes
// Secret mounted as a volume looks like (`spec.gateway.callers.secretRef`), and what a local run writes by hand. The
// directory is read again every few seconds, so a key rotated in the Secret (the kubelet swaps the volume's files)
// or a caller added or removed takes effect without a restart.
//
// A request names its key in `x-api-key` or `Authorization: Bearer`. Keys are compared as SHA-256 digests with
// timingSafeEqual: the time of a comparison says nothing about how much of a guess was right. A caller over its rate
// gets 429 with Retry-After; the API never sees the excess. Metrics and logs carry the caller's name, never its key.
import { createHash, timingSafeEqual } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { errorMessage } from '../common/errors.js';
import { type Rate, SlidingWindowLimiter } from '../common/rate-limit.js';
import { type Logger, registerSecret } from '../observability/index.js';

/** A caller's name: a Secret key (the file name), short and plain so that it can be a metric label. */
export const CALLER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
/** Shorter keys are refused: they can be guessed, and the log redactor would not keep them out of output. */
export const MIN_KEY_LENGTH = 16;
const MAX_KEY_LENGTH = 512;
/** More callers than this are refused past the first ones (read in name order): a label set that stays bounded. */
export const MAX_CALLERS = 1_000;
export const DEFAULT_RELOAD_MS = 5_000;

export type CallersOptions = {
  /** The directory of callers' keys (a mounted Secret: one file per caller). */
  dir: string;
  /** Rates of named callers. */
  rates?: Record<string, Rate>;
  /** The rate of every caller without its own; unlimited when absent. */
  defaultRate?: Rate;
  reloadMs?: number;
  logger: Logger;
  /** Monotonic milliseconds, for the rate windows. */
  now?: () => number;
};

export type CallerCheck =
  | { ok: true; caller: string }
  | { ok: false; status: 401; message: string }
  | { ok: false; status: 429; caller: string; retryAfterSeconds: number };

const digest = (key: string) => createHash('sha256').update(key, 'utf8').digest();

/** The key a request presents: `x-api-key`, else `Authorization: Bearer <key>`. */
export function presentedKey(req: IncomingMessage): string | undefined {
  const header = req.headers['x-api-key'];
  if (typeof header === 'string' && header) return header.trim();
  const authorization = req.headers.authorization;
  if (typeof authorization === 'string') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (match) return match[1];
  }
  return undefined;
}

type Caller = { name: string; digest: Buffer; limiter?: SlidingWindowLimiter };

export class GatewayCallers {
  #byDigest = new Map<string, Caller>();
  #timer: NodeJS.Timeout | undefined;
  /** What the directory looked like at the last read: the names and modification times of its files. */
  #signature = '';

  private constructor(private readonly options: CallersOptions) {}

  /** Reads the directory once (a missing or empty one is an error: a gateway with callers refuses everyone else). */
  static async load(options: CallersOptions): Promise<GatewayCallers> {
    const callers = new GatewayCallers(options);
    await callers.reload();
    if (callers.size === 0) throw new Error(`no caller key in ${options.dir}`);
    callers.#timer = setInterval(() => {
      void callers
        .reload()
        .catch((error: unknown) =>
          options.logger.warn(
            { err: errorMessage(error) },
            'reading the gateway callers failed; keeping the last ones',
          ),
        );
    }, options.reloadMs ?? DEFAULT_RELOAD_MS);
    callers.#timer.unref();
    return callers;
  }

  get size(): number {
    return this.#byDigest.size;
  }

  /** The callers' names, sorted. */
  names(): string[] {
    return [...this.#byDigest.values()].map((caller) => caller.name).sort();
  }

  close(): void {
    clearInterval(this.#timer);
  }

  /** Reads the directory again when a file changed; rate windows of callers that stay are kept. */
  async reload(): Promise<void> {
    const entries = (await readdir(this.options.dir, { withFileTypes: true }))
      // A Secret volume's own entries (..data, ..2026_11_29...) start with dots.
      .filter((entry) => !entry.name.startsWith('.'))
      .map((entry) => entry.name)
      .sort();
    const stats = await Promise.all(entries.map((name) => stat(join(this.options.dir, name)).catch(() => undefined)));
    const signature = entries
      .map((name, i) => `${name}:${stats[i]?.mtimeMs ?? '-'}:${stats[i]?.size ?? '-'}`)
      .join('|');
    if (signature === this.#signature) return;
    const previous = new Map([...this.#byDigest.values()].map((caller) => [caller.name, caller]));
    const next = new Map<string, Caller>();
    const refused: string[] = [];
    for (const [i, name] of entries.entries()) {
      const info = stats[i];
      if (!info?.isFile()) continue;
      if (!CALLER_NAME.test(name) || next.size >= MAX_CALLERS || info.size > MAX_KEY_LENGTH + 2) {
        refused.push(name.slice(0, 64));
        continue;
      }
      const key = (await readFile(join(this.options.dir, name), 'utf8')).trim();
      if (key.length < MIN_KEY_LENGTH || key.length > MAX_KEY_LENGTH || /\s/.test(key)) {
        refused.push(name);
        continue;
      }
      registerSecret(key);
      const rate = this.options.rates?.[name] ?? this.options.defaultRate;
      const kept = previous.get(name);
      const limiter =
        kept?.limiter && rate && kept.limiter.rate.calls === rate.calls && kept.limiter.rate.windowMs === rate.windowMs
          ? kept.limiter
          : rate
            ? new SlidingWindowLimiter(rate, this.options.now)
            : undefined;
      const caller: Caller = { name, digest: digest(key), ...(limiter ? { limiter } : {}) };
      next.set(caller.digest.toString('hex'), caller);
    }
    this.#byDigest = next;
    this.#signature = signature;
    if (refused.length)
      this.options.logger.warn(
        { callers: refused, minKeyLength: MIN_KEY_LENGTH, maxCallers: MAX_CALLERS },
        'gateway callers left out: a name that is not [A-Za-z0-9._-] (at most 63), a key shorter than the minimum, ' +
          'with white space inside, or past the most callers',
      );
    this.options.logger.info({ callers: this.names() }, 'gateway callers loaded');
  }

  /** Who is calling, and whether their rate admits one more call now. */
  check(req: IncomingMessage): CallerCheck {
    const key = presentedKey(req);
    if (!key || key.length > MAX_KEY_LENGTH) return { ok: false, status: 401, message: 'Missing or invalid API key' };
    const presented = digest(key);
    const caller = this.#byDigest.get(presented.toString('hex'));
    if (!caller || !timingSafeEqual(caller.digest, presented))
      return { ok: false, status: 401, message: 'Missing or invalid API key' };
    const acquired = caller.limiter?.tryAcquire() ?? { ok: true };
    if (!acquired.ok)
      return {
        ok: false,
        status: 429,
        caller: caller.name,
        retryAfterSeconds: Math.max(1, Math.ceil(acquired.retryAfterMs / 1000)),
      };
    return { ok: true, caller: caller.name };
  }
}
