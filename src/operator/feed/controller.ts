// The AirnodeFeed controller: validates spec.config with the Secret's values (the feed's own validator, injected by
// the CLI, which alone may import src/feed), applies the ConfigMap, ServiceAccount and Deployment where the cluster
// differs, and writes status (Ready, ConfigValid, kstatus's Reconciling/Stalled, observedGeneration, and the last
// push per Signed API from the pod's report ConfigMap, read as untrusted input). An invalid
// config or a missing Secret changes nothing but status: the last good Deployment keeps pushing.
import type { KubernetesObject, V1ConfigMap, V1Deployment, V1Secret } from '@kubernetes/client-node';
import { errorMessage } from '../../common/errors.js';
import { type FeedReport, parseFeedReport, type SignedApiReport } from '../../contract/feed-report.js';
import {
  isInvalid,
  type ObjectCache,
  type ObjectKey,
  type ReconcileContext,
  type ReconcileResult,
  type Reconciler,
  TerminalError,
  type WatchSpec,
} from '../../kube/index.js';
import { redact, registerSecrets } from '../../observability/index.js';
import { deriveNodeAddress } from '../../protocol/node-key.js';
import type { Child } from '../builders/index.js';
import { childCacheTransform } from '../child-cache.js';
import { type ConfigIssue, formatIssues, inSecretTerms, isMissingSecretIssue } from '../config.js';
import { canonicalJson, needsApply, withAppliedHash } from '../diff.js';
import { foreignMessage, foreignObjects } from '../ownership.js';
import { deploymentReady } from '../reconcile/status.js';
import { KINDS, MANAGED_SELECTOR } from '../resource.js';
import {
  type AirnodeFeed,
  type AirnodeFeedStatus,
  FEED_CONTROLLER_NAME,
  FEED_RESOURCE,
  type FeedCondition,
  type FeedConditionReason,
  type FeedConditionType,
} from './api.js';
import { buildFeedChildren, type FeedBuildInput, type FeedConfigView, feedChildNames } from './builders.js';

/** The feed's validator (src/feed/validate.ts validateFeedConfig): every error with its path. */
export type FeedConfigValidator = (
  rawConfig: unknown,
  secrets: Record<string, string>,
) => Promise<{ ok: true; config: FeedConfigView } | { ok: false; errors: ConfigIssue[] }>;

export type AirnodeFeedReconcilerOptions = {
  validateConfig: FeedConfigValidator;
  defaultImage: string;
  resyncMs?: number;
  waitPollMs?: number;
  now?: () => Date;
};

/** The feed's validator says "secrets.env"; the operator's users have a Secret. */
export function feedsReferencingSecret(secret: KubernetesObject, cache: ObjectCache): ObjectKey[] {
  const { namespace, name } = secret.metadata ?? {};
  if (!namespace || !name) return [];
  return cache
    .list<AirnodeFeed>(FEED_RESOURCE, namespace)
    .filter((feed) => feed.spec?.secretRef?.name === name)
    .map((feed) => ({ namespace, name: feed.metadata.name }));
}

export const FEED_WATCHES: WatchSpec = {
  primary: FEED_RESOURCE,
  // The report ConfigMap is a ConfigMap child: the pod's writes enqueue the feed through its owner reference.
  owned: [KINDS.configMap, KINDS.serviceAccount, KINDS.role, KINDS.roleBinding, KINDS.deployment].map((kind) => ({
    kind,
    labelSelector: MANAGED_SELECTOR,
    transform: childCacheTransform,
  })),
  referenced: [{ kind: KINDS.secret, map: feedsReferencingSecret }],
};

type ConditionUpdate = {
  type: FeedConditionType;
  status: 'True' | 'False';
  reason: FeedConditionReason;
  message: string;
};

/**
 * The conditions after `updates`, each keeping its lastTransitionTime unless its status flips; Reconciling and
 * Stalled (kstatus, abnormal-true) are present only while True: Stalled for a config or Secret that only an edit can
 * fix, Reconciling while the Deployment rolls out, the Secret is awaited or an apply is retried.
 */
export function feedConditions(
  previous: FeedCondition[] | undefined,
  updates: ConditionUpdate[],
  now: string,
  generation: number | undefined,
): FeedCondition[] {
  const set = (update: ConditionUpdate): FeedCondition => {
    const existing = previous?.find((c) => c.type === update.type);
    const lastTransitionTime = existing?.status === update.status ? existing.lastTransitionTime : now;
    return { ...update, lastTransitionTime, ...(generation !== undefined ? { observedGeneration: generation } : {}) };
  };
  const conditions = updates.map(set);
  const configValid = updates.find((u) => u.type === 'ConfigValid');
  const ready = updates.find((u) => u.type === 'Ready');
  if (configValid?.status === 'False' && configValid.reason !== 'SecretNotFound')
    conditions.push(set({ ...configValid, type: 'Stalled', status: 'True' }));
  else if (ready?.status === 'False')
    conditions.push(set({ type: 'Reconciling', status: 'True', reason: ready.reason, message: ready.message }));
  return conditions;
}

/**
 * status.signedApis: each Signed API of the config, by name, with what the pod's report says of it (a name the config
 * no longer has is left out; one the pod has not reported yet has its name only).
 */
export function signedApiStatus(names: readonly string[], report: FeedReport | undefined): SignedApiReport[] {
  const reported = new Map(report?.signedApis.map((entry) => [entry.name, entry]));
  return names.map((name) => ({ ...reported.get(name), name }));
}

/**
 * The status a refusal or a failed apply keeps from the last one. status.signedApis was a list of names before the
 * pod reported its pushes: a status written by an older operator carries that list, which is dropped, not carried
 * on in the shape of old.
 */
export function carriedStatus(feed: AirnodeFeed): AirnodeFeedStatus {
  const { signedApis, ...rest } = feed.status ?? {};
  const current = signedApis?.every((entry) => typeof entry === 'object' && entry !== null);
  return current ? { ...rest, signedApis: signedApis! } : rest;
}

export class AirnodeFeedReconciler implements Reconciler {
  readonly name = FEED_CONTROLLER_NAME;
  readonly watches = FEED_WATCHES;
  private readonly options: Required<Omit<AirnodeFeedReconcilerOptions, 'now'>> & { now: () => Date };
  /** The node address of each mnemonic seen, so that a resync does not derive it again. */
  private readonly addresses = new Map<string, string>();

  constructor(options: AirnodeFeedReconcilerOptions) {
    this.options = { resyncMs: 10 * 60_000, waitPollMs: 5_000, now: () => new Date(), ...options };
  }

  async reconcile(key: ObjectKey, context: ReconcileContext): Promise<ReconcileResult> {
    const feed = context.cache.get<AirnodeFeed>(FEED_RESOURCE, key);
    if (!feed || feed.metadata.deletionTimestamp) return undefined; // children go with it (owner references)
    const now = this.options.now().toISOString();
    const generation = feed.metadata.generation;
    const rawConfig = (feed.spec?.config ?? {}) as Record<string, unknown>;

    const secretName = feed.spec?.secretRef?.name;
    let values: Record<string, string> = {};
    let data: Record<string, string> = {};
    if (secretName) {
      const secret = await context.client.get<V1Secret>(KINDS.secret, { namespace: key.namespace, name: secretName });
      if (!secret) {
        const message = `spec.secretRef.name: Secret ${key.namespace}/${secretName} not found`;
        await this.reject(feed, 'SecretNotFound', message, context, now);
        return { requeueAfterMs: this.options.waitPollMs };
      }
      data = secret.data ?? {};
      for (const [name, value] of Object.entries(data)) values[name] = Buffer.from(value, 'base64').toString('utf8');
      values = { ...values, ...secret.stringData };
      // Every value read from the Secret is scrubbed from the operator's logs and events.
      registerSecrets(values);
    }

    const validation = await this.options.validateConfig(rawConfig, values);
    if (!validation.ok) {
      const errors = validation.errors.map(inSecretTerms);
      const missing = validation.errors.some(isMissingSecretIssue);
      // Scrubbed of the Secret's values, in case a rule quotes the value it refuses.
      const message = redact(formatIssues(errors));
      await this.reject(feed, missing ? 'SecretKeyMissing' : 'ValidationFailed', message, context, now);
      return { requeueAfterMs: this.options.resyncMs };
    }

    const input: FeedBuildInput = {
      feed,
      config: validation.config,
      rawConfig,
      secretData: data,
      defaultImage: this.options.defaultImage,
      ...(secretName ? { secretName } : {}),
    };
    // Never over an object the feed did not create (an OracleNode's with stage `feed` names `<name>-feed-config`).
    const children = buildFeedChildren(input);
    const foreign = await foreignObjects({ uid: feed.metadata.uid, namespace: key.namespace }, children, context);
    if (foreign.length > 0) {
      await this.reject(feed, 'NameConflict', foreignMessage(foreign), context, now);
      return { requeueAfterMs: this.options.waitPollMs };
    }
    try {
      await this.apply(children, context);
    } catch (error) {
      const message = redact(errorMessage(error)).slice(0, 500);
      await this.writeStatus(
        feed,
        {
          ...carriedStatus(feed),
          observedGeneration: generation,
          conditions: feedConditions(
            feed.status?.conditions,
            [{ type: 'Ready', status: 'False', reason: 'ApplyFailed', message }],
            now,
            generation,
          ),
          notReadyReason: 'ApplyFailed',
        },
        context,
      ).catch(() => undefined);
      context.events.record(feed, 'Warning', 'ApplyFailed', message);
      if (isInvalid(error)) throw new TerminalError(message, { cause: error });
      throw error;
    }

    const deployment = context.cache.get<V1Deployment>(KINDS.deployment, {
      namespace: key.namespace,
      name: feedChildNames(feed.metadata.name).deployment,
    });
    const ready = deploymentReady(deployment);
    const readyUpdate: ConditionUpdate = ready
      ? { type: 'Ready', status: 'True', reason: 'Ready', message: 'The feed pod runs the current spec and is ready.' }
      : deployment?.status?.updatedReplicas !== undefined && (deployment.status.availableReplicas ?? 0) > 0
        ? {
            type: 'Ready',
            status: 'False',
            reason: 'FeedRollingOut',
            message: 'A pod of the new spec is starting; the previous one pushes until it is ready.',
          }
        : { type: 'Ready', status: 'False', reason: 'FeedNotReady', message: 'The feed pod is not ready yet.' };
    const { config } = validation;
    const status: AirnodeFeedStatus = {
      observedGeneration: generation,
      conditions: feedConditions(
        feed.status?.conditions,
        [
          readyUpdate,
          { type: 'ConfigValid', status: 'True', reason: 'Valid', message: 'The config and its Secret are valid.' },
        ],
        now,
        generation,
      ),
      airnode: this.addressOf(config.nodeSettings.airnodeWalletMnemonic),
      stage: config.nodeSettings.stage,
      templates: Object.keys(config.templates).length,
      signedApis: signedApiStatus(
        config.signedApis.map((api) => api.name),
        parseFeedReport(
          context.cache.get<V1ConfigMap>(KINDS.configMap, {
            namespace: key.namespace,
            name: feedChildNames(feed.metadata.name).report,
          })?.data,
        ),
      ),
      readyReplicas: deployment?.status?.readyReplicas ?? 0,
      ...(ready ? {} : { notReadyReason: readyUpdate.reason }),
    };
    await this.writeStatus(feed, status, context);
    return { requeueAfterMs: ready ? this.options.resyncMs : this.options.waitPollMs };
  }

  private addressOf(mnemonic: string): string {
    let address = this.addresses.get(mnemonic);
    if (!address) {
      address = deriveNodeAddress(mnemonic);
      this.addresses.set(mnemonic, address);
    }
    return address;
  }

  /** Server-side apply of the children that differ from the cache, in order. */
  private async apply(children: ReturnType<typeof buildFeedChildren>, context: ReconcileContext): Promise<void> {
    for (const { kind, object } of children) {
      const desired = withAppliedHash(object);
      const live = context.cache.get<Child>(kind, {
        namespace: desired.metadata.namespace,
        name: desired.metadata.name,
      });
      if (needsApply(desired, live)) await context.client.apply(kind, desired, { force: true });
    }
  }

  /**
   * Invalid config, missing Secret or a name taken by an object not the feed's: said in status and a Warning Event;
   * every child stays as it is.
   */
  private async reject(
    feed: AirnodeFeed,
    reason: 'SecretNotFound' | 'SecretKeyMissing' | 'ValidationFailed' | 'NameConflict',
    message: string,
    context: ReconcileContext,
    now: string,
  ): Promise<void> {
    const generation = feed.metadata.generation;
    const status: AirnodeFeedStatus = {
      ...carriedStatus(feed),
      observedGeneration: generation,
      conditions: feedConditions(
        feed.status?.conditions,
        [
          { type: 'Ready', status: 'False', reason, message },
          { type: 'ConfigValid', status: 'False', reason, message },
        ],
        now,
        generation,
      ),
      notReadyReason: reason,
    };
    const changed = await this.writeStatus(feed, status, context);
    if (changed) context.events.record(feed, 'Warning', reason, message);
  }

  /** Writes status when it differs; true when it did. */
  private async writeStatus(feed: AirnodeFeed, status: AirnodeFeedStatus, context: ReconcileContext) {
    if (canonicalJson(status) === canonicalJson(feed.status ?? {})) return false;
    await context.client.applyStatus(FEED_RESOURCE, {
      apiVersion: feed.apiVersion,
      kind: feed.kind,
      metadata: { name: feed.metadata.name, namespace: feed.metadata.namespace },
      status,
    });
    return true;
  }
}
