// Admission objects, as pure functions: the ValidatingWebhookConfiguration the operator owns, and the coordinator
// fence, ValidatingAdmissionPolicies (CEL, no webhook) that limit what a coordinator's ServiceAccount may create to
// Jobs shaped like its node's worker template and ConfigMaps labelled as that Job's shard inputs. The policies are
// cluster-wide; their parameters are the OracleNodes of the request's namespace themselves.
import { LABELS } from '../../contract/pods.js';
import { FEED_PLURAL } from '../feed/api.js';
import { GROUP, KIND, MANAGED_BY, PLURAL, VERSION } from '../resource.js';
import { DEFAULT_RESOURCES } from './resources.js';

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
            resources: [PLURAL, FEED_PLURAL],
            scope: 'Namespaced',
          },
        ],
      },
    ],
  };
}

// ---------------------------------------------------------------------------------------------------------------
// the coordinator fence
//
// Each policy is evaluated, for a request from a ServiceAccount named like a coordinator, once per OracleNode of
// the request's namespace (paramRef selector {}); its rules hold only when the requester is that node's current
// coordinator (`<node>-<stage>-coordinator`), so other nodes pass it through and a namespace without OracleNodes is
// not affected. The OracleNode is the parameter, and not a ConfigMap the operator would write, for two reasons: a
// parameter can then never be missing or stale while the node exists, and the API server keeps custom-resource
// parameter informers alive where those of built-in kinds such as ConfigMap stop for good once no binding uses the
// kind for a moment (kubernetes/kubernetes#133827), which would turn a fence silently off.

export const FENCE_POLICY_NAMES = {
  jobs: 'oracle-node-coordinator-jobs',
  configMaps: 'oracle-node-coordinator-configmaps',
};

type Validation = { expression: string; message: string };
type Variable = { name: string; expression: string };

const POD = 'object.spec.template.spec';
const CONTAINERS = `${POD}.containers`;

const celString = (text: string) => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

const celMap = (map: Record<string, string>) =>
  `{${Object.entries(map)
    .map(([key, value]) => `${celString(key)}: ${celString(value)}`)
    .join(', ')}}`;

/** Common variables: which node's coordinator asks, and what its worker template looks like. */
function fenceVariables(defaultImage: string): Variable[] {
  // The worker template's resources are the defaults with spec.resources and spec.worker.resources merged over them
  // key by key (builders/resources.ts): three maps, the most specific first.
  const resources = (kind: 'limits' | 'requests'): Variable[] => [
    {
      name: `worker_${kind}`,
      expression: `has(params.spec.worker) && has(params.spec.worker.resources) && has(params.spec.worker.resources.${kind}) ? params.spec.worker.resources.${kind} : {}`,
    },
    {
      name: `node_${kind}`,
      expression: `has(params.spec.resources) && has(params.spec.resources.${kind}) ? params.spec.resources.${kind} : {}`,
    },
    { name: `default_${kind}`, expression: `dyn(${celMap(DEFAULT_RESOURCES.worker[kind])})` },
  ];
  return [
    {
      name: 'stage',
      expression:
        "has(params.spec.config) && has(params.spec.config.nodeSettings) && has(params.spec.config.nodeSettings.stage) ? string(params.spec.config.nodeSettings.stage) : ''",
    },
    { name: 'base', expression: "params.metadata.name + '-' + variables.stage" },
    {
      // The node's current-stage coordinator (a node without a stage has no coordinator yet).
      name: 'mine',
      expression:
        "variables.stage != '' && request.userInfo.username == 'system:serviceaccount:' + params.metadata.namespace + ':' + variables.base + '-coordinator'",
    },
    {
      name: 'image',
      expression: `has(params.spec.image) && params.spec.image != '' ? params.spec.image : ${celString(defaultImage)}`,
    },
    { name: 'secret', expression: "has(params.spec.secretRef) ? params.spec.secretRef.name : ''" },
    // The pod overrides the worker template carries (builders/pod-overrides.ts): spec's, then spec.worker's.
    { name: 'override_volumes', expression: workerOverrides('volumes') },
    { name: 'override_env_from', expression: workerOverrides('envFrom') },
    {
      // spec.telemetry's collector credentials, which every pod of the node reads by reference when it exports.
      name: 'headers',
      expression:
        "has(params.spec.telemetry) && has(params.spec.telemetry.otlpEndpoint) && has(params.spec.telemetry.headersSecretRef) ? params.spec.telemetry.headersSecretRef : dyn({'name': '', 'key': ''})",
    },
    ...resources('limits'),
    ...resources('requests'),
  ];
}

/** Every resource a container sets is one the template sets, at most its value; every one the template sets is set. */
function resourceBounds(kind: 'limits' | 'requests'): string {
  const field = `c.resources.${kind}`;
  const [worker, node, fallback] = [`variables.worker_${kind}`, `variables.node_${kind}`, `variables.default_${kind}`];
  const bound = (k: string) =>
    `string(${k} in ${worker} ? ${worker}[${k}] : (${k} in ${node} ? ${node}[${k}] : ${fallback}[${k}]))`;
  return [
    `${CONTAINERS}.all(c, !has(${field}) || ${field}.all(k, (k in ${worker} || k in ${node} || k in ${fallback}) && quantity(string(${field}[k])).compareTo(quantity(${bound('k')})) <= 0))`,
    `[${worker}, ${node}, ${fallback}].all(m, m.all(k, ${CONTAINERS}.all(c, has(${field}) && k in ${field})))`,
  ].join(' && ');
}

/** spec's list of a pod override followed by spec.worker's, as the builder lays them (either may be absent). */
const workerOverrides = (field: 'volumes' | 'envFrom') =>
  `(has(params.spec.${field}) ? params.spec.${field} : []) + (has(params.spec.worker) && has(params.spec.worker.${field}) ? params.spec.worker.${field} : [])`;

/**
 * `a` and `b` (maps) hold the same `fields` and nothing else, a field left out counting as its value in `fields`: the
 * API server writes a Job's volumes back with its defaults filled in and its zero values dropped, the OracleNode's
 * stay as the user wrote them.
 */
function sameFields(a: string, b: string, fields: Record<string, string>): string {
  const names = Object.keys(fields);
  const list = `[${names.map((name) => `'${name}'`).join(', ')}]`;
  const value = (map: string, name: string) => `(has(${map}.${name}) ? ${map}.${name} : ${fields[name]})`;
  return [
    // dyn(): the type checker reads a Job's volume source as an object, whose keys CEL ranges over only as a map.
    `dyn(${a}).all(k, k in ${list})`,
    `dyn(${b}).all(k, k in ${list})`,
    ...names.map((name) => `${value(a, name)} == ${value(b, name)}`),
  ].join(' && ');
}

/** The same quantities (by value: the API server writes 1024Mi back as 1Gi) under the same keys. */
const sameQuantities = (a: string, b: string) =>
  `dyn(${a}).all(k, k in dyn(${b}) && quantity(string(dyn(${a})[k])).compareTo(quantity(string(dyn(${b})[k]))) == 0) && dyn(${b}).all(k, k in dyn(${a}))`;

/** The claim template of a generic ephemeral volume: the same claim, its quantities by value. */
function sameClaimTemplate(a: string, b: string): string {
  const own = "['resources', 'volumeMode']";
  const quantities = (template: string, kind: 'requests' | 'limits') =>
    `(has(${template}.spec.resources) && has(${template}.spec.resources.${kind}) ? ${template}.spec.resources.${kind} : dyn({}))`;
  return [
    `(has(${a}.metadata) ? ${a}.metadata : dyn({})) == (has(${b}.metadata) ? ${b}.metadata : dyn({}))`,
    `dyn(${a}.spec).all(k, k in ${own} || (k in dyn(${b}.spec) && dyn(${a}.spec)[k] == dyn(${b}.spec)[k]))`,
    `dyn(${b}.spec).all(k, k in ${own} || k in dyn(${a}.spec))`,
    `(has(${a}.spec.volumeMode) ? ${a}.spec.volumeMode : 'Filesystem') == (has(${b}.spec.volumeMode) ? ${b}.spec.volumeMode : 'Filesystem')`,
    sameQuantities(quantities(a, 'requests'), quantities(b, 'requests')),
    sameQuantities(quantities(a, 'limits'), quantities(b, 'limits')),
  ].join(' && ');
}

const CONFIG_MAP_FIELDS = { name: "''", items: 'dyn([])', optional: 'false' };

/** A source of a projected override volume: a ConfigMap's, a token's, a trust bundle's, the pod's own metadata. */
const sameProjectedSource = (a: string, b: string) =>
  [
    `(has(${a}.configMap) && has(${b}.configMap) && ${sameFields(`${a}.configMap`, `${b}.configMap`, CONFIG_MAP_FIELDS)})`,
    `(has(${a}.downwardAPI) && has(${b}.downwardAPI))`,
    `(has(${a}.serviceAccountToken) && has(${b}.serviceAccountToken) && ${sameFields(`${a}.serviceAccountToken`, `${b}.serviceAccountToken`, { audience: "''", path: "''", expirationSeconds: '3600' })})`,
    `(has(${a}.clusterTrustBundle) && has(${b}.clusterTrustBundle) && ${a}.clusterTrustBundle == ${b}.clusterTrustBundle)`,
  ].join(' || ');

/** Projected volumes with the same mode and the same sources, in any order. */
function sameProjected(a: string, b: string): string {
  const sources = (projected: string) => `(has(${projected}.sources) ? ${projected}.sources : dyn([]))`;
  return [
    `(has(${a}.defaultMode) ? ${a}.defaultMode : 420) == (has(${b}.defaultMode) ? ${b}.defaultMode : 420)`,
    `${sources(a)}.all(x, ${sources(b)}.exists(y, ${sameProjectedSource('x', 'y')}))`,
    `${sources(b)}.all(y, ${sources(a)}.exists(x, ${sameProjectedSource('x', 'y')}))`,
  ].join(' && ');
}

/**
 * Job volume `v` is the node's override volume `s` (same name, same type, same source): what a coordinator may
 * mount beyond its engine's own is exactly what spec.volumes and spec.worker.volumes name, never another claim,
 * ConfigMap or CSI volume (a Secrets Store CSI volume of another SecretProviderClass would be another app's secrets).
 * The types are those the CRD admits in an override (api/v1alpha1.ts, OVERRIDE_VOLUME_TYPES); an emptyDir and the
 * pod's own metadata (downwardAPI) reach nothing outside the pod, so any is admitted.
 */
const sameOverrideVolume = (v: string, s: string) =>
  [
    `${s}.name == ${v}.name`,
    `(${[
      `(has(${s}.csi) && has(${v}.csi) && ${sameFields(`${v}.csi`, `${s}.csi`, { driver: "''", readOnly: 'false', fsType: "''", volumeAttributes: 'dyn({})', nodePublishSecretRef: 'dyn({})' })})`,
      `(has(${s}.configMap) && has(${v}.configMap) && ${sameFields(`${v}.configMap`, `${s}.configMap`, { ...CONFIG_MAP_FIELDS, defaultMode: '420' })})`,
      `(has(${s}.persistentVolumeClaim) && has(${v}.persistentVolumeClaim) && ${sameFields(`${v}.persistentVolumeClaim`, `${s}.persistentVolumeClaim`, { claimName: "''", readOnly: 'false' })})`,
      `(has(${s}.ephemeral) && has(${v}.ephemeral) && ${sameClaimTemplate(`${v}.ephemeral.volumeClaimTemplate`, `${s}.ephemeral.volumeClaimTemplate`)})`,
      `(has(${s}.projected) && has(${v}.projected) && ${sameProjected(`${v}.projected`, `${s}.projected`)})`,
    ].join(' || ')})`,
  ].join(' && ');

/** The engine's own volumes: config, scratch, the Job's shard input, the keys of the node's Secret as files. */
const ENGINE_VOLUME = (v: string) =>
  `has(${v}.emptyDir) || has(${v}.downwardAPI) || (has(${v}.configMap) && (${v}.configMap.name == variables.base + '-config' || ${v}.configMap.name == object.metadata.name)) || (has(${v}.projected) && has(${v}.projected.sources) && ${v}.projected.sources.all(s, has(s.secret) && s.secret.name == variables.secret && has(s.secret.items) && size(s.secret.items) > 0))`;

const WORKER_LABELS = (subject: string) =>
  `has(${subject}.labels) && '${LABELS.name}' in ${subject}.labels && ${subject}.labels['${LABELS.name}'] == params.metadata.name && '${LABELS.stage}' in ${subject}.labels && ${subject}.labels['${LABELS.stage}'] == variables.stage && '${LABELS.component}' in ${subject}.labels && ${subject}.labels['${LABELS.component}'] == 'worker'`;

const JOB_RULES: Validation[] = [
  {
    expression: `${POD}.serviceAccountName == variables.base + '-worker'`,
    message: "a coordinator's Jobs run as its node's worker ServiceAccount",
  },
  {
    expression: `${CONTAINERS}.all(c, c.image == variables.image) && (!has(${POD}.initContainers) || size(${POD}.initContainers) == 0) && (!has(${POD}.ephemeralContainers) || size(${POD}.ephemeralContainers) == 0)`,
    message: "a coordinator's Jobs run only its node's worker image, without init containers",
  },
  {
    // With spec.secretRef.as Files the worker's keys are a projected volume of the node's Secret, naming its keys
    // (a source without items would project every key).
    expression: `!has(${POD}.volumes) || ${POD}.volumes.all(v, ${ENGINE_VOLUME('v')} || variables.override_volumes.exists(s, ${sameOverrideVolume('v', 's')}))`,
    message:
      "a coordinator's Jobs mount only the node's config, their own shard input, emptyDirs, named keys of the node's Secret and the node's worker volumes (spec.volumes, spec.worker.volumes)",
  },
  {
    expression: `!(has(${POD}.hostNetwork) && ${POD}.hostNetwork) && !(has(${POD}.hostPID) && ${POD}.hostPID) && !(has(${POD}.hostIPC) && ${POD}.hostIPC) && ${CONTAINERS}.all(c, has(c.securityContext) && !(has(c.securityContext.privileged) && c.securityContext.privileged) && has(c.securityContext.allowPrivilegeEscalation) && !c.securityContext.allowPrivilegeEscalation && (!has(c.securityContext.capabilities) || !has(c.securityContext.capabilities.add) || size(c.securityContext.capabilities.add) == 0))`,
    message:
      "a coordinator's Jobs are unprivileged: no host namespaces, no privilege escalation, no added capabilities",
  },
  {
    expression: `${CONTAINERS}.all(c, !has(c.env) || c.env.all(e, !has(e.valueFrom) || has(e.valueFrom.fieldRef) || (has(e.valueFrom.secretKeyRef) && (e.valueFrom.secretKeyRef.name == variables.secret || (e.valueFrom.secretKeyRef.name == variables.headers.name && e.valueFrom.secretKeyRef.key == variables.headers.key)))))`,
    message: "a coordinator's Jobs read only their node's Secret (and spec.telemetry's headers key)",
  },
  {
    // The operator never gives a pod a whole Secret: envFrom is only the ConfigMaps the node's spec names.
    expression: `${CONTAINERS}.all(c, !has(c.envFrom) || c.envFrom.all(e, has(e.configMapRef) && !has(e.secretRef) && variables.override_env_from.exists(f, f.configMapRef.name == e.configMapRef.name && (has(f.prefix) ? f.prefix : '') == (has(e.prefix) ? e.prefix : ''))))`,
    message:
      "a coordinator's Jobs take envFrom only from the ConfigMaps of the node's spec.envFrom and spec.worker.envFrom",
  },
  {
    expression: `has(object.spec.parallelism) && has(params.spec.config.chains) && params.spec.config.chains.exists(chain, object.spec.parallelism <= chain.maxConcurrency)`,
    message: "a coordinator's Jobs run at most the node's maxConcurrency pods at once",
  },
  {
    expression: `${resourceBounds('limits')} && ${resourceBounds('requests')}`,
    message: "a coordinator's Jobs ask for at most the worker template's resources",
  },
  {
    expression: `${WORKER_LABELS('object.metadata')} && ${WORKER_LABELS('object.spec.template.metadata')}`,
    message: "a coordinator's Jobs carry its node's worker labels",
  },
];

const CONFIG_MAP_RULES: Validation[] = [
  {
    expression: `${WORKER_LABELS('object.metadata')} && '${LABELS.cycle}' in object.metadata.labels && object.metadata.labels['${LABELS.cycle}'] == object.metadata.name`,
    message: "a coordinator creates only ConfigMaps labelled as its worker Job's shard inputs",
  },
  {
    expression: `has(object.metadata.ownerReferences) && size(object.metadata.ownerReferences) > 0 && object.metadata.ownerReferences.all(o, o.apiVersion == 'batch/v1' && o.kind == 'Job' && o.name == object.metadata.name) && !has(object.binaryData)`,
    message: "a coordinator's shard inputs are owned by their worker Job",
  },
];

export type AdmissionPolicy = {
  apiVersion: 'admissionregistration.k8s.io/v1';
  kind: 'ValidatingAdmissionPolicy' | 'ValidatingAdmissionPolicyBinding';
  metadata: { name: string; labels: Record<string, string> };
  spec: Record<string, unknown>;
};

const fenceLabels = () => ({ [LABELS.managedBy]: MANAGED_BY, [LABELS.component]: 'coordinator-fence' });

/**
 * The fence, once per cluster: two policies (Jobs; ConfigMaps) and their bindings. `defaultImage` is the image the
 * operator gives workloads when an OracleNode names none (its --workload image setting).
 */
export function buildCoordinatorFence(defaultImage: string): AdmissionPolicy[] {
  const policy = (name: string, resource: Record<string, unknown>, rules: Validation[]): AdmissionPolicy => ({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name, labels: fenceLabels() },
    spec: {
      failurePolicy: 'Fail',
      paramKind: { apiVersion: `${GROUP}/${VERSION}`, kind: KIND },
      matchConstraints: { resourceRules: [resource] },
      matchConditions: [
        {
          name: 'coordinator-service-account',
          expression: `request.userInfo.username.startsWith('system:serviceaccount:' + request.namespace + ':') && request.userInfo.username.endsWith('-coordinator')`,
        },
      ],
      variables: fenceVariables(defaultImage),
      validations: rules.map((rule) => ({
        expression: `!variables.mine || (${rule.expression})`,
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
      // No namespace: every OracleNode of the request's namespace is a parameter.
      paramRef: { selector: {}, parameterNotFoundAction: 'Allow' },
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
