// The gateway callers' flags that `gateway` and `start` share: --callers DIR (one file per caller, named for it,
// holding its key: a mounted Secret), --caller-rate NAME=N/s|N/m (repeatable) and --default-caller-rate N/s|N/m.
import { errorMessage } from '../common/errors.js';
import { parseRate, type Rate } from '../common/rate-limit.js';
import { CALLER_NAME, type CallersOptions, GatewayCallers } from '../gateway/callers.js';
import type { Logger } from '../observability/index.js';

export const CALLER_OPTIONS = {
  callers: { type: 'string' },
  'caller-rate': { type: 'string', multiple: true },
  'default-caller-rate': { type: 'string' },
} as const;

export const CALLER_OPTIONS_HELP = `      --callers          a directory with one file per gateway caller, named for the caller and holding its key
                         (a mounted Secret): callers then need x-api-key or Authorization: Bearer (401 without);
                         the files are read again every 5 s, so keys rotate without a restart
      --caller-rate      NAME=N/s or NAME=N/m: at most N calls of that caller within any second or minute (429
                         with Retry-After above it); repeatable
      --default-caller-rate  N/s or N/m for every caller without its own rate (default: unlimited)`;

type CallerValues = { callers?: string; 'caller-rate'?: string[]; 'default-caller-rate'?: string };

/** The callers' settings of the flags (undefined without --callers), or what is wrong with them. */
export function callerSettings(
  values: CallerValues,
): { settings?: Omit<CallersOptions, 'logger'> } | { error: string } {
  const rateFlags = values['caller-rate'] ?? [];
  if (!values.callers) {
    if (rateFlags.length || values['default-caller-rate'])
      return { error: '--caller-rate and --default-caller-rate need --callers' };
    return {};
  }
  const rates: Record<string, Rate> = {};
  for (const flag of rateFlags) {
    const [name, text, ...rest] = flag.split('=');
    const rate = text === undefined || rest.length ? undefined : parseRate(text);
    if (!name || !CALLER_NAME.test(name) || !rate)
      return { error: `--caller-rate ${flag}: expected NAME=N/s or NAME=N/m (N a whole number from 1)` };
    rates[name] = rate;
  }
  let defaultRate: Rate | undefined;
  if (values['default-caller-rate'] !== undefined) {
    defaultRate = parseRate(values['default-caller-rate']);
    if (!defaultRate) return { error: `--default-caller-rate ${values['default-caller-rate']}: expected N/s or N/m` };
  }
  return { settings: { dir: values.callers, rates, ...(defaultRate ? { defaultRate } : {}) } };
}

/**
 * The callers of the flags' settings, read from their directory (none without --callers); a directory that cannot be
 * read is said on stderr, and the command exits 1.
 */
export async function loadCallers(
  settings: Omit<CallersOptions, 'logger'> | undefined,
  logger: Logger,
): Promise<{ callers?: GatewayCallers } | { exitCode: 1 }> {
  if (!settings) return {};
  try {
    return { callers: await GatewayCallers.load({ ...settings, logger }) };
  } catch (error) {
    process.stderr.write(`Cannot read the gateway callers: ${errorMessage(error)}\n`);
    return { exitCode: 1 };
  }
}
