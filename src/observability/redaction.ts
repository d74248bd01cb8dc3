// Secret scrubbing shared by every logger of the process: values registered here (mnemonics, API keys,
// provider URLs with tokens, heartbeat keys) are replaced by "[REDACTED]" in each serialized log line and
// in any text passed through redact(), whatever field or message they ended up in.

export const REDACTED = '[REDACTED]';

// Shorter values would mangle unrelated text (a secret "1" would erase every digit), so they are not scrubbed.
export const MIN_SECRET_LENGTH = 4;

const secrets = new Set<string>();
let pattern: RegExp | null = null;

function escapeRegExp(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function rebuildPattern(): void {
  if (secrets.size === 0) {
    pattern = null;
    return;
  }
  // Longest first so that a secret containing another one is replaced whole.
  const alternatives = [...secrets].sort((a, b) => b.length - a.length).map(escapeRegExp);
  pattern = new RegExp(alternatives.join('|'), 'g');
}

/**
 * Registers a secret value. Its JSON-escaped and URI-encoded forms are registered too, because a secret
 * often reaches a log line inside a JSON string or a URL.
 */
export function registerSecret(value: unknown): void {
  if (typeof value !== 'string' || value.length < MIN_SECRET_LENGTH) return;
  const forms = new Set([value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value)]);
  let changed = false;
  for (const form of forms) {
    if (form.length >= MIN_SECRET_LENGTH && !secrets.has(form)) {
      secrets.add(form);
      changed = true;
    }
  }
  if (changed) rebuildPattern();
}

/** Registers every value of a secrets map (e.g. the parsed secrets.env). */
export function registerSecrets(values: Record<string, string | undefined> | Iterable<string>): void {
  const list = Symbol.iterator in values ? [...(values as Iterable<string>)] : Object.values(values);
  for (const value of list) registerSecret(value);
}

/** Replaces every registered secret in text. */
export function redact(text: string): string {
  if (!pattern) return text;
  pattern.lastIndex = 0;
  return text.replace(pattern, REDACTED);
}

/** For tests: forget all registered secrets. */
export function clearSecrets(): void {
  secrets.clear();
  pattern = null;
}

export function registeredSecretCount(): number {
  return secrets.size;
}
