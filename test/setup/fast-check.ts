// Property tests run with a fixed seed by default so CI is deterministic (a red CI blocks every landing);
// FC_SEED=<n> replays or explores another sequence, FC_SEED=random draws a new one each run.
import fc from 'fast-check';

const requested = process.env['FC_SEED'];
if (requested !== 'random') {
  const seed = requested === undefined ? 20261121 : Number(requested);
  if (!Number.isInteger(seed)) throw new Error(`FC_SEED must be an integer or "random", got ${requested}`);
  fc.configureGlobal({ seed });
}
