// What every child shares: deterministic stage-qualified names, labels, the owner reference, the restricted pod
// security settings, and the hashes that roll workloads when the config or the Secret changes.
import { createHash } from 'node:crypto';
import type {
  KubernetesObject,
  V1Container,
  V1EnvVar,
  V1OwnerReference,
  V1PodSecurityContext,
  V1PodSpec,
  V1SecurityContext,
  V1Volume,
} from '@kubernetes/client-node';
import { WORKLOADS, type Workload } from '../../common/workloads.js';
import { type SecretScopes, secretScopes } from '../../config/index.js';
import { CONFIG_DIR, CONFIG_FILE, ENV, LABELS, SECRETS_DIR, SECRETS_VOLUME } from '../../contract/pods.js';
import type { NodeConfig } from '../config.js';
import {
  ANNOTATIONS,
  API_VERSION,
  type Component,
  DEFAULT_IMAGE,
  KIND,
  MANAGED_BY,
  type OracleNode,
} from '../resource.js';
import { applyPodOverrides, inheritedMetadata, podMetadata } from './pod-overrides.js';
import { workloadResources } from './resources.js';

/** Settings of the operator itself (flags/environment of `oracle-node operator`). */
export type OperatorSettings = {
  /** Image used when spec.image is empty. */
  defaultImage: string;
  clusterDomain: string;
};

export const DEFAULT_SETTINGS: OperatorSettings = { defaultImage: DEFAULT_IMAGE, clusterDomain: 'cluster.local' };

/** Everything a builder needs; builders are pure functions of it. */
export type BuildInput = {
  node: OracleNode;
  /** The validated, interpolated config (read for chains, gateways, stage). */
  config: NodeConfig;
  /** spec.config as written, with `${NAME}` placeholders: this is what goes into the ConfigMap. */
  rawConfig: Record<string, unknown>;
  secretName?: string;
  /** Hash of the Secret's data: part of the pod template so a rotation rolls the pods. */
  secretHash: string;
  /**
   * Hash of the keys each workload receives (secretHashesOf): when set, a workload's pod template carries its own,
   * so rotating a key that only the gateway uses does not restart the coordinator's or the workers' pods.
   */
  secretHashes?: Record<Workload, string>;
  /**
   * The node's private key (m/44'/60'/0'/0/0 of the mnemonic), when a signing gateway (signed-data, OEV) is on: it
   * goes into the operator's own Secret (childNames().signingKey), which only the gateway's pods read.
   */
  signingKey?: string;
  settings: OperatorSettings;
  /** The node address the mnemonic derives (public): the stage's config ConfigMap records it. */
  nodeAddress?: string;
  /** Where callers reach the gateways (spec.gateway.publicUrl, else the Service's load-balancer address). */
  publicGatewayUrl?: string;
};

/**
 * Deterministic names: stage-qualified so two stages can run side by side during a blue/green rollout. Node names
 * and stages may both hold hyphens, so two nodes can name alike: names.ts says which, for admission.
 */
export function childNames(nodeName: string, stage: string) {
  const base = `${nodeName}-${stage}`;
  return {
    config: `${base}-config`,
    coordinator: `${base}-coordinator`,
    worker: `${base}-worker`,
    /** The stage's gateway Deployment, its ServiceAccount, PDB and HPA. */
    gateway: `${base}-gateway`,
    /** The node's gateway Service, for callers: it outlives stage rollouts, which switch it to the new stage. */
    service: `${nodeName}-gateway`,
    /** Not stage-qualified: the response cache and the last cycle outlive a stage rollout. */
    cache: `${nodeName}-cache`,
    cycle: `${nodeName}-cycle`,
    /** The gateway's node key, derived from the mnemonic: one per node (both stages of a rollout sign as it). */
    signingKey: `${nodeName}-signing-key`,
    /** The coordinator Lease of the window hand-over: per node, so two stages' windows never send at once either. */
    coordinatorLease: `${nodeName}-coordinator`,
  };
}

/** A short stable hash of any JSON value (keys sorted, so property order does not matter). */
export function hashOf(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, 16);
}

export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}

export function selectorLabels(node: OracleNode, stage: string, component: Component): Record<string, string> {
  return { [LABELS.name]: node.metadata.name, [LABELS.stage]: stage, [LABELS.component]: component };
}

export function labels(node: OracleNode, stage: string, component: Component): Record<string, string> {
  return {
    [LABELS.managedBy]: MANAGED_BY,
    [LABELS.partOf]: 'oracle-node',
    [LABELS.instance]: node.metadata.name,
    ...selectorLabels(node, stage, component),
  };
}

export function ownerReference(node: OracleNode): V1OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    name: node.metadata.name,
    uid: node.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

export function metadata(
  input: BuildInput,
  name: string,
  component: Component,
  stage = input.config.nodeSettings.stage,
) {
  const own = labels(input.node, stage, component);
  const { annotations, labels: merged } = inheritedMetadata(input.node, { labels: own });
  return {
    name,
    namespace: input.node.metadata.namespace,
    labels: merged ?? own,
    ...(annotations ? { annotations } : {}),
    ownerReferences: [ownerReference(input.node)],
  };
}

export const POD_SECURITY_CONTEXT: V1PodSecurityContext = {
  runAsNonRoot: true,
  runAsUser: 65532,
  runAsGroup: 65532,
  fsGroup: 65532,
  seccompProfile: { type: 'RuntimeDefault' },
};

export const CONTAINER_SECURITY_CONTEXT: V1SecurityContext = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

export function configHash(input: BuildInput): string {
  return hashOf(input.rawConfig);
}

/**
 * A workload's pod template metadata: its labels, and annotations by which a changed config, or a changed key of the
 * workload's, changes the template, which rolls it; the user's pod labels and annotations beneath them. The gateway's
 * keys include the derived node key, so a rotated mnemonic rolls a signing gateway too.
 */
export function podTemplateMetadata(input: BuildInput, workload: Workload, ownLabels: Record<string, string>) {
  const keysHash = input.secretHashes?.[workload] ?? input.secretHash;
  const signingKey = signingKeyOf(input, workload);
  return podMetadata(input.node, workload, {
    labels: ownLabels,
    annotations: {
      [ANNOTATIONS.configHash]: configHash(input),
      [ANNOTATIONS.secretHash]: signingKey ? hashOf([keysHash, hashOf(signingKey)]) : keysHash,
    },
  });
}

/** The derived node key a workload's pods read: only the gateway's, only when a signing gateway is on. */
function signingKeyOf(input: BuildInput, workload: Workload): string | undefined {
  return workload === 'gateway' ? input.signingKey : undefined;
}

/** The key of the node key in its Secret: the variable's name, or the file's under SECRETS_DIR. */
export const SIGNING_KEY_SECRET_KEY = ENV.signingKey;

/** spec.secretRef.as: Files mounts each pod's keys as a volume instead of variables. */
export function secretsAsFiles(input: BuildInput): boolean {
  return input.node.spec.secretRef?.as === 'Files';
}

export function image(input: BuildInput): string {
  return input.node.spec.image || input.settings.defaultImage;
}

/** The environment every engine container gets (the contract's ENV): where the config is and who it runs for. */
export function baseEnv(input: BuildInput, stage: string): V1EnvVar[] {
  const names = childNames(input.node.metadata.name, stage);
  return [
    { name: ENV.configPath, value: CONFIG_FILE },
    { name: ENV.oracleNode, value: input.node.metadata.name },
    { name: ENV.cacheConfigMap, value: names.cache },
    { name: ENV.cycleConfigMap, value: names.cycle },
    { name: ENV.namespace, valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    ...telemetryEnv(input, stage),
  ];
}

/**
 * The OpenTelemetry standard variables of spec.telemetry, none when it names no endpoint. The headers (a collector's
 * credentials) come from their Secret by reference, never as a value in the pod spec. The resource names the node,
 * its stage and namespace ($(POD_NAMESPACE) is expanded by the kubelet from the variable above it).
 */
function telemetryEnv(input: BuildInput, stage: string): V1EnvVar[] {
  const telemetry = input.node.spec.telemetry;
  if (!telemetry?.otlpEndpoint) return [];
  const resource = {
    ...telemetry.resourceAttributes,
    'k8s.namespace.name': `$(${ENV.namespace})`,
    'oracle_node.name': input.node.metadata.name,
    'oracle_node.stage': stage,
  };
  const resourceAttributes = Object.entries(resource)
    .map(([key, value]) => `${key}=${key === 'k8s.namespace.name' ? value : encodeURIComponent(value)}`)
    .join(',');
  const { headersSecretRef, serviceName, sampler, samplerRatio } = telemetry;
  return [
    { name: ENV.otlpEndpoint, value: telemetry.otlpEndpoint },
    ...(headersSecretRef
      ? [
          {
            name: ENV.otlpHeaders,
            valueFrom: { secretKeyRef: { name: headersSecretRef.name, key: headersSecretRef.key } },
          },
        ]
      : []),
    ...(serviceName ? [{ name: ENV.otelServiceName, value: serviceName }] : []),
    { name: ENV.otelResourceAttributes, value: resourceAttributes },
    ...(sampler ? [{ name: ENV.otelSampler, value: sampler }] : []),
    ...(samplerRatio !== undefined ? [{ name: ENV.otelSamplerArg, value: String(samplerRatio) }] : []),
  ];
}

const scopesByConfig = new WeakMap<object, SecretScopes>();

/** The keys of the Secret a workload's pod receives: those its part of the config references (config/secret-scopes). */
export function secretKeysOf(input: BuildInput, workload: Workload): string[] {
  if (!input.secretName) return [];
  return scopesOf(input.rawConfig)[workload];
}

function scopesOf(rawConfig: Record<string, unknown>): SecretScopes {
  let scopes = scopesByConfig.get(rawConfig);
  if (!scopes) {
    scopes = secretScopes(rawConfig);
    scopesByConfig.set(rawConfig, scopes);
  }
  return scopes;
}

/**
 * Per workload, the hash of the Secret's entries that workload receives (by the config's `${NAME}` references), so a
 * rotation rolls exactly the pods that hold the rotated key. `data` is the Secret's data as stored (base64).
 */
export function secretHashesOf(
  rawConfig: Record<string, unknown>,
  data: Record<string, string>,
): Record<Workload, string> {
  const scopes = scopesOf(rawConfig);
  const hashes = {} as Record<Workload, string>;
  for (const workload of WORKLOADS) {
    const entries = scopes[workload].filter((key) => key in data).map((key) => [key, data[key]]);
    hashes[workload] = hashOf(Object.fromEntries(entries));
  }
  return hashes;
}

/**
 * The Secret's keys a workload receives, one variable each, never the whole Secret: a worker must not hold the keys
 * of the gateways or the heartbeat, a gateway not the providers'. First in the list, so that the contract's own
 * variables win over a key of the same name. A signing gateway's node key comes from the operator's own Secret.
 * With spec.secretRef.as Files, none: the keys are files of the pod's secrets volume (secretsVolume).
 */
export function secretEnv(input: BuildInput, workload: Workload): V1EnvVar[] {
  if (secretsAsFiles(input)) return [];
  const secretName = input.secretName;
  const keys: V1EnvVar[] = secretName
    ? secretKeysOf(input, workload).map((key) => ({
        name: key,
        valueFrom: { secretKeyRef: { name: secretName, key } },
      }))
    : [];
  if (signingKeyOf(input, workload)) {
    const name = childNames(input.node.metadata.name, input.config.nodeSettings.stage).signingKey;
    keys.push({ name: ENV.signingKey, valueFrom: { secretKeyRef: { name, key: SIGNING_KEY_SECRET_KEY } } });
  }
  return keys;
}

/**
 * With spec.secretRef.as Files, the workload's keys as one read-only volume (0400): only the keys its part of the
 * config uses (never the whole Secret: a secret source without items projects every key) and, for a signing
 * gateway, the derived node key. None when the workload has no key.
 */
export function secretsVolume(input: BuildInput, workload: Workload): V1Volume | undefined {
  if (!secretsAsFiles(input)) return undefined;
  const keys = secretKeysOf(input, workload);
  const sources: NonNullable<V1Volume['projected']>['sources'] = [];
  if (input.secretName && keys.length > 0) {
    sources.push({ secret: { name: input.secretName, items: keys.map((key) => ({ key, path: key })) } });
  }
  if (signingKeyOf(input, workload)) {
    const name = childNames(input.node.metadata.name, input.config.nodeSettings.stage).signingKey;
    sources.push({ secret: { name, items: [{ key: SIGNING_KEY_SECRET_KEY, path: SIGNING_KEY_SECRET_KEY }] } });
  }
  if (sources.length === 0) return undefined;
  return { name: SECRETS_VOLUME, projected: { defaultMode: 0o400, sources } };
}

/** One engine container running `oracle-node <args>` with the config mounted and its keys of the Secret. */
export function engineContainer(
  input: BuildInput,
  name: string,
  args: string[],
  workload: Workload,
  extraEnv: V1EnvVar[] = [],
): V1Container {
  const stage = input.config.nodeSettings.stage;
  const secretFiles = secretsVolume(input, workload) !== undefined;
  const container: V1Container = {
    name,
    image: image(input),
    imagePullPolicy: input.node.spec.imagePullPolicy ?? 'IfNotPresent',
    args,
    env: [
      ...secretEnv(input, workload),
      ...baseEnv(input, stage),
      { name: ENV.secretScope, value: workload },
      ...(secretFiles ? [{ name: ENV.secretsDir, value: SECRETS_DIR }] : []),
      ...extraEnv,
    ],
    resources: workloadResources(input.node, workload),
    securityContext: CONTAINER_SECURITY_CONTEXT,
    volumeMounts: [
      { name: 'config', mountPath: CONFIG_DIR, readOnly: true },
      { name: 'tmp', mountPath: '/tmp' },
      ...(secretFiles ? [{ name: SECRETS_VOLUME, mountPath: SECRETS_DIR, readOnly: true }] : []),
    ],
  };
  return container;
}

/**
 * The pod-level fields shared by every engine pod (scheduling, security, volumes). Every pod runs under a
 * ServiceAccount of its own; only a pod that calls the Kubernetes API gets a token. The workload's keys as files,
 * with spec.secretRef.as Files.
 */
export function basePodSpec(
  input: BuildInput,
  containers: V1Container[],
  identity: { workload: Workload; serviceAccountName: string; apiToken: boolean },
): V1PodSpec {
  const names = childNames(input.node.metadata.name, input.config.nodeSettings.stage);
  const spec: V1PodSpec = {
    containers,
    securityContext: POD_SECURITY_CONTEXT,
    serviceAccountName: identity.serviceAccountName,
    automountServiceAccountToken: identity.apiToken,
    enableServiceLinks: false,
    volumes: [
      { name: 'config', configMap: { name: names.config } },
      { name: 'tmp', emptyDir: { sizeLimit: '64Mi' } },
    ],
  };
  const secrets = secretsVolume(input, identity.workload);
  if (secrets) spec.volumes!.push(secrets);
  applyPodOverrides(input.node, identity.workload, spec);
  return spec;
}

export type Child = KubernetesObject & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; labels: Record<string, string> };
};
