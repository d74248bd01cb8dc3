// Reading JSON that came from outside (a ConfigMap a pod may write, a stored file): parse without throwing, and the
// one check most readers start with.

/** A plain JSON object: not null, not an array. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A whole number JSON can carry exactly, zero or more: a count, a block, a time in ms. */
export function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** The value of JSON text, or undefined when it is not JSON (JSON itself has no undefined). */
export function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
