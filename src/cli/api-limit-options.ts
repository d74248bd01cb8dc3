// The APIs' rate budgets of every engine command that calls APIs (gateway, worker, feed; coordinator and start):
// --api-rate-limit 'TITLE=N/s' or 'TITLE/ENDPOINT=N/m', repeatable. N/s: at most N calls start within any one second;
// N/m: within any 60 s (a sliding window, as APIs count); 0 closes the API to the process (a share of nothing). A title and its endpoint both limited: both apply; one
// target given a per-minute and a per-second rate: both apply (a budget with a burst). Titles and endpoints are checked
// against the config at start: a flag that names neither is refused with its own text.
import { parseRate, type Rate } from '../common/rate-limit.js';
import { type ApiBudgetsOptions, type ApiLimit, MAX_BUDGET_WAIT_MS, setApiBudgets } from '../ois/budget.js';

export const API_LIMIT_OPTIONS = { 'api-rate-limit': { type: 'string', multiple: true } } as const;

export const API_LIMIT_OPTIONS_HELP = `      --api-rate-limit   TITLE=N/s, TITLE=N/m, TITLE/ENDPOINT=N/s or TITLE/ENDPOINT=N/m: at most N calls to the API
                         of that OIS title (or to that endpoint of it) start within any second or minute, counted
                         in this process (its share of the node's budget); over it a call is never sent: a cycle's
                         call (a worker's, or a coordinator's own) waits for its turn within its window, else its
                         request stays open for the next; a gateway answers 429 with Retry-After, a feed skips to
                         its next interval; repeatable`;

/**
 * The most calls one flag's window may hold: a sliding window keeps the start time of each call in it (8 bytes), so
 * a million is 8 MB; the CRD's bounds keep spec.apiLimits within it.
 */
export const MAX_BUDGET_CALLS = 1_000_000;

/** N/s or N/m, or a share of nothing (0/s, 0/m: the operator's division left this pod no call of that API). */
function parseShare(text: string): Rate | undefined {
  const none = /^0\/(s|m)$/.exec(text.trim());
  if (none) return { calls: 0, windowMs: none[1] === 's' ? 1_000 : 60_000 };
  return parseRate(text);
}

/** The OIS titles and endpoint names of a config (node or feed), to check the flags against. */
type OisNames = readonly { title: string; endpoints: readonly { name: string }[] }[];

/**
 * The limits of the flags, resolved against the config's OISes, or the first flag that is wrong, quoted as given. The
 * target is read as an OIS title first, then as TITLE/ENDPOINT split at its last slash (a title may hold a slash).
 */
export function parseApiRateLimits(
  flags: readonly string[] | undefined,
  oises: OisNames,
): { limits: ApiLimit[] } | { error: string } {
  const limits: ApiLimit[] = [];
  const seen = new Set<string>();
  for (const flag of flags ?? []) {
    const at = flag.lastIndexOf('=');
    const target = at > 0 ? flag.slice(0, at) : '';
    const rate = at > 0 ? parseShare(flag.slice(at + 1)) : undefined;
    if (rate && rate.calls > MAX_BUDGET_CALLS)
      return {
        error: `--api-rate-limit '${flag}': at most ${MAX_BUDGET_CALLS} calls per window (the limiter keeps the start of each one)`,
      };
    if (!target || !rate)
      return {
        error: `--api-rate-limit '${flag}': expected TITLE=N/s, TITLE=N/m or TITLE/ENDPOINT=N/s (N a whole number; 0: no call)`,
      };
    let limit: ApiLimit | undefined;
    if (oises.some((ois) => ois.title === target)) limit = { ois: target, rate };
    else {
      const slash = target.lastIndexOf('/');
      const title = target.slice(0, Math.max(0, slash));
      const endpoint = target.slice(slash + 1);
      const ois = slash > 0 ? oises.find((candidate) => candidate.title === title) : undefined;
      if (!ois)
        return { error: `--api-rate-limit '${flag}': the config has no OIS titled '${slash > 0 ? title : target}'` };
      if (!ois.endpoints.some((candidate) => candidate.name === endpoint))
        return { error: `--api-rate-limit '${flag}': OIS '${title}' has no endpoint named '${endpoint}'` };
      limit = { ois: title, endpoint, rate };
    }
    const key = JSON.stringify([limit.ois, limit.endpoint ?? null, rate.windowMs]);
    if (seen.has(key))
      return {
        error: `--api-rate-limit '${flag}': a rate per ${rate.windowMs === 1_000 ? 'second' : 'minute'} for it is given twice`,
      };
    seen.add(key);
    limits.push(limit);
  }
  return { limits };
}

/**
 * Parses the flags and makes them the process's budgets (src/ois/budget.ts), which every API call of the process
 * consults. `defaultMaxWaitMs`: how long a call that names no wait of its own may wait for its turn (0 in a gateway
 * and a feed, which refuse or skip; a worker waits within its window).
 */
export function applyApiRateLimits(
  flags: readonly string[] | undefined,
  oises: OisNames,
  options: Pick<ApiBudgetsOptions, 'defaultMaxWaitMs'> = {},
): { limits: ApiLimit[] } | { error: string } {
  const parsed = parseApiRateLimits(flags, oises);
  if ('error' in parsed) return parsed;
  setApiBudgets(parsed.limits, options);
  return parsed;
}

/**
 * How long a window's worker's API call waits for its turn in the budget when its caller names no wait: a window's
 * length. A window's deadline ends the call sooner (its request stays open for the next window); a `--shard` worker
 * waits no later than its Job's deadline allows (src/node/budget-wait.ts).
 */
export const WORKER_BUDGET_WAIT_MS = MAX_BUDGET_WAIT_MS;
