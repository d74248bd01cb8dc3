// The children of one AirnodeFeed, pure functions of it and its validated config: the config.json as written (with
// its ${NAME} placeholders) in a ConfigMap, the report ConfigMap the pod writes its last push per Signed API into, a
// ServiceAccount with a Role that may get and update only that ConfigMap, and a Deployment of one pod running
// `oracle-node feed` that holds only the Secret's keys the config references (and a short-lived API token).
import type {
  V1ConfigMap,
  V1Deployment,
  V1EnvVar,
  V1PodSpec,
  V1Probe,
  V1Role,
  V1RoleBinding,
  V1ServiceAccount,
} from '@kubernetes/client-node';
import { referencedSecretNames } from '../../config/index.js';
import { FEED_REPORT_COMPONENT, FEED_REPORT_CONFIGMAP_ENV } from '../../contract/feed-report.js';
import { CONFIG_DIR, CONFIG_FILE, ENV, LABELS } from '../../contract/pods.js';
import type { ResourceKind } from '../../kube/index.js';
import { soleCallerApiLimitArgs } from '../builders/api-limits.js';
import {
  type Child,
  CONTAINER_SECURITY_CONTEXT,
  type DesiredChild,
  hashOf,
  mergeResources,
  POD_SECURITY_CONTEXT,
  withScannerSkips,
} from '../builders/index.js';
import { ANNOTATIONS, KINDS, MANAGED_BY } from '../resource.js';
import { type AirnodeFeed, FEED_API_VERSION, FEED_KIND } from './api.js';

/** The label naming a feed's children (never oracle-node.io/name, which maps objects to their OracleNode). */
export const FEED_LABEL = 'oracle-node.io/feed';
export const FEED_COMPONENT = 'feed';
/** `oracle-node feed --metrics-port`: /healthz, /readyz and /metrics. */
export const FEED_METRICS_PORT = 9090;

/** At 1,000 templates every 5 s the feed peaks at about 164 MiB (docs/benchmarks.md, "Airnode feed"). */
export const FEED_DEFAULT_RESOURCES = {
  requests: { cpu: '100m', memory: '192Mi' },
  limits: { memory: '512Mi' },
};

/** What the builders read of the validated config (the feed's own FeedConfig has this shape, and more). */
export type FeedConfigView = {
  nodeSettings: { stage: string; airnodeWalletMnemonic: string };
  templates: Record<string, unknown>;
  signedApis: { name: string }[];
};

export type FeedBuildInput = {
  feed: AirnodeFeed;
  config: FeedConfigView;
  /** spec.config as written, with `${NAME}` placeholders: what goes into the ConfigMap. */
  rawConfig: Record<string, unknown>;
  secretName?: string;
  /** The Secret's data as stored (base64), for the hash of the keys the pod holds. */
  secretData: Record<string, string>;
  defaultImage: string;
};

export function feedChildNames(name: string) {
  return {
    config: `${name}-feed-config`,
    report: `${name}-feed-report`,
    serviceAccount: `${name}-feed`,
    role: `${name}-feed`,
    deployment: `${name}-feed`,
  };
}

export function feedSelectorLabels(feed: AirnodeFeed): Record<string, string> {
  return { [FEED_LABEL]: feed.metadata.name, [LABELS.component]: FEED_COMPONENT };
}

function feedLabels(feed: AirnodeFeed): Record<string, string> {
  return {
    [LABELS.managedBy]: MANAGED_BY,
    [LABELS.partOf]: 'oracle-node',
    [LABELS.instance]: feed.metadata.name,
    ...feedSelectorLabels(feed),
  };
}

function metadata(feed: AirnodeFeed, name: string) {
  return {
    name,
    namespace: feed.metadata.namespace,
    labels: feedLabels(feed),
    ownerReferences: [
      {
        apiVersion: FEED_API_VERSION,
        kind: FEED_KIND,
        name: feed.metadata.name,
        uid: feed.metadata.uid ?? '',
        controller: true,
        blockOwnerDeletion: true,
      },
    ],
  };
}

/** The Secret's keys the pod receives: exactly the `${NAME}` references of the config, sorted. */
export function feedSecretKeys(input: FeedBuildInput): string[] {
  if (!input.secretName) return [];
  return [...referencedSecretNames(input.rawConfig)].sort();
}

/** The hash of the entries the pod holds: a rotation of one of them rolls the pod, of another key does not. */
export function feedSecretHash(input: FeedBuildInput): string {
  const keys = feedSecretKeys(input);
  return hashOf(Object.fromEntries(keys.filter((key) => key in input.secretData).map((k) => [k, input.secretData[k]])));
}

export function buildFeedConfigMap(input: FeedBuildInput): V1ConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: metadata(input.feed, feedChildNames(input.feed.metadata.name).config),
    data: { 'config.json': `${JSON.stringify(input.rawConfig, null, 2)}\n` },
  };
}

/**
 * Where the pod reports its last push per Signed API (src/contract/feed-report.ts). The operator applies no data: the
 * pod's writes are its own field manager's. Its component label has the operator's cache keep its data.
 */
export function buildFeedReportConfigMap(input: FeedBuildInput): V1ConfigMap {
  const own = metadata(input.feed, feedChildNames(input.feed.metadata.name).report);
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { ...own, labels: { ...own.labels, [LABELS.component]: FEED_REPORT_COMPONENT } },
  };
}

export function buildFeedServiceAccount(input: FeedBuildInput): V1ServiceAccount {
  return {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: metadata(input.feed, feedChildNames(input.feed.metadata.name).serviceAccount),
    // Only the pod asks for a token (its report); nothing else running as this account gets one.
    automountServiceAccountToken: false,
  };
}

/** What the feed pod may do: read and replace its own report ConfigMap, nothing else. */
export function feedRules(names: { report: string }) {
  return [
    { apiGroups: [''], resources: ['configmaps'], resourceNames: [names.report], verbs: ['get', 'update', 'patch'] },
  ];
}

export function buildFeedRole(input: FeedBuildInput): V1Role {
  const names = feedChildNames(input.feed.metadata.name);
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: metadata(input.feed, names.role),
    rules: feedRules(names),
  };
}

export function buildFeedRoleBinding(input: FeedBuildInput): V1RoleBinding {
  const names = feedChildNames(input.feed.metadata.name);
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: metadata(input.feed, names.role),
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: names.role },
    subjects: [{ kind: 'ServiceAccount', name: names.serviceAccount, namespace: input.feed.metadata.namespace }],
  };
}

/**
 * One pod: two replicas would push every value twice. A stage (or any config) edit changes the pod template, and
 * the rolling update starts the new pod before the old one stops (maxUnavailable 0): for a moment both push the same
 * values, which the Signed API skips, and no update is missed.
 */
export function buildFeedDeployment(input: FeedBuildInput): V1Deployment {
  const { feed } = input;
  const names = feedChildNames(feed.metadata.name);
  const secretName = input.secretName;
  const secretEnv: V1EnvVar[] = secretName
    ? feedSecretKeys(input).map((key) => ({ name: key, valueFrom: { secretKeyRef: { name: secretName, key } } }))
    : [];
  const probe = (path: string, periodSeconds: number, failureThreshold: number): V1Probe => ({
    httpGet: { path, port: 'metrics' },
    periodSeconds,
    failureThreshold,
    timeoutSeconds: 2,
  });
  const podSpec: V1PodSpec = {
    containers: [
      {
        name: 'feed',
        image: feed.spec.image || input.defaultImage,
        imagePullPolicy: feed.spec.imagePullPolicy ?? 'IfNotPresent',
        args: [
          'feed',
          '-c',
          CONFIG_FILE,
          '--metrics-port',
          String(FEED_METRICS_PORT),
          ...soleCallerApiLimitArgs(feed.spec.apiLimits),
        ],
        // Without -s, the feed takes each ${NAME} of the config from its environment; the last two name its report.
        env: [
          ...secretEnv,
          { name: ENV.namespace, value: feed.metadata.namespace },
          { name: FEED_REPORT_CONFIGMAP_ENV, value: names.report },
        ],
        ports: [{ name: 'metrics', containerPort: FEED_METRICS_PORT, protocol: 'TCP' }],
        livenessProbe: probe('/healthz', 10, 3),
        readinessProbe: probe('/readyz', 5, 2),
        resources: mergeResources(FEED_DEFAULT_RESOURCES, feed.spec.resources),
        securityContext: CONTAINER_SECURITY_CONTEXT,
        volumeMounts: [
          { name: 'config', mountPath: CONFIG_DIR, readOnly: true },
          { name: 'tmp', mountPath: '/tmp' },
        ],
      },
    ],
    securityContext: POD_SECURITY_CONTEXT,
    serviceAccountName: names.serviceAccount,
    // The kubelet's projected token (an hour, rotated, bound to the pod), as the coordinator's: for the report only.
    automountServiceAccountToken: true,
    enableServiceLinks: false,
    volumes: [
      { name: 'config', configMap: { name: names.config } },
      { name: 'tmp', emptyDir: { sizeLimit: '64Mi' } },
    ],
    ...(feed.spec.nodeSelector ? { nodeSelector: feed.spec.nodeSelector } : {}),
    ...(feed.spec.tolerations ? { tolerations: feed.spec.tolerations } : {}),
    ...(feed.spec.affinity && Object.keys(feed.spec.affinity).length > 0 ? { affinity: feed.spec.affinity } : {}),
    ...(feed.spec.priorityClassName ? { priorityClassName: feed.spec.priorityClassName } : {}),
    ...(feed.spec.imagePullSecrets ? { imagePullSecrets: feed.spec.imagePullSecrets } : {}),
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: withScannerSkips(metadata(feed, names.deployment), podSpec, {
      apiToken: 'it writes its report ConfigMap through the Kubernetes API',
      secretsAsEnv: 'one variable per key the config references and never the whole Secret',
    }),
    spec: {
      replicas: 1,
      selector: { matchLabels: feedSelectorLabels(feed) },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: {
        metadata: {
          labels: {
            ...feed.spec.podMetadata?.labels,
            ...feedLabels(feed),
            [LABELS.stage]: input.config.nodeSettings.stage,
          },
          annotations: {
            ...feed.spec.podMetadata?.annotations,
            [ANNOTATIONS.configHash]: hashOf(input.rawConfig),
            [ANNOTATIONS.secretHash]: feedSecretHash(input),
          },
        },
        spec: podSpec,
      },
    },
  };
}

/** Every child, in apply order: the config, report and identity before the Deployment that uses them. */
export function buildFeedChildren(input: FeedBuildInput): DesiredChild[] {
  const child = (kind: ResourceKind, object: unknown) => ({ kind, object: object as Child });
  return [
    child(KINDS.configMap, buildFeedConfigMap(input)),
    child(KINDS.configMap, buildFeedReportConfigMap(input)),
    child(KINDS.serviceAccount, buildFeedServiceAccount(input)),
    child(KINDS.role, buildFeedRole(input)),
    child(KINDS.roleBinding, buildFeedRoleBinding(input)),
    child(KINDS.deployment, buildFeedDeployment(input)),
  ];
}
