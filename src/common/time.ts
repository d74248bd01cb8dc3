/**
 * Milliseconds on a clock that never steps (Node's timers run on it too): every duration, deadline and expiry is
 * measured on it, since the wall clock steps with an NTP correction or a resumed VM. Only differences mean anything.
 */
export function monotonicNow(): number {
  return performance.now();
}

/** RFC 3339 in whole seconds, as the Kubernetes API writes times (metav1.Time), from a Date, a string or ms. */
export function wholeSecondsIso(value: Date | string | number): string | undefined {
  const date = value instanceof Date ? value : new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * RFC 3339 with six fractional digits, the only form the API server accepts for a MicroTime (a Lease's acquireTime
 * and renewTime): JavaScript's milliseconds padded with three zeros, as client-node's V1MicroTime writes it.
 */
export function microTimeIso(value: Date | string | number): string {
  return new Date(value).toISOString().replace(/Z$/, '000Z');
}
