// node:http and node:https for src/, loaded through require. An ES module import of node:http builds its ESM facade,
// which reads every export, and the lazy WebSocket and EventSource getters among them load Node's internal undici
// (with http2, zlib and worker_threads): about 30 ms of CPU in a process that imports only node:http, 11 ms of the
// feed's start-up (Node 24; docs/benchmarks.md, "Start-up of the Airnode feed"). Through require they stay lazy.
// node:https (and tls) is loaded on the first call of `nodeHttps`, as only HTTPS destinations need it.
import type * as Http from 'node:http';
import type * as Https from 'node:https';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export const nodeHttp: typeof Http = require('node:http');

let https: typeof Https | undefined;

/** node:https, loaded on first use (with tls, about 17 ms of CPU): plain HTTP destinations never load it. */
export function nodeHttps(): typeof Https {
  https ??= require('node:https') as typeof Https;
  return https;
}
