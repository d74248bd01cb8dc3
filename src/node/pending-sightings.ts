// Carries a coordinator's state to its next run when no hand-over Lease carries it (one cycle a minute,
// `pollInterval: 0`; a coordinator run by hand): its sightings of pending transactions (src/chain/pending.ts; without
// them a run that lives fewer than STUCK_AFTER_BLOCKS blocks would never replace a stuck transaction) and its retries
// of transient API failures (src/node/api-retries.ts; without them a new run would call an API sooner than its
// Retry-After). The text lives where the coordinator already keeps state between runs (src/node/verified-providers.ts):
// the cycle ConfigMap in a pod the operator made, a file of the cache directory otherwise. Those runs never overlap
// (the CronJob's `Forbid`), so the next one reads what the last one wrote.
import { errorMessage } from '../common/errors.js';
import type { Logger } from './logger.js';
import type { VerifiedProvidersStore } from './verified-providers.js';

/** The file of the cache directory that holds the sightings outside a pod. */
export const PENDING_SIGHTINGS_FILE = 'pending-sightings.json';
/** The file of the cache directory that holds the API retries outside a pod. */
export const API_RETRIES_FILE = 'api-retries.json';

/** State a run hands to the next: taken over at its start, written at its end (or with the Lease's renewals). */
export type HandedOverState = { takeOver(text: string | undefined): number; toHandOver(): string | undefined };

/** What the log lines say of one carried state. */
export type CarriedWords = { taken: string; unreadable: string; unwritable: string };

export const SIGHTINGS_WORDS: CarriedWords = {
  taken: 'took over the pending transactions seen by the last run',
  unreadable: 'could not read the pending transactions seen by the last run; counting from now',
  unwritable: 'could not store the pending transactions seen; the next run counts anew',
};

export const API_RETRIES_WORDS: CarriedWords = {
  taken: 'took over the API retries of the last run',
  unreadable: 'could not read the API retries of the last run; its deferred requests are retried now',
  unwritable: 'could not store the API retries; the next run retries its deferred requests at once',
};

/** Takes over the last run's state; a store that fails is a store that is empty. The text read, for `save`. */
export async function loadHandedOver(
  store: VerifiedProvidersStore,
  state: HandedOverState,
  logger: Logger,
  words: CarriedWords,
): Promise<string | undefined> {
  let loaded: string | undefined;
  try {
    loaded = await store.load();
  } catch (error) {
    logger.warn({ err: errorMessage(error) }, words.unreadable);
    return undefined;
  }
  const taken = state.takeOver(loaded);
  if (taken > 0) logger.info({ count: taken }, words.taken);
  return loaded;
}

/** Leaves this run's state for the next, when it differs from what was loaded. Never throws. */
export async function saveHandedOver(
  store: VerifiedProvidersStore,
  state: HandedOverState,
  loaded: string | undefined,
  logger: Logger,
  words: CarriedWords,
): Promise<void> {
  const text = state.toHandOver() ?? '';
  if (text === (loaded ?? '')) return;
  try {
    await store.save(text);
  } catch (error) {
    logger.warn({ err: errorMessage(error) }, words.unwritable);
  }
}
