// Validation of an Airnode feed's config.json with its secrets.env: ${NAME} interpolation (the node's), then the
// feed schema, with zod 3's wording for zod's own messages (the reference's schema is zod 3), so the same bad config
// gets the same path and message from both.
import type { z } from 'zod';
import { formatPath } from '../config/paths.js';
import { type Issue, interpolateSecrets } from '../config/secrets.js';
import { type FeedConfig, feedConfigSchema } from './config.js';

export type FeedValidation = { ok: true; config: FeedConfig } | { ok: false; errors: Issue[] };

function receivedType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isNaN(value) ? 'nan' : 'number';
  return typeof value;
}

/** zod 3's English for the issues zod raises itself (the schemas' own messages are kept). */
export const zod3Messages: z.core.$ZodErrorMap = (issue) => {
  switch (issue.code) {
    case 'invalid_type': {
      if (issue.input === undefined) return 'Required';
      const expected = issue.expected === 'record' ? 'object' : issue.expected === 'int' ? 'integer' : issue.expected;
      if (issue.expected === 'int' && typeof issue.input === 'number') return 'Expected integer, received float';
      return `Expected ${expected}, received ${receivedType(issue.input)}`;
    }
    case 'unrecognized_keys':
      return `Unrecognized key(s) in object: ${issue.keys.map((key) => `'${key}'`).join(', ')}`;
    case 'invalid_format':
      return 'Invalid';
    default:
      return undefined;
  }
};

/** zod issues as the reference's {path, message}: one per unknown key, a record key's own reason. */
export function feedIssues(issues: readonly z.core.$ZodIssue[]): Issue[] {
  const out: Issue[] = [];
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push({ path: formatPath([...issue.path, key]), message: issue.message });
    } else if (issue.code === 'invalid_key') {
      for (const inner of issue.issues) out.push({ path: formatPath(issue.path), message: inner.message });
    } else {
      out.push({ path: formatPath(issue.path), message: issue.message });
    }
  }
  return out;
}

/** Interpolates the secrets into the parsed config.json and validates it. Never throws. */
export async function validateFeedConfig(input: unknown, secrets: Record<string, string>): Promise<FeedValidation> {
  let interpolated: ReturnType<typeof interpolateSecrets>;
  try {
    interpolated = interpolateSecrets(input, secrets);
  } catch {
    return { ok: false, errors: [{ path: '', message: 'The config is nested too deeply' }] };
  }
  const errors: Issue[] = [...interpolated.invalid];
  for (const [name, paths] of interpolated.missing) {
    for (const path of paths) errors.push({ path, message: `Secret ${name} is not defined in secrets.env` });
  }
  if (errors.length > 0) return { ok: false, errors };
  const result = await feedConfigSchema.safeParseAsync(interpolated.value, { error: zod3Messages });
  if (!result.success) return { ok: false, errors: feedIssues(result.error.issues) };
  return { ok: true, config: result.data };
}
