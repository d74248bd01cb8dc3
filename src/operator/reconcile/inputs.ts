// What one pass builds from: the node's config validated with its Secret's values (read live, never from the cache,
// which holds Secrets as metadata only), or why it cannot be applied. A rejection changes nothing but status: the
// last good children keep running.
import type { V1Secret, V1Service } from '@kubernetes/client-node';
import type { ReconcileContext } from '../../kube/index.js';
import { registerSecret, registerSecrets } from '../../observability/index.js';
import {
  apiLimitProblems,
  type BuildInput,
  childNames,
  gatewayEnabled,
  gatewaySigningKey,
  hashOf,
  publicGatewayUrl,
  secretHashesOf,
} from '../builders/index.js';
import { type ConfigValidator, formatIssues, isMissingSecretIssue } from '../config.js';
import { KINDS, type OracleNode } from '../resource.js';

/** Why a node's config cannot be applied: the reason of its ConfigValid=False condition, and the detail. */
export type ConfigRejection = {
  reason: 'SecretNotFound' | 'SecretKeyMissing' | 'ValidationFailed' | 'NameConflict' | 'NodeAddressChanged';
  message: string;
};

export type NodeInputs =
  | { ok: true; input: BuildInput; warnings: string | undefined }
  | ({ ok: false } & ConfigRejection);

type SecretRead =
  | { ok: true; values: Record<string, string>; data: Record<string, string>; hash: string; name?: string }
  | { ok: false; reason: 'SecretNotFound'; message: string };

/** The node's config validated with its Secret's values, or why it cannot be applied. */
export async function loadInputs(
  node: OracleNode,
  context: ReconcileContext,
  options: { validate: ConfigValidator; settings: BuildInput['settings'] },
): Promise<NodeInputs> {
  const secret = await readSecret(node, context);
  if (!secret.ok) return { ok: false, reason: secret.reason, message: secret.message };
  const rawConfig = (node.spec?.config ?? {}) as Record<string, unknown>;
  const validation = options.validate(rawConfig, secret.values);
  if (!validation.ok) {
    const reason = validation.errors.some(isMissingSecretIssue) ? 'SecretKeyMissing' : 'ValidationFailed';
    return { ok: false, reason, message: formatIssues(validation.errors) };
  }
  const limitProblems = apiLimitProblems(node.spec?.apiLimits, validation.config);
  if (limitProblems.length > 0) return { ok: false, reason: 'ValidationFailed', message: limitProblems.join('; ') };
  const signingKey = gatewaySigningKey(validation.config);
  if (signingKey) registerSigningKey(signingKey);
  const base: BuildInput = {
    node,
    config: validation.config,
    rawConfig,
    secretHash: secret.hash,
    secretHashes: secretHashesOf(rawConfig, secret.data),
    settings: options.settings,
    ...(secret.name ? { secretName: secret.name } : {}),
    ...(signingKey ? { signingKey } : {}),
  };
  const service = context.cache.get<V1Service>(KINDS.service, {
    namespace: node.metadata.namespace,
    name: childNames(node.metadata.name, validation.config.nodeSettings.stage).service,
  });
  const publicUrl = gatewayEnabled(base) ? publicGatewayUrl(base, service) : undefined;
  const input: BuildInput = publicUrl ? { ...base, publicGatewayUrl: publicUrl } : base;
  const warnings = validation.warnings.length > 0 ? formatIssues(validation.warnings) : undefined;
  return { ok: true, input, warnings };
}

/**
 * The node key a signing gateway gets instead of the mnemonic is derived on every pass (never kept by the operator
 * beyond it) and scrubbed from the operator's logs and events like the values it derives from.
 */
function registerSigningKey(key: string): void {
  registerSecret(key);
  // As it is written in the Secret's data.
  registerSecret(Buffer.from(key, 'utf8').toString('base64'));
}

async function readSecret(node: OracleNode, context: ReconcileContext): Promise<SecretRead> {
  const name = node.spec?.secretRef?.name;
  if (!name) return { ok: true, values: {}, data: {}, hash: hashOf({}) };
  const secret = await context.client.get<V1Secret>(KINDS.secret, { namespace: node.metadata.namespace, name });
  if (!secret) {
    return {
      ok: false,
      reason: 'SecretNotFound',
      message: `spec.secretRef.name: Secret ${node.metadata.namespace}/${name} not found`,
    };
  }
  const values = decodeSecret(secret);
  // The operator's logs and events are scrubbed of every value it has read from a Secret.
  registerSecrets(values);
  return { ok: true, values, data: secret.data ?? {}, hash: hashOf(secret.data ?? {}), name };
}

function decodeSecret(secret: V1Secret): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [key, value] of Object.entries(secret.data ?? {}))
    values[key] = Buffer.from(value, 'base64').toString('utf8');
  for (const [key, value] of Object.entries(secret.stringData ?? {})) values[key] = value;
  return values;
}
