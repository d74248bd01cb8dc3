// The node's on-chain identity (its address, xpub, sponsor wallets, the ids requesters use) comes from the Secret's
// mnemonic, which the admission webhook cannot see. A mnemonic rotated in place would give the running stage
// another identity at its next coordinator run (the pods read the Secret when they start): requests made to the old
// address go unserved and the new wallets are unfunded, with nothing said. So a stage keeps the address it was
// deployed with (its config ConfigMap's annotation; status for a stage deployed before it): another address is
// refused until the stage changes, and the stage's coordinator is held meanwhile (docs/security.md).
import type { V1ConfigMap, V1CronJob } from '@kubernetes/client-node';
import type { ObjectCache, ReconcileContext } from '../../kube/index.js';
import { type Child, childNames } from '../builders/index.js';
import { ANNOTATIONS, KINDS, type OracleNode } from '../resource.js';
import { controlledBy } from './apply.js';
import type { ConfigRejection } from './inputs.js';
import { suspendCronJob } from './rollout.js';

/** The node address `stage` was deployed with, when it was. */
export function deployedNodeAddress(node: OracleNode, stage: string, cache: ObjectCache): string | undefined {
  const name = childNames(node.metadata.name, stage).config;
  const config = cache.get<V1ConfigMap>(KINDS.configMap, { namespace: node.metadata.namespace, name });
  const recorded =
    config && controlledBy(config, node) ? config.metadata?.annotations?.[ANNOTATIONS.nodeAddress] : undefined;
  return recorded ?? (node.status?.stage === stage ? node.status.nodeAddress : undefined);
}

/** Why the Secret's mnemonic cannot be applied to `stage` as it is: it derives another address. Pure. */
export function nodeAddressChange(
  stage: string,
  deployed: string | undefined,
  derived: string | undefined,
): ConfigRejection | undefined {
  if (!deployed || !derived || deployed.toLowerCase() === derived.toLowerCase()) return undefined;
  return {
    reason: 'NodeAddressChanged',
    message:
      `The Secret's mnemonic now derives node address ${derived}, but stage ${stage} runs as ${deployed}: a new ` +
      'identity (node address, xpub, sponsor wallets) needs a new nodeSettings.stage (docs/security.md, "Rotating ' +
      `the mnemonic"). The coordinator of stage ${stage} is held until the stage changes or the Secret holds the ` +
      'previous mnemonic again',
  };
}

/** Holds the stage's coordinator CronJob (suspended), so that no run starts with the other identity. */
export async function holdCoordinator(node: OracleNode, stage: string, context: ReconcileContext): Promise<void> {
  const name = childNames(node.metadata.name, stage).coordinator;
  const cronJob = context.cache.get<V1CronJob & Child>(KINDS.cronJob, { namespace: node.metadata.namespace, name });
  if (cronJob && controlledBy(cronJob, node) && cronJob.spec?.suspend !== true) await suspendCronJob(cronJob, context);
}
