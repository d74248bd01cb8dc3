// Carries the chain ids the coordinator verified to its next run (src/chain/verified-chain-ids.ts says why and
// how a provider is named there). The text lives where the coordinator already keeps state between runs: the
// cycle ConfigMap in a pod the operator made (src/node/kubernetes/), a file in the cache directory otherwise.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ProviderMemory } from '../chain/provider-health.js';
import { parseVerifiedChainIds, providerFingerprint, serializeVerifiedChainIds } from '../chain/verified-chain-ids.js';
import { errorMessage } from '../common/errors.js';
import type { Config } from '../config/index.js';
import type { Logger } from './logger.js';

/** Where the stored text is read and written; `load` resolves undefined when there is none. */
export interface VerifiedProvidersStore {
  load(): Promise<string | undefined>;
  save(text: string): Promise<void>;
}

const FILE_NAME = 'verified-chain-ids.json';
/** A stored file larger than this is not read (the parser bounds it again). */
const MAX_FILE_BYTES = 64 * 1024;

export function fileVerifiedProvidersStore(directory: string): VerifiedProvidersStore {
  return fileTextStore(directory, FILE_NAME);
}

/** A text a coordinator run leaves for the next one, in `fileName` of its cache directory (written atomically). */
export function fileTextStore(directory: string, fileName: string): VerifiedProvidersStore {
  const path = join(directory, fileName);
  return {
    async load() {
      try {
        const text = await readFile(path, 'utf8');
        return text.length > MAX_FILE_BYTES ? undefined : text;
      } catch {
        return undefined; // missing or unreadable: verify again
      }
    },
    async save(text) {
      await mkdir(directory, { recursive: true });
      const temporary = `${path}.${process.pid}.tmp`;
      await writeFile(temporary, text, { mode: 0o600 });
      await rename(temporary, path);
    },
  };
}

const providerUrls = (config: Config) => config.chains.flatMap((c) => Object.values(c.providers).map((p) => p.url));

/** One coordinator run's provider memory, seeded from the store; a store that fails is a store that is empty. */
export async function loadProviderMemory(
  config: Config,
  store: VerifiedProvidersStore,
  logger: Logger,
): Promise<{ memory: ProviderMemory; loaded: string | undefined }> {
  const memory = new ProviderMemory();
  let loaded: string | undefined;
  try {
    loaded = await store.load();
  } catch (error) {
    logger.warn({ err: errorMessage(error) }, 'could not read the verified provider chain ids; verifying again');
  }
  const secret = config.nodeSettings.nodeWalletMnemonic;
  memory.adoptVerified(parseVerifiedChainIds(loaded), providerUrls(config), (url) => providerFingerprint(secret, url));
  return { memory, loaded };
}

/** Stores what this run verified (its providers only), when it differs from what was loaded. Never throws. */
export async function saveProviderMemory(
  config: Config,
  store: VerifiedProvidersStore,
  run: { memory: ProviderMemory; loaded: string | undefined },
  logger: Logger,
): Promise<void> {
  const secret = config.nodeSettings.nodeWalletMnemonic;
  const text = serializeVerifiedChainIds(
    run.memory.verifiedFor(providerUrls(config), (url) => providerFingerprint(secret, url)),
  );
  if (text === run.loaded) return;
  try {
    await store.save(text);
  } catch (error) {
    logger.warn({ err: errorMessage(error) }, 'could not store the verified provider chain ids');
  }
}
