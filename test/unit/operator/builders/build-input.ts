// A BuildInput from one of manifests/samples, as reconcile/inputs.ts makes it: the config validated with the Secret's
// values, and the node key of a signing gateway.
import { type BuildInput, DEFAULT_SETTINGS, gatewaySigningKey } from '../../../../src/operator/builders/index.js';
import { validateNodeConfig } from '../../../../src/operator/config.js';
import type { OracleNode } from '../../../../src/operator/resource.js';
import { loadSample } from '../fake-kube.js';

export function inputFor(
  name: 'minimal' | 'full-multi-chain' | 'gateways-only',
  edit?: (node: OracleNode) => void,
  secretHash = 'secret-hash-1',
  /** Values of the Secret's keys in place of the sample's. */
  overrides: Record<string, string> = {},
): BuildInput {
  const { node, secret } = loadSample(name);
  edit?.(node);
  const values = {
    ...Object.fromEntries(
      Object.entries((secret as { data?: Record<string, string> }).data ?? {}).map(([k, v]) => [
        k,
        Buffer.from(v, 'base64').toString(),
      ]),
    ),
    ...overrides,
  };
  const result = validateNodeConfig(node.spec.config, values);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  // As reconcile/inputs.ts: the node key of a signing gateway.
  const signingKey = gatewaySigningKey(result.config);
  return {
    node,
    config: result.config,
    rawConfig: node.spec.config,
    secretName: secret.metadata!.name!,
    secretHash,
    settings: DEFAULT_SETTINGS,
    ...(signingKey ? { signingKey } : {}),
  };
}
