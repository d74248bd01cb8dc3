// What the admission webhook decides for an OracleNode create or update: the config model's validation (the same
// as `oracle-node validate` and the ConfigValid condition), with `${NAME}` references checked for syntax only
// (secret values are never needed, nor read), the update guards below, and warnings for what is allowed but
// probably not meant. Pure: the Secret lookup is passed in.
import { type Issue, interpolateSecrets, validateConfig } from '../../config/index.js';
import { childNames } from '../builders/common.js';
import { nameClashes, specStage } from '../builders/names.js';
import { formatIssues, isMissingSecretIssue } from '../config.js';
import type { OracleNode } from '../resource.js';

export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

export type OracleNodeAdmission = {
  operation: AdmissionOperation;
  object?: Partial<OracleNode>;
  oldObject?: Partial<OracleNode>;
};

export type AdmissionDecision = { allowed: boolean; errors: Issue[]; warnings: string[] };

export type AdmissionLookups = {
  /** Whether a Secret exists (from the operator's metadata cache); undefined when it cannot tell. */
  secretExists?: (namespace: string, name: string) => boolean | undefined;
  /** The OracleNodes of a namespace (from the operator's cache); undefined when it cannot tell. */
  oracleNodes?: (namespace: string) => Partial<OracleNode>[] | undefined;
};

type RawConfig = Record<string, unknown> & { nodeSettings?: Record<string, unknown> };

const nodeSettingsOf = (config: unknown) =>
  ((config as RawConfig | undefined)?.nodeSettings ?? {}) as Record<string, unknown>;

/** The node wallet as written: the canonical key or its reference alias (a `${NAME}` reference, usually). */
const walletOf = (config: unknown) => {
  const settings = nodeSettingsOf(config);
  return settings.nodeWalletMnemonic ?? settings.airnodeWalletMnemonic;
};
const stageOf = (config: unknown) => nodeSettingsOf(config).stage;

/** Paths of the config (and everything under them) that hold a `${NAME}` reference. */
function referencePaths(config: unknown): string[] {
  try {
    return [...interpolateSecrets(config, {}).missing.values()].flat();
  } catch {
    return [];
  }
}

const under = (path: string, prefixes: string[]) =>
  prefixes.some((prefix) => path === prefix || path.startsWith(`${prefix}.`) || path.startsWith(`${prefix}[`));

/**
 * Every error of spec.config, as the ConfigValid condition words them, minus what only the Secret's values can
 * settle: an unresolved reference is not an error here, nor is a rule about the value it stands for.
 */
export function configIssues(config: unknown): { errors: Issue[]; warnings: Issue[] } {
  const result = validateConfig(config, {});
  const references = referencePaths(config);
  const errors = result.errors.filter((issue) => !isMissingSecretIssue(issue) && !under(issue.path, references));
  return { errors, warnings: result.warnings };
}

/**
 * Update guards, each for a field whose in-place change would break a running node:
 * - the node wallet (`nodeSettings.nodeWalletMnemonic`, as written: usually a `${NAME}` reference) changes only
 *   together with `nodeSettings.stage`. The wallet is the node's on-chain identity (node address, xpub, sponsor
 *   wallets); a new identity needs the blue/green rollout a new stage gives, or the running coordinator would
 *   switch identity in the middle of its requests.
 * - `spec.secretRef.name` changes only together with the stage when the wallet is a reference: the reference is
 *   resolved from that Secret, so another Secret is another wallet. (A value changed inside the same Secret cannot
 *   be seen here: the webhook never reads Secret values.)
 */
export function updateGuards(oldNode: Partial<OracleNode>, node: Partial<OracleNode>): Issue[] {
  const oldConfig = oldNode.spec?.config;
  const config = node.spec?.config;
  if (!oldConfig || !config) return [];
  const stageChanged = stageOf(oldConfig) !== stageOf(config);
  if (stageChanged) return [];
  const issues: Issue[] = [];
  const oldWallet = walletOf(oldConfig);
  const wallet = walletOf(config);
  if (oldWallet !== undefined && JSON.stringify(oldWallet) !== JSON.stringify(wallet)) {
    issues.push({
      path: 'nodeSettings.nodeWalletMnemonic',
      message:
        'the node wallet can change only together with nodeSettings.stage (a new identity is rolled out as a new stage)',
    });
  }
  const walletIsReference = typeof wallet === 'string' && wallet.includes('${');
  const oldSecret = oldNode.spec?.secretRef?.name;
  const secret = node.spec?.secretRef?.name;
  if (walletIsReference && oldSecret !== undefined && oldSecret !== secret) {
    issues.push({
      path: 'spec.secretRef.name',
      message:
        'the Secret holding the node wallet can change only together with nodeSettings.stage (another Secret is another wallet)',
    });
  }
  return issues;
}

export function reviewOracleNode(request: OracleNodeAdmission, lookups: AdmissionLookups = {}): AdmissionDecision {
  const node = request.object;
  if (request.operation !== 'CREATE' && request.operation !== 'UPDATE')
    return { allowed: true, errors: [], warnings: [] };
  // Status and metadata-only updates (the operator's own status writes, labels) do not change the spec: allowed
  // at once, so a stale config that was admitted before a rule existed never blocks status.
  if (
    request.operation === 'UPDATE' &&
    request.oldObject &&
    JSON.stringify(request.oldObject.spec ?? null) === JSON.stringify(node?.spec ?? null)
  ) {
    return { allowed: true, errors: [], warnings: [] };
  }
  const config = node?.spec?.config;
  const { errors, warnings } = configIssues(config ?? {});
  if (request.operation === 'UPDATE' && request.oldObject && node)
    errors.push(...updateGuards(request.oldObject, node));
  const warningLines = warnings.map((issue) => formatIssues([issue]));
  const namespace = node?.metadata?.namespace;
  const secretName = node?.spec?.secretRef?.name;
  if (namespace && secretName && lookups.secretExists?.(namespace, secretName) === false) {
    warningLines.push(
      `spec.secretRef.name: Secret ${namespace}/${secretName} does not exist yet; the node waits for it (ConfigValid=False, SecretNotFound)`,
    );
  }
  if (!secretName && config && referencePaths(config).length > 0) {
    // Certain to fail: without a Secret every reference is unresolved (ConfigValid=False, SecretKeyMissing).
    errors.push({
      path: 'spec.secretRef',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the text names the config's placeholder syntax
      message: 'the config has ${NAME} references but no Secret is named to resolve them',
    });
  }
  if (node) errors.push(...ownershipIssues(node, lookups));
  return { allowed: errors.length === 0, errors, warnings: warningLines };
}

/**
 * Names the node cannot have: a spec.secretRef that names the Secret the operator writes the node key into (the
 * user's Secret would be taken over, and deleted with the node), and names another OracleNode of the namespace
 * creates too (hyphens in node names and stages: node `a` with stage `b-c` and node `a-b` with stage `c`).
 */
function ownershipIssues(node: Partial<OracleNode>, lookups: AdmissionLookups): Issue[] {
  const issues: Issue[] = [];
  const name = node.metadata?.name;
  const stage = specStage(node);
  const userSecrets = {
    'spec.secretRef.name': node.spec?.secretRef?.name,
    'spec.gateway.callers.secretRef.name': node.spec?.gateway?.callers?.secretRef?.name,
  };
  for (const [path, secretName] of Object.entries(userSecrets)) {
    if (!name || !stage || secretName !== childNames(name, stage).signingKey) continue;
    issues.push({
      path,
      message: `${secretName} is the name of the Secret the operator writes the node key into; name your Secret otherwise`,
    });
  }
  const namespace = node.metadata?.namespace;
  const others = namespace ? lookups.oracleNodes?.(namespace) : undefined;
  for (const clash of nameClashes(node, others ?? [])) {
    issues.push({
      path: 'metadata.name',
      message: `${clash}: two OracleNodes cannot create one object; rename this node or its nodeSettings.stage`,
    });
  }
  return issues;
}

/** The denial message: every error as `path: message`, in the ConfigValid condition's words. */
export function denialMessage(errors: Issue[]): string {
  const lines = errors.map((issue) => (issue.path ? `${issue.path}: ${issue.message}` : issue.message));
  return `OracleNode config is invalid (${errors.length} error${errors.length === 1 ? '' : 's'}): ${lines.join('; ')}`;
}
