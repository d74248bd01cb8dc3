// Validation of an Airnode feed's config.json with its secrets.env: ${NAME} interpolation (the node's), then the
// feed schema. Paths and the schema's own messages are the reference's; zod's own issues (an unknown key, a missing
// field, a wrong type) and a missing secret are worded as the node's `validate` words them, so one CLI speaks one
// language (docs/feeds.md, "Validation").
import { toIssues } from '../config/issues.js';
import { type Issue, interpolateSecrets, missingSecretIssue } from '../config/secrets.js';
import { type FeedConfig, feedConfigSchema } from './config.js';

export type FeedValidation = { ok: true; config: FeedConfig } | { ok: false; errors: Issue[] };

/** Interpolates the secrets into the parsed config.json and validates it. Never throws. */
export async function validateFeedConfig(input: unknown, secrets: Record<string, string>): Promise<FeedValidation> {
  let interpolated: ReturnType<typeof interpolateSecrets>;
  try {
    interpolated = interpolateSecrets(input, secrets);
  } catch {
    return { ok: false, errors: [{ path: '', message: 'The config is nested too deeply' }] };
  }
  const errors: Issue[] = [...interpolated.invalid];
  for (const [name, paths] of interpolated.missing) errors.push(missingSecretIssue(name, paths));
  if (errors.length > 0) return { ok: false, errors };
  const result = await feedConfigSchema.safeParseAsync(interpolated.value);
  if (!result.success) return { ok: false, errors: toIssues(result.error.issues, interpolated.value) };
  return { ok: true, config: result.data };
}
