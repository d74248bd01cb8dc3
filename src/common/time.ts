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
