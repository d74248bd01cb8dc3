// What `status`, `logs`, `cycle` and `request --node` share: `NAME [-n NAMESPACE] [--kubeconfig FILE] [--context
// NAME]`, the kubeconfig as kubectl reads it (--kubeconfig, else $KUBECONFIG, ~/.kube/config, in-cluster), the
// client (src/kube's, the operator's own; @kubernetes/client-node is loaded only for a user with a credential
// plugin) and the OracleNode itself.
import type { V1Secret } from '@kubernetes/client-node';
import { errorMessage } from '../common/errors.js';
import { type Config, secretValuesOf, validateConfig } from '../config/index.js';
import { loadClientConfig, RestClient, RuntimeClient } from '../kube/api.js';
import { registerSecrets } from '../observability/index.js';
import { KINDS, type OracleNode } from '../operator/resource.js';
import { parseCommandArgs } from './args.js';

/** The API client of a command, and the namespace its kubeconfig context names (or default). */
export type KubeConnection = { client: RuntimeClient; contextNamespace: string };

export type KubeTarget = KubeConnection & { namespace: string; name: string; values: Record<string, unknown> };

export const TARGET_OPTIONS_HELP = `  -n, --namespace   namespace of the OracleNode (default: the kubeconfig context's, else default)
      --kubeconfig  kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)
      --context     kubeconfig context`;

/** `--node NAME [-n NS] [--kubeconfig] [--context]` or `-c config.json [-s secrets.env]`: the node a command reads. */
export const NODE_SOURCE_OPTIONS = {
  node: { type: 'string' },
  namespace: { type: 'string', short: 'n' },
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  config: { type: 'string', short: 'c' },
  secrets: { type: 'string', short: 's' },
} as const;

/** The field manager of the objects the CLI creates (`oracle-node cycle`'s Job). */
export const CLI_FIELD_MANAGER = 'oracle-node-cli';

/** Parses `NAME [-n NS]` plus the command's own options; an exit code when the arguments are wrong. */
export async function parseTarget(
  argv: string[],
  help: string,
  extra: Record<string, { type: 'string' | 'boolean'; short?: string }> = {},
): Promise<KubeTarget | number> {
  const parsed = parseCommandArgs(
    argv,
    {
      namespace: { type: 'string', short: 'n' },
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
      ...extra,
    },
    help,
    { allowPositionals: true },
  );
  if ('exitCode' in parsed) return parsed.exitCode;
  const { values, positionals } = parsed;
  if (positionals.length !== 1) {
    process.stderr.write(`Expected exactly one OracleNode name\n\n${help}`);
    return 2;
  }
  const connection = await connect(values);
  if (typeof connection === 'number') return connection;
  const namespace = typeof values.namespace === 'string' ? values.namespace : connection.contextNamespace;
  return { ...connection, namespace, name: positionals[0]!, values };
}

/**
 * The client for the kubeconfig as kubectl reads it (--kubeconfig, --context), or exit code 2 after saying why it
 * cannot be loaded. Few retries, short waits: someone is waiting at a terminal.
 */
export async function connect(values: Record<string, unknown>): Promise<KubeConnection | number> {
  try {
    const config = await loadClientConfig({
      prefer: 'kubeconfig',
      ...(typeof values.kubeconfig === 'string' ? { path: values.kubeconfig } : {}),
      ...(typeof values.context === 'string' ? { context: values.context } : {}),
    });
    const rest = new RestClient(config, {
      qps: 50,
      burst: 100,
      userAgent: CLI_FIELD_MANAGER,
      maxRetries: 2,
      retryMaxMs: 2_000,
      requestTimeoutMs: 30_000,
    });
    return { client: new RuntimeClient(rest, CLI_FIELD_MANAGER), contextNamespace: config.namespace ?? 'default' };
  } catch (error) {
    process.stderr.write(`Cannot load the kubeconfig: ${errorMessage(error)}\n`);
    return 2;
  }
}

/** The OracleNode, or an exit code after saying why it could not be read. */
export async function readOracleNode(target: KubeTarget): Promise<OracleNode | number> {
  const { client, namespace, name } = target;
  try {
    const node = await client.get<OracleNode>(KINDS.oracleNode, { namespace, name });
    if (node) return node;
    process.stderr.write(`OracleNode ${namespace}/${name} not found\n`);
  } catch (error) {
    process.stderr.write(`Cannot read OracleNode ${namespace}/${name}: ${errorMessage(error)}\n`);
  }
  return 1;
}

/**
 * The OracleNode's config with its Secret's values (the providers' URLs are usually among them), validated; or why
 * it is not available (no read access to the Secret, an invalid config). Every value is registered for redaction
 * before anything can print it.
 */
export async function configOfOracleNode(
  client: RuntimeClient,
  namespace: string,
  node: OracleNode,
): Promise<{ config: Config } | { unavailable: string }> {
  let secrets: Record<string, string> = {};
  const secretName = node.spec.secretRef?.name;
  if (secretName) {
    try {
      const secret = await client.get<V1Secret>(KINDS.secret, { namespace, name: secretName });
      if (!secret) throw new Error('not found');
      secrets = Object.fromEntries(
        Object.entries(secret.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]),
      );
    } catch (error) {
      return { unavailable: `cannot read Secret ${namespace}/${secretName}: ${errorMessage(error)}` };
    }
  }
  registerSecrets(secretValuesOf(undefined, secrets));
  const result = validateConfig(node.spec.config, secrets);
  registerSecrets(secretValuesOf(result.config, secrets));
  if (!result.ok || !result.config) return { unavailable: 'the OracleNode config is not valid' };
  return { config: result.config };
}
