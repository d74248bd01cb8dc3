// zod's issues as the {path, message} every validator of this project reports (the node's config, an OIS, an Airnode
// feed's config): one wording, whichever command prints them. Its own module: the feed validates without loading
// the node's config model.
import type { z } from 'zod';
import { formatPath } from './paths.js';
import type { Issue } from './secrets.js';

/** zod issues -> {path, message}, one per unknown key, with plainer wording for missing fields. */
export function toIssues(issues: readonly z.core.$ZodIssue[], input?: unknown): Issue[] {
  const out: Issue[] = [];
  for (const issue of issues) {
    const path = issue.path;
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys)
        out.push({ path: formatPath([...path, key]), message: `Unknown key "${key}" is not allowed here` });
      continue;
    }
    let message = issue.message;
    if (issue.code === 'invalid_key') {
      // zod says only "Invalid key in record"; the nested issue says why.
      const reasons = issue.issues.map((inner) => inner.message).join('; ');
      message = `Invalid key ${JSON.stringify(String(path[path.length - 1]))}: ${reasons}`;
    }
    if (issue.code === 'invalid_type' && / received undefined$/.test(message)) {
      message = `Required field is missing (expected ${issue.expected})`;
    } else if (input !== undefined && path.length > 0 && isMissing(input, path)) {
      message = `Required field is missing (${message})`;
    }
    out.push({ path: formatPath(path), message });
  }
  return out;
}

/** True when the parent at `path` exists but has no such key (a missing field, not a wrong value). */
function isMissing(root: unknown, path: readonly PropertyKey[]): boolean {
  let node: unknown = root;
  for (const segment of path.slice(0, -1)) {
    if (node === null || typeof node !== 'object') return false;
    node = (node as Record<PropertyKey, unknown>)[segment];
  }
  return node !== null && typeof node === 'object' && !Object.hasOwn(node, path[path.length - 1]!);
}
