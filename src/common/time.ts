/** RFC 3339 in whole seconds, as the Kubernetes API writes times (metav1.Time), from a Date, a string or ms. */
export function wholeSecondsIso(value: Date | string | number): string | undefined {
  const date = value instanceof Date ? value : new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
