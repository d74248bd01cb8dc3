// What `status`, `logs` and `cycle` share: `NAME [-n NAMESPACE] [--kubeconfig FILE] [--context NAME]`, the
// kubeconfig as kubectl reads it ($KUBECONFIG, ~/.kube/config, in-cluster), and the OracleNode itself.
import type { KubeConfig } from '@kubernetes/client-node';
import { errorMessage, isNotFound } from '../common/errors.js';
import { GROUP, type OracleNode, PLURAL, VERSION } from '../operator/resource.js';
import { parseCommandArgs } from './args.js';

export type KubeTarget = { kubeConfig: KubeConfig; namespace: string; name: string; values: Record<string, unknown> };

export const TARGET_OPTIONS_HELP = `  -n, --namespace   namespace of the OracleNode (default: the kubeconfig context's, else default)
      --kubeconfig  kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)
      --context     kubeconfig context`;

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
  const kubeConfig = await loadKubeConfig(values);
  if (typeof kubeConfig === 'number') return kubeConfig;
  const contextNamespace = kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace;
  const namespace = typeof values.namespace === 'string' ? values.namespace : (contextNamespace ?? 'default');
  return { kubeConfig, namespace, name: positionals[0]!, values };
}

/** The kubeconfig as kubectl reads it (--kubeconfig, --context), or exit code 2 after saying why it cannot. */
export async function loadKubeConfig(values: Record<string, unknown>): Promise<KubeConfig | number> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kubeConfig = new KubeConfig();
  try {
    if (typeof values.kubeconfig === 'string') kubeConfig.loadFromFile(values.kubeconfig);
    else kubeConfig.loadFromDefault();
    if (typeof values.context === 'string') kubeConfig.setCurrentContext(values.context);
  } catch (error) {
    process.stderr.write(`Cannot load the kubeconfig: ${errorMessage(error)}\n`);
    return 2;
  }
  return kubeConfig;
}

/** The OracleNode, or an exit code after saying why it could not be read. */
export async function readOracleNode(target: KubeTarget): Promise<OracleNode | number> {
  const { CustomObjectsApi } = await import('@kubernetes/client-node');
  const api = target.kubeConfig.makeApiClient(CustomObjectsApi);
  try {
    return (await api.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: target.namespace,
      plural: PLURAL,
      name: target.name,
    })) as OracleNode;
  } catch (error) {
    process.stderr.write(
      isNotFound(error)
        ? `OracleNode ${target.namespace}/${target.name} not found\n`
        : `Cannot read OracleNode ${target.namespace}/${target.name}: ${errorMessage(error)}\n`,
    );
    return 1;
  }
}
