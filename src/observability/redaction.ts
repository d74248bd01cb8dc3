// Secret scrubbing shared by every logger of the process: values registered here (mnemonics, API keys,
// provider URLs with tokens, heartbeat keys) are replaced by "[REDACTED]" in each serialized log line, in
// every HTTP answer body and in any text passed through redact(), whatever field or message they ended up in.
//
// Plain string search, never a regular expression built from the values: a long value (V8 refuses patterns
// over 32,767 characters) or an odd one must not make redaction fail, and nothing derived from the values is
// ever part of an error. If redaction itself fails, the text is withheld whole (fail closed).

export const REDACTED = '[REDACTED]';

/** What redact() answers when it cannot scrub a text: nothing of the original text. */
export const REDACTION_FAILED = '[REDACTED: text withheld, redaction failed]';

// Shorter values would mangle unrelated text (a secret "1" would erase every digit), so they are not scrubbed.
export const MIN_SECRET_LENGTH = 4;

/**
 * The one rule of what can be scrubbed from text, for the log redactor and for validation's `${NAME}` messages:
 * a value too short to be scrubbed stays in clear (validation warns about it by name).
 */
export function isRedactable(value: string): boolean {
  return value.length >= MIN_SECRET_LENGTH;
}

const secrets = new Set<string>();
/** The registered forms, longest first, so that a secret containing another one is replaced whole. */
let ordered: string[] = [];

/** The forms in which a value often reaches text: raw, inside a JSON string, inside a URL. */
function formsOf(value: string): string[] {
  const forms = [value, JSON.stringify(value).slice(1, -1)];
  try {
    forms.push(encodeURIComponent(value));
  } catch {
    // A lone surrogate has no URI form; the raw and JSON forms are still registered.
  }
  return forms;
}

/**
 * Registers a secret value. Its JSON-escaped and URI-encoded forms are registered too, because a secret
 * often reaches a log line inside a JSON string or a URL.
 */
export function registerSecret(value: unknown): void {
  if (typeof value !== 'string' || !isRedactable(value)) return;
  let changed = false;
  for (const form of formsOf(value)) {
    if (isRedactable(form) && !secrets.has(form)) {
      secrets.add(form);
      changed = true;
    }
  }
  if (changed) ordered = [...secrets].sort((a, b) => b.length - a.length);
}

/** Registers every value of a secrets map (e.g. the parsed secrets.env). */
export function registerSecrets(values: Record<string, string | undefined> | Iterable<string>): void {
  const list = Symbol.iterator in values ? [...(values as Iterable<string>)] : Object.values(values);
  for (const value of list) registerSecret(value);
}

/** Replaces every registered secret in text; withholds the whole text if that fails. */
export function redact(text: string): string {
  if (ordered.length === 0) return text;
  try {
    let result = text;
    for (const secret of ordered) {
      if (result.includes(secret)) result = result.split(secret).join(REDACTED);
    }
    return result;
  } catch {
    return REDACTION_FAILED;
  }
}

/** True when text contains a registered secret (e.g. to decide whether an answer must be rewritten). */
export function containsSecret(text: string): boolean {
  for (const secret of ordered) if (text.includes(secret)) return true;
  return false;
}

/** For tests: forget all registered secrets. */
export function clearSecrets(): void {
  secrets.clear();
  ordered = [];
}

export function registeredSecretCount(): number {
  return secrets.size;
}
