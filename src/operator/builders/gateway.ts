// The gateway Deployment, its Service, (above one replica) a PodDisruptionBudget and (with spec.gateway.autoscaling)
// a HorizontalPodAutoscaler: created when any of the config's gateways is enabled; one process serves all of them.
// Each gateway process enforces the config's maxConcurrency on its own, so the limit is per replica: the node as a
// whole admits up to replicas x maxConcurrency calls at once (docs/scaling.md).
import type {
  V1Container,
  V1Deployment,
  V1PodDisruptionBudget,
  V1PodSpec,
  V1Secret,
  V1Service,
  V1TopologySpreadConstraint,
  V2HorizontalPodAutoscaler,
  V2MetricSpec,
} from '@kubernetes/client-node';
import { DEFAULT_GATEWAY_SERVER_PORT } from '../../config/index.js';
import { CALLERS_DIR, CALLERS_VOLUME, CONFIG_FILE, GATEWAY_METRICS_PORT, LABELS } from '../../contract/pods.js';
// node-key.ts, not wallet.ts: the operator never loads ethers.
import { deriveNodePrivateKey } from '../../protocol/node-key.js';
import { enabledGateways, gatewayServerPort } from '../config.js';
import { DEFAULT_TARGET_CPU_UTILIZATION } from '../resource.js';
import { apiLimitArgs, nodeApiLimitShares } from './api-limits.js';
import {
  type BuildInput,
  basePodSpec,
  childNames,
  engineContainer,
  labels,
  metadata,
  podTemplateMetadata,
  SIGNING_KEY_SECRET_KEY,
  selectorLabels,
} from './common.js';
import { NODE_SECRETS_AS_ENV, withScannerSkips } from './scanner-skips.js';

type Named<T> = T & { metadata: { name: string } };

export function gatewayEnabled(input: BuildInput): boolean {
  return enabledGateways(input.config).length > 0;
}

/** Whether a gateway that signs with the node key (signed-data, OEV) is on. */
export function gatewaySigns(config: BuildInput['config']): boolean {
  return enabledGateways(config).some((gateway) => gateway === 'httpSignedDataGateway' || gateway === 'oevGateway');
}

/**
 * The node key of a signing gateway (m/44'/60'/0'/0/0 of the validated config's mnemonic), or undefined when no
 * gateway signs: what BuildInput.signingKey holds. Pure (a few ms of PBKDF2).
 */
export function gatewaySigningKey(config: BuildInput['config']): string | undefined {
  return gatewaySigns(config) ? deriveNodePrivateKey(config.nodeSettings.nodeWalletMnemonic) : undefined;
}

/**
 * The operator's own Secret holding the node key, derived from the mnemonic, which the gateway's pods read instead of
 * the mnemonic. Owned by the OracleNode (deleted with it) and not stage-qualified (one key per node); applied again
 * when the mnemonic changes. Only with a signing gateway on.
 */
export function buildSigningKeySecret(input: BuildInput): Named<V1Secret> {
  if (!input.signingKey) throw new Error('buildSigningKeySecret needs the derived signing key');
  const names = childNames(input.node.metadata.name, input.config.nodeSettings.stage);
  const meta = metadata(input, names.signingKey, 'signing-key');
  // One per node, for every stage: the stage label would move it between stages.
  const { 'oracle-node.io/stage': _stage, ...labels } = meta.labels;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { ...meta, labels },
    type: 'Opaque',
    data: { [SIGNING_KEY_SECRET_KEY]: Buffer.from(input.signingKey, 'utf8').toString('base64') },
  };
}

export function gatewayContainerPort(input: BuildInput): number {
  return gatewayServerPort(input.config) ?? DEFAULT_GATEWAY_SERVER_PORT;
}

/** The pod's port for health and metrics; never the gateway's own port. */
export function gatewayMetricsPort(input: BuildInput): number {
  return gatewayContainerPort(input) === GATEWAY_METRICS_PORT ? GATEWAY_METRICS_PORT + 1 : GATEWAY_METRICS_PORT;
}

/** The port of the gateway's Services: spec.gateway.service.port, else the server's default. */
export function gatewayServicePort(input: BuildInput): number {
  return input.node.spec.gateway?.service?.port ?? DEFAULT_GATEWAY_SERVER_PORT;
}

export function gatewayReplicas(input: BuildInput): number {
  return input.node.spec.gateway?.replicas ?? 1;
}

/** spec.gateway.autoscaling, when set: the HPA then owns the replica count. */
export function gatewayAutoscaling(input: BuildInput) {
  return input.node.spec.gateway?.autoscaling;
}

/** Least replicas the gateway runs with: the HPA's minimum when autoscaling, else spec.gateway.replicas. */
export function gatewayMinReplicas(input: BuildInput): number {
  const autoscaling = gatewayAutoscaling(input);
  return autoscaling ? (autoscaling.minReplicas ?? gatewayReplicas(input)) : gatewayReplicas(input);
}

/** Most replicas the gateway can run with: a PodDisruptionBudget is added when this is above one. */
export function gatewayMaxReplicas(input: BuildInput): number {
  return gatewayAutoscaling(input)?.maxReplicas ?? gatewayReplicas(input);
}

export function buildGatewayDeployment(input: BuildInput): Named<V1Deployment> {
  const stage = input.config.nodeSettings.stage;
  const names = childNames(input.node.metadata.name, stage);
  const port = gatewayContainerPort(input);
  const metricsPort = gatewayMetricsPort(input);
  // Health and metrics on a port of their own, which the Service does not expose: a LoadBalancer in front of
  // the gateway must not publish /metrics to its callers.
  const args = [
    'gateway',
    '-c',
    CONFIG_FILE,
    '--port',
    String(port),
    '--metrics-port',
    String(metricsPort),
    ...callerArgs(input),
    // Each replica's share of the APIs' budgets: redivided when the replicas (or the HPA's maximum) change.
    ...apiLimitArgs(nodeApiLimitShares(input.node, input.config, gatewayMaxReplicas(input)), 'gateway'),
  ];
  const container = engineContainer(input, 'gateway', args, 'gateway');
  if (input.node.spec.gateway?.callers)
    container.volumeMounts = [
      ...(container.volumeMounts ?? []),
      { name: CALLERS_VOLUME, mountPath: CALLERS_DIR, readOnly: true },
    ];
  container.ports = [
    { name: 'http', containerPort: port, protocol: 'TCP' },
    { name: 'metrics', containerPort: metricsPort, protocol: 'TCP' },
  ];
  container.livenessProbe = {
    httpGet: { path: '/healthz', port: 'metrics' },
    periodSeconds: 10,
    timeoutSeconds: 2,
    failureThreshold: 3,
  };
  container.readinessProbe = {
    httpGet: { path: '/readyz', port: 'metrics' },
    periodSeconds: 5,
    timeoutSeconds: 2,
    failureThreshold: 2,
  };
  const podSpec = gatewayPodSpec(input, container);
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: withScannerSkips(metadata(input, names.gateway, 'gateway'), podSpec, {
      secretsAsEnv: NODE_SECRETS_AS_ENV,
    }),
    spec: {
      // With autoscaling the HPA sets the replica count; applying one here would fight it on every reconcile.
      ...(gatewayAutoscaling(input) ? {} : { replicas: gatewayReplicas(input) }),
      selector: { matchLabels: selectorLabels(input.node, stage, 'gateway') },
      // Never below the wanted capacity during a rollout of the gateway itself.
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      revisionHistoryLimit: 3,
      template: {
        metadata: podTemplateMetadata(input, 'gateway', labels(input.node, stage, 'gateway')),
        spec: podSpec,
      },
    },
  };
}

/**
 * Nodes first, then zones, both ScheduleAnyway: a replica is never left pending for want of a spread, and the
 * revision's own pods are counted (pod-template-hash), so a rollout does not skew the new ReplicaSet.
 */
export function defaultGatewaySpread(input: BuildInput): V1TopologySpreadConstraint[] {
  const stage = input.config.nodeSettings.stage;
  return ['kubernetes.io/hostname', 'topology.kubernetes.io/zone'].map((topologyKey) => ({
    maxSkew: 1,
    topologyKey,
    whenUnsatisfiable: 'ScheduleAnyway',
    labelSelector: { matchLabels: selectorLabels(input.node, stage, 'gateway') },
    matchLabelKeys: ['pod-template-hash'],
  }));
}

/** The callers' flags of spec.gateway.callers (src/cli/caller-options.ts): their keys are files of CALLERS_DIR. */
export function callerArgs(input: BuildInput): string[] {
  const callers = input.node.spec.gateway?.callers;
  if (!callers) return [];
  return [
    '--callers',
    CALLERS_DIR,
    ...Object.entries(callers.rates ?? {})
      .sort(([a], [b]) => a.localeCompare(b))
      .flatMap(([name, rate]) => ['--caller-rate', `${name}=${rate}`]),
    ...(callers.defaultRate ? ['--default-caller-rate', callers.defaultRate] : []),
  ];
}

/** The gateway makes no Kubernetes call: its own ServiceAccount, no token. */
function gatewayPodSpec(input: BuildInput, container: V1Container): V1PodSpec {
  const names = childNames(input.node.metadata.name, input.config.nodeSettings.stage);
  const spec = basePodSpec(input, [container], {
    workload: 'gateway',
    serviceAccountName: names.gateway,
    apiToken: false,
  });
  const callers = input.node.spec.gateway?.callers;
  // The callers' keys reach the gateway pods only, read-only, owner-readable; the kubelet updates the files when the
  // Secret changes, and the gateway reads them again (no rollout for a rotated key).
  if (callers)
    spec.volumes = [
      ...(spec.volumes ?? []),
      { name: CALLERS_VOLUME, secret: { secretName: callers.secretRef.name, defaultMode: 0o400 } },
    ];
  const spread = input.node.spec.gateway?.topologySpreadConstraints ?? defaultGatewaySpread(input);
  if (spread.length > 0) spec.topologySpreadConstraints = structuredClone(spread);
  return spec;
}

/**
 * The node's gateway Service (`<node>-gateway`, spec.gateway.service.type): one per node, not stage-qualified, so
 * its name, ClusterIP and load-balancer address outlive stage rollouts. It selects the pods of `servingStage`: the
 * rollout switches it to the new stage once that stage's gateway is Ready (reconcile/rollout.ts gatewayServiceStage).
 * There is no Service per stage: `<node>-<stage>-gateway` would be node `<node>-<stage>`'s Service (a stage's
 * gateway is reached for a test through its Deployment: `kubectl port-forward deploy/<node>-<stage>-gateway`).
 */
export function buildNodeGatewayService(input: BuildInput, servingStage: string): Named<V1Service> {
  const names = childNames(input.node.metadata.name, input.config.nodeSettings.stage);
  const meta = metadata(input, names.service, 'gateway');
  // The stage label would make it one stage's child, removed with that stage.
  const { [LABELS.stage]: _stage, ...labels } = meta.labels;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { ...meta, labels },
    spec: {
      type: input.node.spec.gateway?.service?.type ?? 'ClusterIP',
      selector: selectorLabels(input.node, servingStage, 'gateway'),
      ports: gatewayServicePorts(input),
    },
  };
}

/** The stage selected by a node gateway Service (buildNodeGatewayService), as applied. */
export function servedStageOf(service: V1Service | undefined): string | undefined {
  return service?.spec?.selector?.[LABELS.stage];
}

function gatewayServicePorts(input: BuildInput): NonNullable<V1Service['spec']>['ports'] {
  return [{ name: 'http', port: gatewayServicePort(input), targetPort: 'http', protocol: 'TCP' }];
}

export function buildGatewayPdb(input: BuildInput): Named<V1PodDisruptionBudget> {
  const stage = input.config.nodeSettings.stage;
  const names = childNames(input.node.metadata.name, stage);
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: metadata(input, names.gateway, 'gateway'),
    spec: { maxUnavailable: 1, selector: { matchLabels: selectorLabels(input.node, stage, 'gateway') } },
  };
}

/**
 * autoscaling/v2 HPA on the gateway Deployment: CPU utilisation by default, or the metrics given in the spec.
 * minReplicas defaults to spec.gateway.replicas (at least 1; an HPA cannot scale to zero without a feature gate).
 */
export function buildGatewayHpa(input: BuildInput): Named<V2HorizontalPodAutoscaler> {
  const autoscaling = gatewayAutoscaling(input);
  if (!autoscaling) throw new Error('buildGatewayHpa needs spec.gateway.autoscaling');
  const stage = input.config.nodeSettings.stage;
  const names = childNames(input.node.metadata.name, stage);
  const minReplicas = Math.max(1, gatewayMinReplicas(input));
  const metrics: V2MetricSpec[] = autoscaling.metrics?.length
    ? structuredClone(autoscaling.metrics)
    : [
        {
          type: 'Resource',
          resource: {
            name: 'cpu',
            target: {
              type: 'Utilization',
              averageUtilization: autoscaling.targetCPUUtilizationPercentage ?? DEFAULT_TARGET_CPU_UTILIZATION,
            },
          },
        },
      ];
  return {
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: metadata(input, names.gateway, 'gateway'),
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: names.gateway },
      minReplicas,
      maxReplicas: Math.max(minReplicas, autoscaling.maxReplicas),
      metrics,
    },
  };
}

/**
 * The base URL callers reach the gateways at: spec.gateway.publicUrl, else the load-balancer address of the
 * gateway Service (type LoadBalancer, once the cloud assigned one). Never an in-cluster or localhost address.
 */
export function publicGatewayUrl(input: BuildInput, service: V1Service | undefined): string | undefined {
  const configured = input.node.spec.gateway?.publicUrl;
  if (configured) return configured.replace(/\/+$/, '');
  if (input.node.spec.gateway?.service?.type !== 'LoadBalancer') return undefined;
  const ingress = service?.status?.loadBalancer?.ingress?.find((entry) => entry.hostname || entry.ip);
  const host = ingress?.hostname ?? (ingress?.ip?.includes(':') ? `[${ingress.ip}]` : ingress?.ip);
  if (!host) return undefined;
  const port = gatewayServicePort(input);
  return port === 80 ? `http://${host}` : `http://${host}:${port}`;
}

/** In-cluster base URLs of the enabled gateways, for status. */
export function gatewayUrls(input: BuildInput): Record<string, string> {
  const names = childNames(input.node.metadata.name, input.config.nodeSettings.stage);
  const port = gatewayServicePort(input);
  // The node's Service: the same URL before, during and after a stage rollout.
  const base = `http://${names.service}.${input.node.metadata.namespace}.svc.${input.settings.clusterDomain}:${port}`;
  return Object.fromEntries(enabledGateways(input.config).map((gateway) => [gateway, base]));
}
