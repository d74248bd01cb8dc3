// The admission component of `oracle-node operator`, run on every replica (not only the leader): it keeps the
// certificate Secret current, serves the webhook with the Secret's certificate, and owns the
// ValidatingWebhookConfiguration (CA bundle, target, rules) and the coordinator fence policies. Every check reads
// first and writes only what differs, so replicas at rest write nothing; failures are logged and retried with
// backoff, and never touch the controller, which keeps reconciling (ConfigValid stays the second line of defence).
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { sleepUnlessAborted } from '../../common/concurrency.js';
import { errorMessage } from '../../common/errors.js';
import type { InformerCache, ResourceKind, RuntimeClient } from '../../kube/index.js';
import {
  buildCoordinatorFence,
  buildWebhookConfiguration,
  servingNames,
  type WebhookConfigurationInput,
  type WebhookTarget,
} from '../builders/admission.js';
import { canonicalJson } from '../builders/common.js';
import { KINDS, type OracleNode } from '../resource.js';
import {
  type CertificatePolicy,
  type CertificateSet,
  type CertificateSource,
  CertificateStore,
  nextRenewal,
} from './certificate-store.js';
import type { AdmissionLookups } from './review.js';
import { WebhookServer, type WebhookServerOptions } from './server.js';

const admissionKind = (kind: string, plural: string): ResourceKind => ({
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  kind,
  plural,
  namespaced: false,
});

const ENDPOINT_SLICE: ResourceKind = {
  group: 'discovery.k8s.io',
  version: 'v1',
  kind: 'EndpointSlice',
  plural: 'endpointslices',
  namespaced: true,
};

const CLUSTER_ROLE: ResourceKind = {
  group: 'rbac.authorization.k8s.io',
  version: 'v1',
  kind: 'ClusterRole',
  plural: 'clusterroles',
  namespaced: false,
};

export const ADMISSION_KINDS = {
  webhookConfiguration: admissionKind('ValidatingWebhookConfiguration', 'validatingwebhookconfigurations'),
  policy: admissionKind('ValidatingAdmissionPolicy', 'validatingadmissionpolicies'),
  policyBinding: admissionKind('ValidatingAdmissionPolicyBinding', 'validatingadmissionpolicybindings'),
};

export type AdmissionOptions = {
  client: RuntimeClient;
  logger: Logger;
  registry?: Registry;
  /** Port of the webhook server (0: any free port, for tests). */
  port: number;
  host?: string;
  target: WebhookTarget;
  configurationName: string;
  /** The operator's namespace: the certificate Secret lives there, and the webhook never blocks it. */
  namespace: string;
  secretName: string;
  certificateSource: CertificateSource;
  failurePolicy: 'Fail' | 'Ignore';
  timeoutSeconds: number;
  watchNamespaces: string[];
  /**
   * A cluster-scoped owner of the objects this component creates (the chart's webhook ClusterRole), so that
   * uninstalling the chart garbage-collects them instead of leaving a webhook nobody serves.
   */
  ownerClusterRole?: string;
  /** Keep the coordinator fence policies (cluster-wide) current. */
  coordinatorFence: boolean;
  /** The image of workloads whose OracleNode names none (the fence allows it for their workers). */
  workloadImage: string;
  lookups?: AdmissionLookups;
  /** The AirnodeFeed review with the feed's validator (feed/admission.ts reviewAirnodeFeed). */
  reviewFeed?: WebhookServerOptions['reviewFeed'];
  certificatePolicy?: CertificatePolicy;
  /** Longest time between two checks of the Secret and the configuration (default 1 min). */
  checkIntervalMs?: number;
  /**
   * With a Service target, how long the first registration waits for the Service to have a ready endpoint (default
   * 60 s) before it registers anyway; polled every `endpointPollMs` (default 500 ms).
   */
  endpointWaitMs?: number;
  endpointPollMs?: number;
  now?: () => Date;
};

export class AdmissionComponent {
  private readonly store: CertificateStore;
  private server: WebhookServer | undefined;
  private boundPort: number | undefined;
  private readonly stopSignal = new AbortController();
  private loop: Promise<void> | undefined;
  private readonly readyWaiters: (() => void)[] = [];
  private configured = false;
  private ownerReferences: Record<string, unknown>[] | undefined;

  constructor(private readonly options: AdmissionOptions) {
    this.store = new CertificateStore({
      rest: options.client.rest,
      namespace: options.namespace,
      secretName: options.secretName,
      names: servingNames(options.target),
      source: options.certificateSource,
      policy: options.certificatePolicy,
      logger: options.logger,
      now: options.now,
    });
  }

  /** Starts the loop in the background; `ready()` resolves once the webhook serves and is configured. */
  start(): void {
    this.loop ??= this.run();
  }

  ready(): Promise<void> {
    if (this.configured) return Promise.resolve();
    return new Promise((resolve) => this.readyWaiters.push(resolve));
  }

  get port(): number | undefined {
    return this.boundPort;
  }

  /** For /readyz: a replica is ready once its webhook serves (the Service sends the API server's calls to it). */
  readiness(): { ready: boolean; reason?: string } {
    return this.server ? { ready: true } : { ready: false, reason: 'admission webhook not serving yet' };
  }

  /** The serving certificate in use (PEM), for tests and diagnostics. */
  get servingCertificate(): string | undefined {
    return this.server?.certificatePem;
  }

  /** Stops serving at once; a check still waiting on the API server (retries) gets a few seconds to end. */
  async stop(): Promise<void> {
    this.stopSignal.abort();
    await this.server?.close();
    const bound = new AbortController();
    await Promise.race([this.loop, sleepUnlessAborted(5000, bound.signal)]);
    bound.abort();
  }

  private async run(): Promise<void> {
    const { logger } = this.options;
    const interval = this.options.checkIntervalMs ?? 60_000;
    let failures = 0;
    while (!this.stopSignal.signal.aborted) {
      let waitMs = interval;
      try {
        const certificates = await this.check();
        failures = 0;
        const renewal = nextRenewal(certificates, this.store.certificatePolicy);
        const now = (this.options.now ?? (() => new Date()))().getTime();
        if (renewal) waitMs = Math.max(200, Math.min(interval, renewal.getTime() - now + 50));
      } catch (error) {
        failures++;
        waitMs = Math.min(interval, 500 * 2 ** Math.min(failures, 8));
        logger.warn({ err: errorMessage(error), retryInMs: waitMs }, 'webhook setup failed');
      }
      await sleepUnlessAborted(waitMs, this.stopSignal.signal);
    }
  }

  /** One pass: certificates, server, configuration, fence. */
  private async check(): Promise<CertificateSet> {
    const certificates = await this.store.sync();
    if (this.stopSignal.signal.aborted) return certificates;
    if (!this.server) {
      const server = new WebhookServer({
        port: this.options.port,
        host: this.options.host,
        certificate: certificates,
        lookups: this.options.lookups,
        ...(this.options.reviewFeed ? { reviewFeed: this.options.reviewFeed } : {}),
        logger: this.options.logger.child({ subsystem: 'webhook' }),
        registry: this.options.registry,
      });
      this.boundPort = await server.start();
      this.server = server;
      this.options.logger.info({ port: this.boundPort }, 'webhook serving');
    } else {
      this.server.useCertificate(certificates);
    }
    const input: WebhookConfigurationInput = {
      name: this.options.configurationName,
      target: this.options.target,
      caBundle: certificates.caBundle,
      failurePolicy: this.options.failurePolicy,
      timeoutSeconds: this.options.timeoutSeconds,
      watchNamespaces: this.options.watchNamespaces,
      exemptNamespaces: [this.options.namespace, 'kube-system'],
    };
    // The API server calls the Service as soon as the configuration exists: registering before any replica is behind
    // it refuses every OracleNode write ("connection refused") for the seconds until the first readiness probe.
    if (!this.configured && 'service' in this.options.target)
      await this.waitForReadyEndpoint(this.options.target.service);
    if (this.stopSignal.signal.aborted) return certificates;
    const owned = await this.owned();
    await this.ensure(ADMISSION_KINDS.webhookConfiguration, owned(buildWebhookConfiguration(input)), [
      'metadata',
      'webhooks',
    ]);
    if (this.options.coordinatorFence)
      for (const { kind, object } of fenceObjects(this.options.workloadImage, owned))
        await this.ensure(kind, object, ['metadata', 'spec']);
    if (!this.configured) {
      this.configured = true;
      for (const resolve of this.readyWaiters.splice(0)) resolve();
    }
    return certificates;
  }

  /**
   * Waits until an EndpointSlice of the webhook Service has a ready endpoint, at most endpointWaitMs; then (or when the
   * slices cannot be read) registers anyway, since the controller's ConfigValid check stays the second line.
   */
  private async waitForReadyEndpoint(service: { namespace: string; name: string }): Promise<void> {
    const { logger } = this.options;
    const deadline = Date.now() + (this.options.endpointWaitMs ?? 60_000);
    const pollMs = this.options.endpointPollMs ?? 500;
    let logged = false;
    while (!this.stopSignal.signal.aborted) {
      try {
        const slices = await this.options.client.list<EndpointSliceView>(
          ENDPOINT_SLICE,
          service.namespace,
          `kubernetes.io/service-name=${service.name}`,
        );
        if (slices.some(hasReadyEndpoint)) return;
      } catch (error) {
        logger.warn(
          { err: errorMessage(error), service: service.name },
          'cannot read the webhook Service endpoints; registering the webhook without waiting',
        );
        return;
      }
      if (Date.now() >= deadline) {
        logger.warn(
          { service: service.name },
          'webhook Service has no ready endpoint yet; registering the webhook anyway',
        );
        return;
      }
      if (!logged) {
        logger.info(
          { service: service.name },
          'waiting for a ready endpoint of the webhook Service before registering',
        );
        logged = true;
      }
      await sleepUnlessAborted(pollMs, this.stopSignal.signal);
    }
  }

  /** Adds the owner reference to the ClusterRole named by ownerClusterRole (looked up once). */
  private async owned(): Promise<<T extends KubernetesObject>(object: T) => T> {
    this.ownerReferences ??= await ownerReferencesTo(this.options.client, this.options.ownerClusterRole);
    return withOwner(this.ownerReferences);
  }

  private ensure(kind: ResourceKind, desired: KubernetesObject, fields: string[]): Promise<void> {
    return ensureCovered(this.options.client, this.options.logger, kind, desired, fields);
  }
}

/** The ownerReferences to the ClusterRole `name` (none without a name); throws when it does not exist. */
export async function ownerReferencesTo(
  client: RuntimeClient,
  name: string | undefined,
): Promise<Record<string, unknown>[]> {
  if (!name) return [];
  const owner = await client.get<KubernetesObject>(CLUSTER_ROLE, { namespace: '', name });
  if (!owner?.metadata?.uid) throw new Error(`ClusterRole ${name} (the webhook objects' owner) not found`);
  return [{ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name, uid: owner.metadata.uid }];
}

function withOwner(references: Record<string, unknown>[]) {
  return <T extends KubernetesObject>(object: T): T =>
    references.length > 0 ? { ...object, metadata: { ...object.metadata, ownerReferences: references } } : object;
}

/** Applies `desired` when the live object lacks it or differs on what we set (never a write at rest). */
export async function ensureCovered(
  client: RuntimeClient,
  logger: Logger,
  kind: ResourceKind,
  desired: KubernetesObject,
  fields: string[],
): Promise<void> {
  const live = await client.get<KubernetesObject>(kind, { namespace: '', name: desired.metadata!.name! });
  if (
    live &&
    fields.every((field) =>
      covers((live as Record<string, unknown>)[field], (desired as Record<string, unknown>)[field]),
    )
  )
    return;
  await client.apply(kind, desired);
  logger.info(
    { kind: kind.kind, name: desired.metadata?.name },
    live ? 'admission object updated' : 'admission object created',
  );
}

/** The coordinator fence's objects with their kinds, owned as `owned` says. */
export function fenceObjects(
  workloadImage: string,
  owned: <T extends KubernetesObject>(object: T) => T = (object) => object,
): { kind: ResourceKind; object: KubernetesObject }[] {
  return buildCoordinatorFence(workloadImage).map((object) => ({
    kind: object.kind === 'ValidatingAdmissionPolicy' ? ADMISSION_KINDS.policy : ADMISSION_KINDS.policyBinding,
    object: owned(object),
  }));
}

/**
 * The coordinator fence on its own, for an operator that serves no webhook: the fence keeps each coordinator's
 * ServiceAccount in its own worker Jobs whatever admission webhooks run. Same loop as the admission component: read,
 * write what differs, retry with backoff, never touch the controller.
 */
export class CoordinatorFenceComponent {
  private readonly stopSignal = new AbortController();
  private loop: Promise<void> | undefined;
  private ownerReferences: Record<string, unknown>[] | undefined;
  private readonly readyWaiters: (() => void)[] = [];
  private kept = false;

  constructor(
    private readonly options: {
      client: RuntimeClient;
      logger: Logger;
      workloadImage: string;
      ownerClusterRole?: string;
      checkIntervalMs?: number;
    },
  ) {}

  start(): void {
    this.loop ??= this.run();
  }

  /** Resolves once the fence's policies and bindings are in place. */
  ready(): Promise<void> {
    if (this.kept) return Promise.resolve();
    return new Promise((resolve) => this.readyWaiters.push(resolve));
  }

  async stop(): Promise<void> {
    this.stopSignal.abort();
    const bound = new AbortController();
    await Promise.race([this.loop, sleepUnlessAborted(5000, bound.signal)]);
    bound.abort();
  }

  private async run(): Promise<void> {
    const interval = this.options.checkIntervalMs ?? 60_000;
    let failures = 0;
    while (!this.stopSignal.signal.aborted) {
      let waitMs = interval;
      try {
        this.ownerReferences ??= await ownerReferencesTo(this.options.client, this.options.ownerClusterRole);
        for (const { kind, object } of fenceObjects(this.options.workloadImage, withOwner(this.ownerReferences)))
          await ensureCovered(this.options.client, this.options.logger, kind, object, ['metadata', 'spec']);
        failures = 0;
        if (!this.kept) {
          this.kept = true;
          for (const resolve of this.readyWaiters.splice(0)) resolve();
        }
      } catch (error) {
        failures++;
        waitMs = Math.min(interval, 500 * 2 ** Math.min(failures, 8));
        this.options.logger.warn({ err: errorMessage(error), retryInMs: waitMs }, 'coordinator fence setup failed');
      }
      await sleepUnlessAborted(waitMs, this.stopSignal.signal);
    }
  }
}

/**
 * Whether a Secret exists, from the manager's metadata-only cache of Secrets (no API call, no Secret value); undefined
 * until the informer covering the namespace has synced, or when no informer covers it.
 */
export function secretExistsInCache(cache: InformerCache) {
  return (namespace: string, name: string): boolean | undefined => {
    if (cache.synced(KINDS.secret, namespace) !== true) return undefined;
    return cache.get(KINDS.secret, { namespace, name }) !== undefined;
  };
}

/** The OracleNodes of a namespace from the manager's cache; undefined until the informer covering it has synced. */
export function oracleNodesInCache(cache: InformerCache) {
  return (namespace: string): OracleNode[] | undefined => {
    if (cache.synced(KINDS.oracleNode, namespace) !== true) return undefined;
    return cache.list<OracleNode>(KINDS.oracleNode, namespace);
  };
}

type EndpointSliceView = KubernetesObject & { endpoints?: { conditions?: { ready?: boolean } }[] | null };

/** An endpoint whose `ready` condition is unset counts as ready (the EndpointSlice API's rule). */
export function hasReadyEndpoint(slice: EndpointSliceView): boolean {
  return (slice.endpoints ?? []).some((endpoint) => endpoint.conditions?.ready !== false);
}

/** True when `live` has every value `desired` sets (the API server adds defaults we do not set). */
export function covers(live: unknown, desired: unknown): boolean {
  if (Array.isArray(desired)) {
    return Array.isArray(live) && live.length === desired.length && desired.every((item, i) => covers(live[i], item));
  }
  if (desired && typeof desired === 'object') {
    if (!live || typeof live !== 'object' || Array.isArray(live)) return false;
    return Object.entries(desired).every(([key, value]) => covers((live as Record<string, unknown>)[key], value));
  }
  return canonicalJson(live) === canonicalJson(desired);
}
