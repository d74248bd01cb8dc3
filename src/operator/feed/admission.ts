// What the admission webhook decides for an AirnodeFeed create or update: the feed's own validator (injected: only
// the CLI may import src/feed) over spec.config, with each `${NAME}` reference standing in for a value it never
// reads, so that only what the Secret's values cannot settle is refused, each error at its exact path with its rule.
import { type Issue, interpolateSecrets } from '../../config/index.js';
import type { AdmissionDecision, AdmissionOperation } from '../webhook/review.js';
import type { AirnodeFeed } from './api.js';
import type { FeedConfigValidator } from './controller.js';

export type FeedAdmission = {
  operation: AdmissionOperation;
  object?: Partial<AirnodeFeed>;
  oldObject?: Partial<AirnodeFeed>;
};

/** Never a valid value of any rule that checks one (not a mnemonic, not a URL): errors about it are filtered. */
const STAND_IN = 'secret-reference';

/** The config's `${NAME}` references: the names and the paths that hold them. */
function references(config: unknown): Map<string, string[]> {
  try {
    return interpolateSecrets(config, {}).missing;
  } catch {
    return new Map();
  }
}

const under = (path: string, prefixes: string[]) =>
  prefixes.some((prefix) => path === prefix || path.startsWith(`${prefix}.`) || path.startsWith(`${prefix}[`));

/** Every error of spec.config but those about a value a `${NAME}` reference stands for. */
export async function feedConfigIssues(config: unknown, validate: FeedConfigValidator): Promise<Issue[]> {
  const found = references(config);
  const standIns = Object.fromEntries([...found.keys()].map((name) => [name, STAND_IN]));
  const paths = [...found.values()].flat();
  const result = await validate(config, standIns);
  return result.ok ? [] : result.errors.filter((issue) => !under(issue.path, paths));
}

export async function reviewAirnodeFeed(
  request: FeedAdmission,
  validate: FeedConfigValidator,
): Promise<AdmissionDecision> {
  if (request.operation !== 'CREATE' && request.operation !== 'UPDATE')
    return { allowed: true, errors: [], warnings: [] };
  const feed = request.object;
  // Status and metadata-only updates (the operator's own status writes) are allowed at once.
  if (
    request.operation === 'UPDATE' &&
    request.oldObject &&
    JSON.stringify(request.oldObject.spec ?? null) === JSON.stringify(feed?.spec ?? null)
  )
    return { allowed: true, errors: [], warnings: [] };
  const config = feed?.spec?.config ?? {};
  const errors = (await feedConfigIssues(config, validate)).map((issue) => ({
    path: issue.path ? `spec.config.${issue.path}` : 'spec.config',
    message: issue.message,
  }));
  if (!feed?.spec?.secretRef?.name && references(config).size > 0)
    errors.push({
      path: 'spec.secretRef',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the text names the config's placeholder syntax
      message: 'the config has ${NAME} references but no Secret is named to resolve them',
    });
  return { allowed: errors.length === 0, errors, warnings: [] };
}

export function feedDenialMessage(errors: Issue[]): string {
  const lines = errors.map((issue) => `${issue.path}: ${issue.message}`);
  return `AirnodeFeed config is invalid (${errors.length} error${errors.length === 1 ? '' : 's'}): ${lines.join('; ')}`;
}
