// The mark of an API call that was not made (a rate budget or a 429's pause, src/ois/budget.ts): its message starts
// with it. A module without imports, so that the cycle's sending half can ask without loading the API client.
export const DEFERRED_PREFIX = 'API call deferred: ';

/**
 * Whether a failed call's message says it was not made: the one mark that crosses every hop of a result (a worker's
 * output, the shard contract), so the cycle leaves such a request open instead of failing it on chain.
 */
export function isDeferredMessage(message: string): boolean {
  return message.startsWith(DEFERRED_PREFIX);
}
