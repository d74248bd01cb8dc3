// What zod's `locales` namespace holds in an `oracle-node validate` process: English alone, the language of every
// message validate prints (validate-startup.ts explains why the other 63 are not loaded).
export { default as en } from 'zod/v4/locales/en.js';
