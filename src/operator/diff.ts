// Whether a desired child must be applied: only when the cached object differs on the fields the operator sets.
// A subset comparison catches drift (someone edited a field we own); the applied-hash annotation catches a field
// we stopped setting (a subset check cannot see a removal). Anything else is left alone, so a resync with nothing
// changed makes no write.
import { type Child, canonicalJson, hashOf } from './builders/common.js';
import { quantityValue } from './builders/resources.js';
import { ANNOTATIONS } from './resource.js';

/** Adds the applied-hash annotation (the hash of everything else in the desired object). */
export function withAppliedHash<T extends Child>(desired: T): T {
  const annotations = { ...(desired.metadata.annotations ?? {}) };
  delete annotations[ANNOTATIONS.appliedHash];
  const hash = hashOf({ ...desired, metadata: { ...desired.metadata, annotations } });
  return {
    ...desired,
    metadata: { ...desired.metadata, annotations: { ...annotations, [ANNOTATIONS.appliedHash]: hash } },
  };
}

/** The apiserver canonicalises quantities ("1000m" comes back as "1"): compare their values. */
function sameQuantity(a: unknown, b: unknown): boolean {
  const value = (q: unknown) =>
    (typeof q === 'number' || typeof q === 'string' ? quantityValue(q) : undefined) ?? Number.NaN;
  const x = value(a);
  const y = value(b);
  return !Number.isNaN(x) && Math.abs(x - y) <= Math.abs(x) * 1e-9;
}

const isEmpty = (value: unknown) =>
  (Array.isArray(value) && value.length === 0) ||
  (value !== null && typeof value === 'object' && Object.keys(value).length === 0);

/** Every value in `desired` is present and equal in `actual` (objects recursively; arrays position by position). */
export function isSubset(desired: unknown, actual: unknown): boolean {
  if (desired === actual) return true;
  if (actual === undefined || actual === null) return isEmpty(desired);
  if (Array.isArray(desired)) {
    if (!Array.isArray(actual) || actual.length !== desired.length) return false;
    return desired.every((item, i) => isSubset(item, actual[i]));
  }
  if (desired !== null && typeof desired === 'object') {
    if (typeof actual !== 'object' || Array.isArray(actual)) return false;
    return Object.entries(desired).every(([key, value]) =>
      value === undefined ? true : isSubset(value, (actual as Record<string, unknown>)[key]),
    );
  }
  if ((typeof desired === 'string' || typeof desired === 'number') && desired !== actual)
    return sameQuantity(desired, actual);
  return false;
}

/**
 * True when `desired` (with its applied-hash annotation) must be applied over `cached`. A child cached as metadata
 * only (a Secret: its values never sit in the cache) is compared by its metadata, whose applied hash covers the rest.
 */
export function needsApply(
  desired: Child,
  cached: Child | undefined,
  options: { metadataOnly?: boolean } = {},
): boolean {
  if (!cached) return true;
  const wantedHash = desired.metadata.annotations?.[ANNOTATIONS.appliedHash];
  if (wantedHash && cached.metadata?.annotations?.[ANNOTATIONS.appliedHash] !== wantedHash) return true;
  const { metadata, ...rest } = desired;
  const { metadata: cachedMetadata, ...cachedRest } = cached as Child;
  if (!isSubset(metadata.labels, cachedMetadata?.labels)) return true;
  if (!isSubset(metadata.annotations, cachedMetadata?.annotations)) return true;
  if (!isSubset(metadata.ownerReferences, cachedMetadata?.ownerReferences)) return true;
  return options.metadataOnly ? false : !isSubset(rest, cachedRest);
}

export { canonicalJson };
