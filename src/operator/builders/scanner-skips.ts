// What a platform's policy scanner (checkov's Kubernetes policies) is told about the objects the operator creates:
// `checkov.io/skipN: <check>=<reason>` on each object, for the checks its pod fails on purpose (docs/security.md,
// "Policy scanners", lists each). Every skip is derived from the pod as built, so a setting that satisfies a check (an
// image pinned by digest, a CPU limit, the keys as files) drops the skip and the check runs and passes; a pod that
// fails a check for any other reason carries no skip, and `make lint` (scripts/checkov.ts) fails on it.
import type { V1PodSpec } from '@kubernetes/client-node';

/** checkov's ids of the checks a pod of this project may fail on purpose. */
export const SCANNER_CHECKS = {
  cpuLimit: 'CKV_K8S_11',
  pullPolicy: 'CKV_K8S_15',
  secretsAsEnv: 'CKV_K8S_35',
  apiToken: 'CKV_K8S_38',
  digest: 'CKV_K8S_43',
  networkPolicy: 'CKV2_K8S_6',
} as const;

/** checkov reads the annotation as `<id>=<reason>` and splits it at every `=`: a reason never holds one. */
const REASONS = {
  cpuLimit: 'no CPU limit by default as throttling delays signing and probes; spec.resources.limits.cpu sets one',
  digest: 'the image is a release tag by default; an image with @sha256 (chart image.digest or spec.image) pins it',
  pullPolicy: 'IfNotPresent so that no pod start waits on the registry; an image pinned by digest passes this check',
  networkPolicy:
    "the chart's networkPolicy.workloads policy selects these pods; off by default as the egress is cluster specific",
} as const;

export type ScannerContext = {
  /** Why the pod holds a ServiceAccount token: the Kubernetes calls it makes. Without it the pod must have none. */
  apiToken?: string;
  /** Why the pod's keys are variables, and how to have them as files where the resource can. */
  secretsAsEnv: string;
};

const SKIP_PREFIX = 'checkov.io/skip';

/** Why an OracleNode's pods hold their keys as variables (spec.secretRef.as EnvVars, the default). */
export const NODE_SECRETS_AS_ENV =
  'one variable per key the workload uses and never the whole Secret; spec.secretRef.as Files gives them as files';

/**
 * The skip annotations for an object whose pod is `pod`, numbered after any `checkov.io/skipN` already in `existing`
 * (a platform's own, through spec.inheritedMetadata), which they never replace.
 */
export function scannerSkips(
  pod: V1PodSpec,
  context: ScannerContext,
  existing: Record<string, string> = {},
): Record<string, string> {
  const containers = [...(pod.initContainers ?? []), ...pod.containers];
  const unpinned = containers.some((c) => !c.image?.includes('@'));
  const skips: [string, string][] = [];
  if (containers.some((c) => c.resources?.limits?.['cpu'] === undefined))
    skips.push([SCANNER_CHECKS.cpuLimit, REASONS.cpuLimit]);
  if (unpinned) skips.push([SCANNER_CHECKS.digest, REASONS.digest]);
  if (containers.some((c) => !c.image?.includes('@') && c.imagePullPolicy !== 'Always'))
    skips.push([SCANNER_CHECKS.pullPolicy, REASONS.pullPolicy]);
  const secretVariables = containers.some(
    (c) => c.env?.some((v) => v.valueFrom?.secretKeyRef) || c.envFrom?.some((source) => source.secretRef),
  );
  if (secretVariables) skips.push([SCANNER_CHECKS.secretsAsEnv, context.secretsAsEnv]);
  if (pod.automountServiceAccountToken !== false && context.apiToken)
    skips.push([SCANNER_CHECKS.apiToken, context.apiToken]);
  skips.push([SCANNER_CHECKS.networkPolicy, REASONS.networkPolicy]);
  const annotations: Record<string, string> = {};
  let n = 1;
  for (const [check, reason] of skips) {
    while (`${SKIP_PREFIX}${n}` in existing) n++;
    annotations[`${SKIP_PREFIX}${n++}`] = `${check}=${reason}`;
  }
  return annotations;
}

/** `metadata` with the skips of its object's pod added beside its own annotations. */
export function withScannerSkips<M extends object>(
  metadata: M,
  pod: V1PodSpec,
  context: ScannerContext,
): M & { annotations: Record<string, string> } {
  const own = (metadata as { annotations?: Record<string, string> }).annotations;
  return { ...metadata, annotations: { ...own, ...scannerSkips(pod, context, own) } };
}
