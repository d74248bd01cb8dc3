// A small JSON-RPC client: every call is bounded by a timeout and retried with a jittered back-off, and
// every answer is checked for shape, so a dead, slow or lying provider only ever produces an error here.
// Plain fetch (no ethers provider) keeps the number of RPC calls exact and free of hidden polling.

export type RpcOptions = {
  /** Per-attempt timeout. */
  timeoutMs?: number;
  /** Total attempts (1 = no retry). */
  attempts?: number;
  /** Back-off before a retry: uniformly random in [min, max]. */
  backoffMs?: { min: number; max: number };
};

export class RpcError extends Error {
  constructor(
    message: string,
    readonly code?: number,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

/** A transport-level problem (no answer, timeout, not JSON-RPC): worth trying another provider. */
export class RpcTransportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RpcTransportError';
  }
}

export type RpcTransport = (url: string, body: string, timeoutMs: number) => Promise<unknown>;

/**
 * A provider URL split into what fetch accepts: fetch refuses a URL with `user:password@`, which self-hosted
 * RPC nodes use, so the credentials travel as a Basic Authorization header instead.
 */
export function providerRequestTarget(url: string): { url: string; headers: Record<string, string> } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new RpcTransportError('provider URL is not a valid URL');
  }
  if (!parsed.username && !parsed.password) return { url, headers: {} };
  const user = decodeURIComponent(parsed.username);
  const password = decodeURIComponent(parsed.password);
  parsed.username = '';
  parsed.password = '';
  const token = Buffer.from(`${user}:${password}`, 'utf8').toString('base64');
  return { url: parsed.toString(), headers: { authorization: `Basic ${token}` } };
}

/** Why fetch failed, without the URL (fetch and undici put it in some messages; it may carry credentials). */
function transportReason(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } }).cause;
  if (error instanceof Error && error.name === 'TimeoutError') return 'timed out';
  if (cause && typeof cause.code === 'string') return cause.code;
  return error instanceof Error ? error.name : 'error';
}

const fetchTransport: RpcTransport = async (url, body, timeoutMs) => {
  const target = providerRequestTarget(url);
  let response: Response;
  try {
    response = await fetch(target.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...target.headers },
      body,
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    throw new RpcTransportError(`provider unreachable: ${transportReason(error)}`);
  }
  const text = await response.text().catch(() => '');
  try {
    return JSON.parse(text);
  } catch {
    throw new RpcTransportError(`provider returned non-JSON (HTTP ${response.status})`);
  }
};

const DEFAULTS: Required<RpcOptions> = { timeoutMs: 5_000, attempts: 2, backoffMs: { min: 200, max: 1_000 } };

/**
 * In-flight requests per provider URL, shared by every client of the process: fifty shards planning at
 * once must queue here rather than flood one provider (and then time out against it). The timeout of a
 * call starts when it leaves the queue.
 */
export const MAX_IN_FLIGHT_PER_PROVIDER = 32;

class Gate {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(readonly limit: number) {}
  async acquire(): Promise<() => void> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active++;
    return () => {
      this.active--;
      this.waiting.shift()?.();
    };
  }
}

const gates = new Map<string, Gate>();
function gateFor(url: string, limit: number): Gate {
  let gate = gates.get(url);
  if (!gate) {
    gate = new Gate(limit);
    gates.set(url, gate);
  }
  return gate;
}

export class RpcClient {
  private nextId = 1;
  /** Number of JSON-RPC requests sent, retries included (for the benchmark and tests). */
  calls = 0;

  private readonly gate: Gate;

  constructor(
    readonly url: string,
    private readonly defaults: RpcOptions = {},
    private readonly transport: RpcTransport = fetchTransport,
    maxInFlight = MAX_IN_FLIGHT_PER_PROVIDER,
  ) {
    this.gate = gateFor(url, maxInFlight);
  }

  async request<T = unknown>(method: string, params: unknown[], options: RpcOptions = {}): Promise<T> {
    const { timeoutMs, attempts, backoffMs } = { ...DEFAULTS, ...this.defaults, ...options };
    let lastError: unknown;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      try {
        return await this.once<T>(method, params, timeoutMs);
      } catch (error) {
        lastError = error;
        // A JSON-RPC error answer (revert, nonce too low, …) is deterministic: retrying will not help.
        if (error instanceof RpcError) throw error;
        if (attempt < attempts) {
          const wait = backoffMs.min + Math.random() * Math.max(0, backoffMs.max - backoffMs.min);
          await new Promise((resolve) => setTimeout(resolve, wait));
        }
      }
    }
    throw lastError;
  }

  private async once<T>(method: string, params: unknown[], timeoutMs: number): Promise<T> {
    const id = this.nextId++;
    this.calls++;
    const body = JSON.stringify({ jsonrpc: '2.0', id, method, params });
    const release = await this.gate.acquire();
    let answer: unknown;
    try {
      answer = await withTimeout(this.transport(this.url, body, timeoutMs), timeoutMs, method);
    } finally {
      release();
    }
    if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) {
      throw new RpcTransportError(`${method}: malformed JSON-RPC answer`);
    }
    const { result, error } = answer as {
      result?: unknown;
      error?: { code?: number; message?: string; data?: unknown };
    };
    if (error) throw new RpcError(`${method}: ${error.message ?? 'unknown error'}`, error.code, error.data);
    if (!('result' in answer)) throw new RpcTransportError(`${method}: JSON-RPC answer without result`);
    return result as T;
  }
}

export async function withTimeout<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RpcTransportError(`${what}: timed out after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// Answer validation: a lying provider must not crash the cycle with a TypeError somewhere deeper.
export function asQuantity(value: unknown, what: string): bigint {
  if (typeof value !== 'string' || !/^0x[0-9a-fA-F]{1,64}$/.test(value)) {
    throw new RpcTransportError(`${what}: not a hex quantity`);
  }
  return BigInt(value);
}

export function asData(value: unknown, what: string): string {
  if (typeof value !== 'string' || !/^0x([0-9a-fA-F]{2})*$/.test(value)) {
    throw new RpcTransportError(`${what}: not hex data`);
  }
  return value;
}

export function toQuantity(value: bigint | number): string {
  return `0x${BigInt(value).toString(16)}`;
}
