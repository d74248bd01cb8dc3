// `oracle-node operator`: runs the controller manager with the OracleNode reconciler. Every flag can also be set
// through an ONO_* environment variable (the Helm chart's way); a flag wins over the environment.
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { errorMessage } from '../common/errors.js';
import { type ClientConfig, loadClientConfig, type Reconciler } from '../kube/index.js';
import { createLogger, type LogLevel } from '../observability/logger.js';
import type { WebhookTarget } from '../operator/builders/admission.js';
import { processIo, UsageError, usageError } from './args.js';
import { onStopSignals } from './lifecycle.js';
import type { Subcommand } from './subcommand.js';

const IN_CLUSTER_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';
const LEVELS = ['debug', 'info', 'warn', 'error'] as const;

const USAGE = `Usage: oracle-node operator [options]

Runs the OracleNode and AirnodeFeed controllers. Each option can also be set by its environment variable.

  --kubeconfig PATH                  ONO_KUBECONFIG       default: in-cluster, then KUBECONFIG / ~/.kube/config
  --namespaces a,b                   ONO_NAMESPACES       namespaces to watch; empty: all namespaces
  --leader-elect[=true|false]        ONO_LEADER_ELECT     default true
  --leader-election-namespace NS     ONO_LEADER_ELECTION_NAMESPACE  default: POD_NAMESPACE, in-cluster namespace, "default"
  --leader-election-id NAME          ONO_LEADER_ELECTION_ID  Lease name, default oracle-node-operator
  --metrics-port N                   ONO_METRICS_PORT     default 8080 (0 disables)
  --health-port N                    ONO_HEALTH_PORT      default 8081 (0 disables)
  --workers N                        ONO_WORKERS          concurrent reconciles, default 2
  --qps N                            ONO_QPS              client-side API rate, default 20
  --burst N                          ONO_BURST            client-side API burst, default 30
  --log-level LEVEL                  ONO_LOG_LEVEL        debug|info|warn|error, default info

Admission webhook (served by every replica; docs/admission.md):
  --webhook-port N                   ONO_WEBHOOK_PORT     HTTPS port of the webhook, default 0 (off)
  --webhook-service NS/NAME[:PORT]   ONO_WEBHOOK_SERVICE  the API server calls this Service (port default 443)
  --webhook-url https://HOST:PORT    ONO_WEBHOOK_URL      ... or this URL (an operator outside the cluster)
  --webhook-configuration NAME       ONO_WEBHOOK_CONFIGURATION  ValidatingWebhookConfiguration, default oracle-node-operator
  --webhook-secret NAME              ONO_WEBHOOK_SECRET   certificate Secret, default oracle-node-operator-webhook-cert
  --webhook-certificates self|external  ONO_WEBHOOK_CERTIFICATES  self: issued and rotated by the operator;
                                     external: written by cert-manager, only read. Default self
  --webhook-failure-policy Fail|Ignore  ONO_WEBHOOK_FAILURE_POLICY  default Fail
  --webhook-timeout-seconds N        ONO_WEBHOOK_TIMEOUT_SECONDS  1..30, default 5
  --webhook-owner-clusterrole NAME   ONO_WEBHOOK_OWNER_CLUSTERROLE  a ClusterRole that owns the objects the webhook
                                     and the fence create (garbage-collected with it); the chart names its webhook
                                     ClusterRole
  --coordinator-fence true|false     ONO_COORDINATOR_FENCE  keep the coordinator fence policies, default true; with
                                     or without the webhook

Environment only:
  ONO_WORKLOAD_IMAGE                 image of the OracleNodes' workloads when spec.image is empty
`;

export type OperatorFlags = {
  kubeconfig?: string;
  namespaces: string[];
  leaderElect: boolean;
  leaderElectionNamespace: string;
  leaderElectionId: string;
  metricsPort: number;
  healthPort: number;
  workers: number;
  qps: number;
  burst: number;
  logLevel: (typeof LEVELS)[number];
  /** The operator's namespace (its certificate Secret; never blocked by the webhook). */
  operatorNamespace: string;
  webhook?: WebhookFlags;
  /** Keep the coordinator fence policies (with or without the webhook). */
  coordinatorFence: boolean;
  /** The ClusterRole that owns the webhook's and the fence's objects. */
  ownerClusterRole?: string;
};

export type WebhookFlags = {
  port: number;
  target: WebhookTarget;
  configurationName: string;
  secretName: string;
  certificates: 'self' | 'external';
  failurePolicy: 'Fail' | 'Ignore';
  timeoutSeconds: number;
};

function readNamespaceFile(): string | undefined {
  try {
    return existsSync(IN_CLUSTER_NAMESPACE)
      ? readFileSync(IN_CLUSTER_NAMESPACE, 'utf8').trim() || undefined
      : undefined;
  } catch {
    return undefined;
  }
}

function integer(name: string, value: string, min: number): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < min)
    throw new UsageError(`--${name} must be an integer >= ${min}, got "${value}"`);
  return parsed;
}

function positive(name: string, value: string): number {
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed <= 0) throw new UsageError(`--${name} must be a number > 0, got "${value}"`);
  return parsed;
}

function boolean(name: string, value: string): boolean {
  if (['true', '1', 'yes', ''].includes(value.toLowerCase())) return true;
  if (['false', '0', 'no'].includes(value.toLowerCase())) return false;
  throw new UsageError(`--${name} must be true or false, got "${value}"`);
}

/** Flags over environment over defaults. Throws UsageError on a bad value. */
export function parseOperatorFlags(argv: string[], env: NodeJS.ProcessEnv = process.env): OperatorFlags {
  // --leader-elect=false is the common form; parseArgs has no optional values, so split it off first.
  const args: string[] = [];
  let leaderElectFlag: string | undefined;
  for (const arg of argv) {
    if (arg === '--leader-elect') leaderElectFlag = 'true';
    else if (arg.startsWith('--leader-elect=')) leaderElectFlag = arg.slice('--leader-elect='.length);
    else if (arg === '--no-leader-elect') leaderElectFlag = 'false';
    else args.push(arg);
  }
  const { values } = parseArgs({
    args,
    strict: true,
    options: {
      kubeconfig: { type: 'string' },
      namespaces: { type: 'string' },
      'leader-election-namespace': { type: 'string' },
      'leader-election-id': { type: 'string' },
      'metrics-port': { type: 'string' },
      'health-port': { type: 'string' },
      workers: { type: 'string' },
      qps: { type: 'string' },
      burst: { type: 'string' },
      'log-level': { type: 'string' },
      'webhook-port': { type: 'string' },
      'webhook-service': { type: 'string' },
      'webhook-url': { type: 'string' },
      'webhook-configuration': { type: 'string' },
      'webhook-secret': { type: 'string' },
      'webhook-certificates': { type: 'string' },
      'webhook-failure-policy': { type: 'string' },
      'webhook-timeout-seconds': { type: 'string' },
      'coordinator-fence': { type: 'string' },
      'webhook-owner-clusterrole': { type: 'string' },
    },
  });
  const pick = (flag: string | undefined, variable: string): string | undefined => flag ?? (env[variable] || undefined);
  const namespaces = (pick(values.namespaces, 'ONO_NAMESPACES') ?? '')
    .split(',')
    .map((namespace) => namespace.trim())
    .filter(Boolean);
  const logLevel = (pick(values['log-level'], 'ONO_LOG_LEVEL') ?? 'info').toLowerCase();
  if (!(LEVELS as readonly string[]).includes(logLevel))
    throw new UsageError(`--log-level must be one of ${LEVELS.join(', ')}`);
  const qps = positive('qps', pick(values.qps, 'ONO_QPS') ?? '20');
  const burst = integer('burst', pick(values.burst, 'ONO_BURST') ?? '30', 1);
  const leaderElectionNamespace =
    pick(values['leader-election-namespace'], 'ONO_LEADER_ELECTION_NAMESPACE') ??
    (env.POD_NAMESPACE || readNamespaceFile() || 'default');
  const operatorNamespace = env.POD_NAMESPACE || readNamespaceFile() || leaderElectionNamespace;
  const webhookPort = integer('webhook-port', pick(values['webhook-port'], 'ONO_WEBHOOK_PORT') ?? '0', 0);
  let webhook: WebhookFlags | undefined;
  if (webhookPort > 0) {
    const webhookValue = (flag: string, variable: string) =>
      pick((values as Record<string, string | undefined>)[flag], variable);
    const failurePolicy = webhookValue('webhook-failure-policy', 'ONO_WEBHOOK_FAILURE_POLICY') ?? 'Fail';
    if (failurePolicy !== 'Fail' && failurePolicy !== 'Ignore')
      throw new UsageError(`--webhook-failure-policy must be Fail or Ignore, got "${failurePolicy}"`);
    const certificates = webhookValue('webhook-certificates', 'ONO_WEBHOOK_CERTIFICATES') ?? 'self';
    if (certificates !== 'self' && certificates !== 'external')
      throw new UsageError(`--webhook-certificates must be self or external, got "${certificates}"`);
    const timeoutSeconds = integer(
      'webhook-timeout-seconds',
      webhookValue('webhook-timeout-seconds', 'ONO_WEBHOOK_TIMEOUT_SECONDS') ?? '5',
      1,
    );
    if (timeoutSeconds > 30) throw new UsageError('--webhook-timeout-seconds must be at most 30');
    webhook = {
      port: webhookPort,
      target: webhookTarget(
        webhookValue('webhook-service', 'ONO_WEBHOOK_SERVICE'),
        webhookValue('webhook-url', 'ONO_WEBHOOK_URL'),
      ),
      configurationName: webhookValue('webhook-configuration', 'ONO_WEBHOOK_CONFIGURATION') ?? 'oracle-node-operator',
      secretName: webhookValue('webhook-secret', 'ONO_WEBHOOK_SECRET') ?? 'oracle-node-operator-webhook-cert',
      certificates,
      failurePolicy,
      timeoutSeconds,
    };
  }
  const ownerClusterRole = pick(values['webhook-owner-clusterrole'], 'ONO_WEBHOOK_OWNER_CLUSTERROLE');
  return {
    kubeconfig: pick(values.kubeconfig, 'ONO_KUBECONFIG'),
    namespaces,
    leaderElect: boolean('leader-elect', leaderElectFlag ?? env.ONO_LEADER_ELECT ?? 'true'),
    leaderElectionNamespace,
    leaderElectionId: pick(values['leader-election-id'], 'ONO_LEADER_ELECTION_ID') ?? 'oracle-node-operator',
    metricsPort: integer('metrics-port', pick(values['metrics-port'], 'ONO_METRICS_PORT') ?? '8080', 0),
    healthPort: integer('health-port', pick(values['health-port'], 'ONO_HEALTH_PORT') ?? '8081', 0),
    workers: integer('workers', pick(values.workers, 'ONO_WORKERS') ?? '2', 1),
    qps,
    burst: Math.max(burst, 1),
    logLevel: logLevel as OperatorFlags['logLevel'],
    operatorNamespace,
    ...(webhook ? { webhook } : {}),
    coordinatorFence: boolean(
      'coordinator-fence',
      pick(values['coordinator-fence'], 'ONO_COORDINATOR_FENCE') ?? 'true',
    ),
    ...(ownerClusterRole ? { ownerClusterRole } : {}),
  };
}

/** --webhook-service NS/NAME[:PORT] or --webhook-url https://HOST:PORT: exactly one, to one WebhookTarget. */
export function webhookTarget(service: string | undefined, url: string | undefined): WebhookTarget {
  if ((service === undefined) === (url === undefined))
    throw new UsageError(
      '--webhook-port needs exactly one of --webhook-service NAMESPACE/NAME or --webhook-url https://HOST:PORT',
    );
  if (service !== undefined) {
    const match = /^([a-z0-9-]+)\/([a-z0-9-]+)(?::(\d+))?$/.exec(service);
    if (!match) throw new UsageError(`--webhook-service must be NAMESPACE/NAME[:PORT], got "${service}"`);
    return {
      service: { namespace: match[1]!, name: match[2]!, port: integer('webhook-service port', match[3] ?? '443', 1) },
    };
  }
  let parsed: URL;
  try {
    parsed = new URL(url!);
  } catch {
    throw new UsageError(`--webhook-url must be https://HOST:PORT, got "${url}"`);
  }
  if (parsed.protocol !== 'https:' || parsed.pathname !== '/' || parsed.search || parsed.username)
    throw new UsageError(`--webhook-url must be https://HOST:PORT, got "${url}"`);
  return { url: parsed.origin };
}

export async function runOperator(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    processIo.stdout(USAGE);
    return 0;
  }
  let flags: OperatorFlags;
  let kubeConfig: ClientConfig;
  try {
    flags = parseOperatorFlags(argv);
    // --kubeconfig, else in-cluster (service account), else KUBECONFIG / ~/.kube/config; without client-node
    // unless the kubeconfig's user needs an exec or auth-provider plugin.
    kubeConfig = await loadClientConfig(flags.kubeconfig ? { path: flags.kubeconfig } : {});
  } catch (error) {
    return usageError(processIo, `oracle-node operator: ${errorMessage(error)}`, USAGE);
  }
  // JSON lines through the shared factory (secret redaction, the config's level names).
  const logger = createLogger({ level: flags.logLevel.toUpperCase() as LogLevel, bindings: { component: 'operator' } });
  const { createManager } = await import('../kube/index.js');
  const { createOracleNodeReconciler } = await import('../operator/controller.js');
  const { OracleNodeMetrics } = await import('../operator/metrics.js');
  const { LABELS } = await import('../contract/pods.js');
  const { DEFAULT_SETTINGS } = await import('../operator/builders/common.js');
  const identity = `${env('POD_NAME') ?? hostname()}_${Math.random().toString(16).slice(2, 10)}`;
  const manager = createManager({
    kubeConfig,
    namespaces: flags.namespaces,
    leaderElection: {
      enabled: flags.leaderElect,
      namespace: flags.leaderElectionNamespace,
      leaseName: flags.leaderElectionId,
      identity,
    },
    workers: flags.workers,
    qps: flags.qps,
    burst: flags.burst,
    metricsPort: flags.metricsPort,
    healthPort: flags.healthPort,
    fieldManager: 'oracle-node-operator',
    logger,
    // Coordinator Jobs are owned by their CronJob, not the OracleNode: this label maps them to their node.
    tuning: { ownerNameLabel: LABELS.name },
  });
  const workloadImage = env('ONO_WORKLOAD_IMAGE');
  const nodeMetrics = new OracleNodeMetrics(manager.registry);
  // Only the leader publishes the per-OracleNode series (docs/metrics.md): none until it leads, none after it lost.
  nodeMetrics.setLeading(false);
  manager.add(
    { start: () => nodeMetrics.setLeading(true), stop: async () => nodeMetrics.setLeading(false) },
    { leaderElection: true },
  );
  const reconciler: Reconciler = createOracleNodeReconciler({
    metrics: nodeMetrics,
    // The image of the OracleNodes' workloads when spec.image is empty (the Helm chart sets it to its own image).
    ...(workloadImage ? { settings: { defaultImage: workloadImage } } : {}),
  });
  // AirnodeFeeds beside OracleNodes, validated by the feed's own validator (docs/feeds.md).
  const { AirnodeFeedReconciler } = await import('../operator/feed/controller.js');
  const { validateFeedConfig } = await import('../feed/validate.js');
  const feedReconciler = new AirnodeFeedReconciler({
    validateConfig: validateFeedConfig,
    defaultImage: workloadImage ?? DEFAULT_SETTINGS.defaultImage,
  });
  // On every replica, beside (never inside) the controller; the webhook holds /readyz until it serves. Without the
  // webhook the fence runs on its own: it does not depend on the webhook being served.
  if (flags.webhook)
    manager.add(await admissionComponent(flags, manager, logger, workloadImage ?? DEFAULT_SETTINGS.defaultImage), {
      leaderElection: false,
    });
  else if (flags.coordinatorFence)
    manager.add(await fenceComponent(flags, manager, logger, workloadImage ?? DEFAULT_SETTINGS.defaultImage), {
      leaderElection: false,
    });
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    if (signals > 1) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    logger.info({ signal }, 'shutting down');
    void manager.stop();
  };
  const stopListening = onStopSignals(onSignal);
  try {
    await manager.run([reconciler, feedReconciler]);
    return 0;
  } catch (error) {
    logger.error({ err: errorMessage(error) }, 'operator failed');
    await manager.stop().catch(() => {});
    return 1;
  } finally {
    stopListening();
  }
}

/** The admission webhook (with the coordinator fence), as a runnable of the manager. */
async function admissionComponent(
  flags: OperatorFlags,
  manager: import('../kube/index.js').RuntimeManager,
  logger: import('pino').Logger,
  workloadImage: string,
) {
  const webhook = flags.webhook!;
  const { AdmissionComponent, oracleNodesInCache, secretExistsInCache } = await import(
    '../operator/webhook/admission.js'
  );
  const { reviewAirnodeFeed } = await import('../operator/feed/admission.js');
  const { validateFeedConfig } = await import('../feed/validate.js');
  return new AdmissionComponent({
    client: manager.client,
    logger: logger.child({ component: 'admission' }),
    registry: manager.registry,
    port: webhook.port,
    target: webhook.target,
    configurationName: webhook.configurationName,
    namespace: flags.operatorNamespace,
    secretName: webhook.secretName,
    certificateSource: webhook.certificates,
    failurePolicy: webhook.failurePolicy,
    timeoutSeconds: webhook.timeoutSeconds,
    watchNamespaces: flags.namespaces,
    coordinatorFence: flags.coordinatorFence,
    workloadImage,
    ...(flags.ownerClusterRole ? { ownerClusterRole: flags.ownerClusterRole } : {}),
    lookups: { secretExists: secretExistsInCache(manager.cache), oracleNodes: oracleNodesInCache(manager.cache) },
    reviewFeed: (request) => reviewAirnodeFeed(request, validateFeedConfig),
  });
}

/** The coordinator fence alone, for an operator without the webhook, as a runnable of the manager. */
async function fenceComponent(
  flags: OperatorFlags,
  manager: import('../kube/index.js').RuntimeManager,
  logger: import('pino').Logger,
  workloadImage: string,
) {
  const { CoordinatorFenceComponent } = await import('../operator/webhook/admission.js');
  return new CoordinatorFenceComponent({
    client: manager.client,
    logger: logger.child({ component: 'coordinator-fence' }),
    workloadImage,
    ...(flags.ownerClusterRole ? { ownerClusterRole: flags.ownerClusterRole } : {}),
  });
}

function env(name: string): string | undefined {
  return process.env[name] || undefined;
}

const command: Subcommand = { run: runOperator };
export default command;
