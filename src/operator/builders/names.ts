// The names an OracleNode claims in its namespace, by kind, and the claims of two nodes that meet. Node names and
// stages may both contain hyphens, so `<node>-<stage>-<suffix>` alone cannot keep two nodes apart (node `a` with
// stage `b-c` and node `a-b` with stage `c` both name `a-b-c-config`): the admission webhook refuses a node whose
// names meet another's (webhook/review.ts), and the operator never applies over an object it did not create for
// the node (ownership.ts). Pure.
import type { OracleNode } from '../resource.js';
import { childNames } from './common.js';

/** The objects a node's names go to, as `Kind/name`: two objects clash only when both kind and name are equal. */
export function claimedNames(nodeName: string, stages: Iterable<string>): Set<string> {
  const claims = new Set<string>();
  const claim = (kinds: string[], name: string) => {
    for (const kind of kinds) claims.add(`${kind}/${name}`);
  };
  for (const stage of stages) {
    const names = childNames(nodeName, stage);
    claim(['ConfigMap'], names.config);
    claim(['ServiceAccount', 'Role', 'RoleBinding', 'CronJob'], names.coordinator);
    claim(['ServiceAccount'], names.worker);
    claim(['ServiceAccount', 'Deployment', 'PodDisruptionBudget', 'HorizontalPodAutoscaler'], names.gateway);
    // Not stage-qualified: the same for every stage.
    claim(['ConfigMap'], names.cache);
    claim(['ConfigMap'], names.cycle);
    claim(['Secret'], names.signingKey);
    claim(['Lease'], names.coordinatorLease);
    claim(['Service'], names.service);
  }
  return claims;
}

/** The stage the spec asks for, when written as a literal (a `${NAME}` stage is refused by the CRD). */
export function specStage(node: Partial<OracleNode>): string | undefined {
  const stage = (node.spec?.config as { nodeSettings?: { stage?: unknown } } | undefined)?.nodeSettings?.stage;
  return typeof stage === 'string' && stage.length > 0 ? stage : undefined;
}

/** Every stage a node has or may still have children of: its spec's, and the serving and previous ones of status. */
export function nodeStages(node: Partial<OracleNode>): Set<string> {
  const stages = new Set<string>();
  const spec = specStage(node);
  if (spec) stages.add(spec);
  if (node.status?.stage) stages.add(node.status.stage);
  for (const stage of node.status?.previousStage?.split(',') ?? []) if (stage) stages.add(stage);
  return stages;
}

/**
 * Why `node` (as it is being admitted, for the stage its spec asks for) cannot share the namespace with `others`:
 * each `Kind/name` it would create that another node creates too, and a Secret it would create that another node
 * reads as its spec.secretRef (or that it reads, and another creates). Empty when nothing meets.
 */
export function nameClashes(node: Partial<OracleNode>, others: Partial<OracleNode>[]): string[] {
  const name = node.metadata?.name;
  const stage = specStage(node);
  if (!name || !stage) return [];
  const mine = claimedNames(name, [stage]);
  const clashes: string[] = [];
  for (const other of others) {
    const otherName = other.metadata?.name;
    if (!otherName || otherName === name) continue;
    const theirs = claimedNames(otherName, nodeStages(other));
    const shared = [...mine].filter((claim) => theirs.has(claim));
    const theirSecret = other.spec?.secretRef?.name;
    if (theirSecret && mine.has(`Secret/${theirSecret}`)) shared.push(`Secret/${theirSecret} (its spec.secretRef)`);
    const mySecret = node.spec?.secretRef?.name;
    if (mySecret && theirs.has(`Secret/${mySecret}`)) shared.push(`Secret/${mySecret} (this node's spec.secretRef)`);
    if (shared.length > 0) clashes.push(`OracleNode ${otherName} names ${shared.sort().join(', ')} too`);
  }
  return clashes;
}
