// The feed pod <-> operator contract: the report `oracle-node feed` writes into the AirnodeFeed's `<name>-feed-report`
// ConfigMap (the last push per Signed API) and the operator turns into status.signedApis. As the coordinator's cycle
// report (pods.ts), the feed's identity can write that ConfigMap, so the operator reads it as untrusted input: size
// capped, entries capped, each field checked on its own, a malformed one dropped.
import { z } from 'zod';
import { isRecord, parseJsonText } from '../common/json.js';
import { ENV } from './pods.js';

/** Environment the operator gives the feed pod: the ConfigMap to report into (beside ENV.namespace). */
export const FEED_REPORT_CONFIGMAP_ENV = 'ORACLE_NODE_FEED_REPORT_CONFIGMAP';
/** The key of the ConfigMap's data the report is written under. */
export const FEED_REPORT_KEY = 'report.json';
/** The component label of the report ConfigMap: the operator's cache keeps its data (child-cache.ts). */
export const FEED_REPORT_COMPONENT = 'feed-report';
/** A report larger than this is not read at all (a config has a few Signed APIs; each entry is < 1 KiB). */
export const MAX_FEED_REPORT_BYTES = 64 * 1024;
/** At most this many Signed APIs are read from one report. */
export const MAX_FEED_REPORT_SIGNED_APIS = 32;
/** lastError is cut to this many characters by the writer; a longer one is dropped by the reader. */
export const MAX_FEED_REPORT_ERROR_LENGTH = 300;

const isoTime = z.iso.datetime({ offset: true });
const count = z.int().min(0).max(Number.MAX_SAFE_INTEGER);

export const feedPushOutcomeSchema = z.enum(['ok', 'failed']);

/** One Signed API's entry; its descriptions are status.signedApis[]'s (src/operator/feed/api.ts). */
export const signedApiReportSchema = z.object({
  name: z
    .string()
    .min(1)
    .max(253)
    .meta({ description: 'The Signed API, by its name in the config (its URL and token stay in the config).' }),
  lastPushTime: isoTime.optional().meta({ description: 'When the last push (a POST of a batch) ended.' }),
  lastPushOutcome: feedPushOutcomeSchema.optional().meta({ description: 'How the last push ended: ok or failed.' }),
  lastSuccessTime: isoTime.optional().meta({ description: 'When a push last succeeded.' }),
  lastError: z
    .string()
    .max(MAX_FEED_REPORT_ERROR_LENGTH)
    .optional()
    .meta({ description: 'Why the last failed push failed (short; secrets and URL credentials removed).' }),
  pushesOk: count.optional().meta({ description: 'Batches pushed since the pod started.' }),
  pushesFailed: count.optional().meta({ description: 'Pushes that failed since the pod started.' }),
  valuesAccepted: count
    .optional()
    .meta({ description: 'Signed values the Signed API accepted since the pod started.' }),
});
export type SignedApiReport = z.infer<typeof signedApiReportSchema>;

export type FeedReport = { time: string; signedApis: SignedApiReport[] };

const field = signedApiReportSchema.shape;

/** One entry, field by field: undefined without a valid name; each other malformed field is left out. */
function parseSignedApi(value: unknown): SignedApiReport | undefined {
  if (!isRecord(value)) return undefined;
  const name = field.name.safeParse(value['name']);
  if (!name.success) return undefined;
  const entry: SignedApiReport = { name: name.data };
  for (const key of Object.keys(field) as (keyof SignedApiReport)[]) {
    if (key === 'name') continue;
    const parsed = field[key].safeParse(value[key]);
    if (parsed.success && parsed.data !== undefined) (entry as Record<string, unknown>)[key] = parsed.data;
  }
  return entry;
}

/**
 * The report of a `<name>-feed-report` ConfigMap's data, or undefined when it is missing, too large, not JSON or
 * has no valid time. Entries without a valid name, repeated names and entries past MAX_FEED_REPORT_SIGNED_APIS are
 * dropped.
 */
export function parseFeedReport(data: Record<string, string> | undefined): FeedReport | undefined {
  const raw = data?.[FEED_REPORT_KEY];
  if (!raw || raw.length > MAX_FEED_REPORT_BYTES) return undefined;
  const value = parseJsonText(raw);
  if (!isRecord(value)) return undefined;
  const time = isoTime.safeParse(value['time']);
  if (!time.success) return undefined;
  const signedApis: SignedApiReport[] = [];
  const seen = new Set<string>();
  const entries = Array.isArray(value['signedApis']) ? value['signedApis'] : [];
  for (const item of entries.slice(0, MAX_FEED_REPORT_SIGNED_APIS)) {
    const entry = parseSignedApi(item);
    if (!entry || seen.has(entry.name)) continue;
    seen.add(entry.name);
    signedApis.push(entry);
  }
  return { time: time.data, signedApis };
}

/** The pod's side: where to report, from its environment; undefined outside an operator-made pod. */
export function readFeedReportEnvironment(
  env: Record<string, string | undefined>,
): { namespace: string; configMap: string } | undefined {
  const configMap = env[FEED_REPORT_CONFIGMAP_ENV];
  const namespace = env[ENV.namespace];
  if (!configMap || !namespace) return undefined;
  return { namespace, configMap };
}
