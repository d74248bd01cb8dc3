// Carries a coordinator's sightings of pending transactions (src/chain/pending.ts) to its next run when no hand-over
// Lease carries them (one cycle a minute, `pollInterval: 0`; a coordinator run by hand): without them, a run that
// lives fewer than STUCK_AFTER_BLOCKS blocks would never replace a stuck transaction. The text lives where the
// coordinator already keeps state between runs (src/node/verified-providers.ts): the cycle ConfigMap in a pod the
// operator made, a file of the cache directory otherwise. Those runs never overlap (the CronJob's `Forbid`), so the
// next one reads what the last one wrote.
import type { PendingSightings } from '../chain/pending.js';
import { errorMessage } from '../common/errors.js';
import type { Logger } from './logger.js';
import type { VerifiedProvidersStore } from './verified-providers.js';

/** The file of the cache directory that holds them outside a pod. */
export const PENDING_SIGHTINGS_FILE = 'pending-sightings.json';

/** Takes over the last run's sightings; a store that fails is a store that is empty. The text read, for `save`. */
export async function loadPendingSightings(
  store: VerifiedProvidersStore,
  sightings: PendingSightings,
  logger: Logger,
): Promise<string | undefined> {
  let loaded: string | undefined;
  try {
    loaded = await store.load();
  } catch (error) {
    logger.warn(
      { err: errorMessage(error) },
      'could not read the pending transactions seen by the last run; counting from now',
    );
    return undefined;
  }
  const taken = sightings.takeOver(loaded);
  if (taken > 0) logger.info({ wallets: taken }, 'took over the pending transactions seen by the last run');
  return loaded;
}

/** Leaves this run's sightings for the next, when they differ from what was loaded. Never throws. */
export async function savePendingSightings(
  store: VerifiedProvidersStore,
  sightings: PendingSightings,
  loaded: string | undefined,
  logger: Logger,
): Promise<void> {
  const text = sightings.toHandOver() ?? '';
  if (text === (loaded ?? '')) return;
  try {
    await store.save(text);
  } catch (error) {
    logger.warn(
      { err: errorMessage(error) },
      'could not store the pending transactions seen; the next run counts anew',
    );
  }
}
