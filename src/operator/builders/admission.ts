// Admission objects, as pure functions: the ValidatingWebhookConfiguration the operator owns, and the coordinator
// fence, a ValidatingAdmissionPolicy (CEL, no webhook) that limits what a coordinator's ServiceAccount may create
// to Jobs shaped like its node's worker template and ConfigMaps labelled as that Job's shard inputs. The policy is
// cluster-wide and reads, per node and stage, a parameter ConfigMap the controller applies beside the coordinator
// (buildFenceConfigMap): the node's worker image, ServiceAccount, config ConfigMap, Secret and bounds.
import type { V1ConfigMap } from '@kubernetes/client-node';
import { GROUP, LABELS, MANAGED_BY, PLURAL, VERSION } from '../resource.js';
import { type BuildInput, childNames, image, labels, ownerReference, resourcesFor } from './common.js';

// ---------------------------------------------------------------------------------------------------------------
// the validating webhook

export const WEBHOOK_NAME = 'oraclenode.validate.oracle-node.io';
export const WEBHOOK_PATH = '/validate-oraclenode';

/** Where the API server reaches the webhook: the operator's Service (in a cluster) or a URL (a host-run operator). */
export type WebhookTarget =
  | { service: { namespace: string; name: string; port: number } }
  | { url: string /* https://HOST:PORT */ };

export type WebhookConfigurationInput = {
  name: string;
  target: WebhookTarget;
  /** PEM bundle the API server verifies the serving certificate with. */
  caBundle: string;
  failurePolicy: 'Fail' | 'Ignore';
  timeoutSeconds: number;
  /** The operator's watch namespaces; empty: all namespaces. */
  watchNamespaces: string[];
  /** Never blocked: the operator's own namespace and kube-system. */
  exemptNamespaces: string[];
};

export type ValidatingWebhookConfiguration = {
  apiVersion: 'admissionregistration.k8s.io/v1';
  kind: 'ValidatingWebhookConfiguration';
  metadata: { name: string; labels: Record<string, string> };
  webhooks: Record<string, unknown>[];
};

const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

/** The namespaces the webhook sees: the watch namespaces (or all), never the exempt ones. */
export function webhookNamespaceSelector(watchNamespaces: string[], exemptNamespaces: string[]) {
  const exempt = [...new Set(exemptNamespaces)].sort();
  const watched = [...new Set(watchNamespaces)].filter((namespace) => !exempt.includes(namespace)).sort();
  if (watchNamespaces.length > 0) {
    // Every watched namespace exempt: a selector that matches nothing (In needs at least one value).
    return {
      matchExpressions: [
        watched.length > 0
          ? { key: NAMESPACE_NAME_LABEL, operator: 'In', values: watched }
          : { key: NAMESPACE_NAME_LABEL, operator: 'DoesNotExist' },
      ],
    };
  }
  return { matchExpressions: [{ key: NAMESPACE_NAME_LABEL, operator: 'NotIn', values: exempt }] };
}

/** The webhook's URL host names for its serving certificate. */
export function servingNames(target: WebhookTarget, clusterDomain = 'cluster.local') {
  if ('service' in target) {
    const { namespace, name } = target.service;
    return {
      dnsNames: [`${name}.${namespace}.svc`, `${name}.${namespace}.svc.${clusterDomain}`, `${name}.${namespace}`, name],
      ipAddresses: [],
    };
  }
  const host = new URL(target.url).hostname.replace(/^\[|\]$/g, '');
  const isIp = /^[\d.]+$/.test(host) || host.includes(':');
  return isIp ? { dnsNames: [], ipAddresses: [host] } : { dnsNames: [host], ipAddresses: [] };
}

export function buildWebhookConfiguration(input: WebhookConfigurationInput): ValidatingWebhookConfiguration {
  const clientConfig: Record<string, unknown> = {
    caBundle: Buffer.from(input.caBundle, 'utf8').toString('base64'),
  };
  if ('service' in input.target) {
    clientConfig.service = { ...input.target.service, path: WEBHOOK_PATH };
  } else {
    clientConfig.url = `${input.target.url.replace(/\/+$/, '')}${WEBHOOK_PATH}`;
  }
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: input.name, labels: { [LABELS.managedBy]: MANAGED_BY, [LABELS.component]: 'webhook' } },
    webhooks: [
      {
        name: WEBHOOK_NAME,
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        failurePolicy: input.failurePolicy,
        timeoutSeconds: input.timeoutSeconds,
        matchPolicy: 'Equivalent',
        clientConfig,
        namespaceSelector: webhookNamespaceSelector(input.watchNamespaces, input.exemptNamespaces),
        rules: [
          {
            apiGroups: [GROUP],
            apiVersions: [VERSION],
            operations: ['CREATE', 'UPDATE'],
            resources: [PLURAL],
            scope: 'Namespaced',
          },
        ],
      },
    ],
  };
}

// ---------------------------------------------------------------------------------------------------------------
// the coordinator fence

export const FENCE_LABEL = 'oracle-node.io/fence';
export const FENCE_LABEL_VALUE = 'coordinator';
export const FENCE_POLICY_NAMES = {
  jobs: 'oracle-node-coordinator-jobs',
  configMaps: 'oracle-node-coordinator-configmaps',
};
/** Resource names the fence bounds; a worker container may set only these, each at most the template's value. */
const BOUNDED_RESOURCES = ['cpu', 'memory', 'ephemeral-storage'];

/** The fence's parameters for one node and stage: what its coordinator's worker Jobs must look like. */
export function buildFenceConfigMap(input: BuildInput): V1ConfigMap & { metadata: { name: string } } {
  const stage = input.config.nodeSettings.stage;
  const names = childNames(input.node.metadata.name, stage);
  const namespace = input.node.metadata.namespace;
  const resources = resourcesFor(input, input.node.spec.worker?.resources);
  const data: Record<string, string> = {
    coordinator: `system:serviceaccount:${namespace}:${names.coordinator}`,
    node: input.node.metadata.name,
    workerServiceAccount: names.worker,
    image: image(input),
    configMap: names.config,
    secretName: input.secretName ?? '',
    maxParallelism: String(Math.max(1, ...input.config.chains.map((chain) => chain.maxConcurrency))),
  };
  for (const [kind, values] of [
    ['limits', resources.limits],
    ['requests', resources.requests],
  ] as const) {
    for (const [resource, quantity] of Object.entries(values ?? {}))
      if (BOUNDED_RESOURCES.includes(resource)) data[`${kind}.${resource}`] = String(quantity);
  }
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: `${names.coordinator}-fence`,
      namespace,
      labels: { ...labels(input.node, stage, 'coordinator'), [FENCE_LABEL]: FENCE_LABEL_VALUE },
      ownerReferences: [ownerReference(input.node)],
    },
    data,
  };
}

type Validation = { expression: string; message: string; reason?: string };

const POD = 'object.spec.template.spec';
const containers = `${POD}.containers`;

/** Resources of every container: only the bounded kinds, each at most the parameter; the parameter's kinds set. */
function resourceBounds(kind: 'limits' | 'requests'): string {
  const field = `c.resources.${kind}`;
  return [
    `${containers}.all(c, !has(${field}) || ${field}.all(k, ('${kind}.' + k) in params.data && quantity(string(${field}[k])).compareTo(quantity(params.data['${kind}.' + k])) <= 0))`,
    `params.data.all(k, !k.startsWith('${kind}.') || ${containers}.all(c, has(${field}) && k.substring(${kind.length + 1}) in ${field}))`,
  ].join(' && ');
}

const JOB_RULES: Validation[] = [
  {
    expression: `${POD}.serviceAccountName == params.data.workerServiceAccount`,
    message: "a coordinator's Jobs run as its node's worker ServiceAccount",
  },
  {
    expression: `${containers}.all(c, c.image == params.data.image) && (!has(${POD}.initContainers) || size(${POD}.initContainers) == 0) && (!has(${POD}.ephemeralContainers) || size(${POD}.ephemeralContainers) == 0)`,
    message: "a coordinator's Jobs run only its node's worker image, without init containers",
  },
  {
    expression: `!has(${POD}.volumes) || ${POD}.volumes.all(v, has(v.emptyDir) || (has(v.configMap) && (v.configMap.name == params.data.configMap || v.configMap.name == object.metadata.name)))`,
    message: "a coordinator's Jobs mount only the node's config, their own shard input and emptyDirs",
  },
  {
    expression: `!(has(${POD}.hostNetwork) && ${POD}.hostNetwork) && !(has(${POD}.hostPID) && ${POD}.hostPID) && !(has(${POD}.hostIPC) && ${POD}.hostIPC) && ${containers}.all(c, has(c.securityContext) && !(has(c.securityContext.privileged) && c.securityContext.privileged) && has(c.securityContext.allowPrivilegeEscalation) && !c.securityContext.allowPrivilegeEscalation && (!has(c.securityContext.capabilities) || !has(c.securityContext.capabilities.add) || size(c.securityContext.capabilities.add) == 0))`,
    message:
      "a coordinator's Jobs are unprivileged: no host namespaces, no privilege escalation, no added capabilities",
  },
  {
    expression: `${containers}.all(c, (!has(c.envFrom) || c.envFrom.all(e, has(e.secretRef) && !has(e.configMapRef) && e.secretRef.name == params.data.secretName)) && (!has(c.env) || c.env.all(e, !has(e.valueFrom) || has(e.valueFrom.fieldRef))))`,
    message: "a coordinator's Jobs read only their node's Secret",
  },
  {
    expression: `has(object.spec.parallelism) && object.spec.parallelism <= int(params.data.maxParallelism)`,
    message: "a coordinator's Jobs run at most the node's maxConcurrency pods at once",
  },
  {
    expression: `${resourceBounds('limits')} && ${resourceBounds('requests')}`,
    message: "a coordinator's Jobs ask for at most the worker template's resources",
  },
  {
    expression: `has(object.metadata.labels) && '${LABELS.name}' in object.metadata.labels && object.metadata.labels['${LABELS.name}'] == params.data.node && '${LABELS.component}' in object.metadata.labels && object.metadata.labels['${LABELS.component}'] == 'worker'`,
    message: "a coordinator's Jobs carry its node's worker labels",
  },
];

const CONFIG_MAP_RULES: Validation[] = [
  {
    expression: `has(object.metadata.labels) && '${LABELS.name}' in object.metadata.labels && object.metadata.labels['${LABELS.name}'] == params.data.node && '${LABELS.component}' in object.metadata.labels && object.metadata.labels['${LABELS.component}'] == 'worker' && '${LABELS.cycle}' in object.metadata.labels && object.metadata.labels['${LABELS.cycle}'] == object.metadata.name && !('${FENCE_LABEL}' in object.metadata.labels)`,
    message: "a coordinator creates only ConfigMaps labelled as its worker Job's shard inputs",
  },
  {
    expression: `has(object.metadata.ownerReferences) && size(object.metadata.ownerReferences) > 0 && object.metadata.ownerReferences.all(o, o.apiVersion == 'batch/v1' && o.kind == 'Job' && o.name == object.metadata.name) && !has(object.binaryData)`,
    message: "a coordinator's shard inputs are owned by their worker Job",
  },
];

type AdmissionPolicy = {
  apiVersion: 'admissionregistration.k8s.io/v1';
  kind: 'ValidatingAdmissionPolicy' | 'ValidatingAdmissionPolicyBinding';
  metadata: { name: string; labels: Record<string, string> };
  spec: Record<string, unknown>;
};

const fenceLabels = () => ({ [LABELS.managedBy]: MANAGED_BY, [LABELS.component]: 'coordinator-fence' });

/**
 * The fence, once per cluster: two policies (Jobs; ConfigMaps) and their bindings. A request is checked only when
 * it comes from a ServiceAccount named like a coordinator, against every fence parameter of its namespace; each
 * parameter's rules apply only to the coordinator it names, so other nodes' parameters pass it through, and a
 * namespace without OracleNodes (no parameter) is not affected.
 */
export function buildCoordinatorFence(): AdmissionPolicy[] {
  const policy = (name: string, resource: Record<string, unknown>, rules: Validation[]): AdmissionPolicy => ({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name, labels: fenceLabels() },
    spec: {
      failurePolicy: 'Fail',
      paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
      matchConstraints: { resourceRules: [resource] },
      matchConditions: [
        {
          name: 'coordinator-service-account',
          expression:
            "request.userInfo.username.startsWith('system:serviceaccount:') && request.userInfo.username.endsWith('-coordinator')",
        },
      ],
      validations: rules.map((rule) => ({
        expression: `request.userInfo.username != params.data.coordinator || (${rule.expression})`,
        message: rule.message,
        reason: 'Forbidden',
      })),
    },
  });
  const binding = (name: string): AdmissionPolicy => ({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name, labels: fenceLabels() },
    spec: {
      policyName: name,
      validationActions: ['Deny'],
      // No namespace: the parameters are read from the request's namespace.
      paramRef: {
        selector: { matchLabels: { [FENCE_LABEL]: FENCE_LABEL_VALUE } },
        parameterNotFoundAction: 'Allow',
      },
    },
  });
  return [
    policy(
      FENCE_POLICY_NAMES.jobs,
      { apiGroups: ['batch'], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['jobs'] },
      JOB_RULES,
    ),
    binding(FENCE_POLICY_NAMES.jobs),
    policy(
      FENCE_POLICY_NAMES.configMaps,
      { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] },
      CONFIG_MAP_RULES,
    ),
    binding(FENCE_POLICY_NAMES.configMaps),
  ];
}
