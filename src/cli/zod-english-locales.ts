// What zod's `locales` namespace holds in an `oracle-node` process: English alone, the language of every message it
// prints (zod-english-only.ts explains why the other 63 are not loaded).
export { default as en } from 'zod/v4/locales/en.js';
