// Every subcommand's messages are English, zod's default, but zod's index re-exports every message locale (64
// modules): a resolve hook hands zod the English-only namespace of zod-english-locales.ts instead. For the one-shot
// `validate` that was about 40 ms of CPU to resolve, compile and link; for the feed's start-up 9 ms and 1 MiB
// (docs/benchmarks.md). Only the `locales` namespace of zod changes, which nothing here reads; should zod move the
// index, the hook matches nothing and zod loads as it is.
import { registerHooks } from 'node:module';

const ZOD_LOCALES_INDEX = '../locales/index.js';
const ZOD_FOLDER = '/node_modules/zod/';

/** Registers the hook; call it before anything imports zod. */
export function loadEnglishZodLocaleOnly(): void {
  registerHooks({
    resolve(specifier, context, nextResolve) {
      if (specifier === ZOD_LOCALES_INDEX && context.parentURL?.includes(ZOD_FOLDER)) {
        // Resolved as this module's own import, so a loader that maps .js to .ts (tsx) applies too.
        return nextResolve('./zod-english-locales.js', { ...context, parentURL: import.meta.url });
      }
      return nextResolve(specifier, context);
    },
  });
}
