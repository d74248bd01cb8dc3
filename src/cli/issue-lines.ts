// How every command prints a validation's findings (validate, manifest, feed, manifest --feed): one format, so the
// same mistake reads the same whichever command found it. Its own module: `feed` prints them without loading the
// node's config model that validate-command.ts imports.
import type { Issue } from '../config/secrets.js';

export const issueLine = (kind: string, issue: Issue) => `  ${kind} ${issue.path || '(root)'}: ${issue.message}\n`;

/** The report of an invalid file: a summary line, then each error with its path. */
export function invalidText(file: string, errors: readonly Issue[]): string {
  let text = `${file} is not valid: ${errors.length} error(s)\n`;
  for (const issue of errors) text += issueLine('error  ', issue);
  return text;
}
