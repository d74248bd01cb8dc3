import { expect } from 'chai';
import { postProcessResponse } from '../../../src/ois/processing.js';
import { runInSandbox } from '../../../src/ois/sandbox.js';
import type { Endpoint } from '../../../src/ois/types.js';
import { configureWorkerPool, DEFAULT_WORKER_POOL_SETTINGS } from '../../../src/ois/worker-pool.js';

// Everything a snippet can reach and change in its own context: globals, built-in prototypes and functions, the
// host functions (console, timers, resolve), queued promise jobs and timers that would run after its answer.
const TAMPER = `
  globalThis.leak = 'secret';
  Object.prototype.leak = 'secret';
  String.prototype.leak = 'secret';
  Function.prototype.leak = 'secret';
  Array.prototype.push = function () { return 'tampered'; };
  JSON.parse = () => 'tampered';
  JSON.stringify = () => '"tampered"';
  Math.random = () => 4;
  Date.now = () => 0;
  console.log = () => { throw new Error('tampered'); };
  globalThis.setTimeout = () => 'tampered';
  globalThis.resolve = () => 'tampered';
  delete globalThis.Array;
  Object.freeze(Object.prototype);
`;
// Only where the call does not itself await a promise (the function mode's wrapper does).
const TAMPER_PROMISES = `Promise.prototype.then = function () { return 'tampered'; };`;
// What a clean context shows; any trace of an earlier call changes one of these.
const PROBE = `({
  leak: typeof globalThis.leak,
  late: typeof globalThis.late,
  objectLeak: typeof ({}).leak,
  stringLeak: typeof ''.leak,
  functionLeak: typeof (() => 1).leak,
  push: (() => { const list = []; return list.push(1); })(),
  parse: JSON.parse('{"a":1}').a,
  random: Math.random() < 1,
  now: Date.now() > 0,
  promiseThen: typeof Promise.resolve().then(() => 1),
  console: (() => { try { console.log('probe'); return 'ok'; } catch { return 'tampered'; } })(),
  timers: typeof setTimeout(() => {}, 0),
  array: typeof Array,
  frozen: Object.isFrozen(Object.prototype),
})`;
const CLEAN = {
  leak: 'undefined',
  late: 'undefined',
  objectLeak: 'undefined',
  stringLeak: 'undefined',
  functionLeak: 'undefined',
  push: 1,
  parse: 1,
  random: true,
  now: true,
  promiseThen: 'object',
  console: 'ok',
  timers: 'number',
  array: 'function',
  frozen: false,
};

const run = (code: string, mode: 'sync' | 'callback' | 'function') =>
  runInSandbox({ code, mode, globals: { input: 1, payload: 1 }, timeoutMs: 5_000, timeoutMessage: 'Timeout exceeded' });

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('ois/sandbox: no state shared between calls', function () {
  this.timeout(60_000);

  it('a call sees none of the changes an earlier call made to its globals, built-ins and host functions', async () => {
    for (let round = 0; round < 20; round++) {
      expect(await run(`${TAMPER}; ${TAMPER_PROMISES}; const output = 1;`, 'sync')).to.equal(1);
      expect(await run(`const output = ${PROBE};`, 'sync'), `round ${round}`).to.deep.equal(CLEAN);
    }
  });

  it("an earlier call's pending timers, intervals and promise jobs never run into a later call", async () => {
    for (let round = 0; round < 5; round++) {
      const leaving = `
        setTimeout(() => { globalThis.late = 'timer'; globalThis.leak = 'timer'; }, 5);
        setInterval(() => { globalThis.late = 'interval'; }, 1);
        Promise.resolve().then(() => { globalThis.late = 'job'; });
        resolve(1);`;
      expect(await run(leaving, 'callback')).to.equal(1);
      await pause(20);
      expect(await run(`async () => ${PROBE}`, 'function'), `round ${round}`).to.deep.equal(CLEAN);
    }
  });

  it('a tampering post-processing call leaves nothing for the next one on the same worker', async () => {
    // One worker: every call runs on the same thread and the same pooled WebAssembly instances.
    configureWorkerPool({ size: 1 });
    try {
      const tampering: Endpoint = {
        name: 'tamper',
        fixedOperationParameters: [],
        reservedParameters: [],
        parameters: [],
        postProcessingSpecificationV2: {
          environment: 'Node',
          timeoutMs: 5_000,
          value: `async ({ response }) => { ${TAMPER}; setTimeout(() => { globalThis.late = 'timer'; }, 1); return { response }; }`,
        },
      };
      const probing: Endpoint = {
        ...tampering,
        name: 'probe',
        postProcessingSpecificationV2: {
          environment: 'Node',
          timeoutMs: 5_000,
          value: `async () => ({ response: ${PROBE} })`,
        },
      };
      for (let round = 0; round < 10; round++) {
        expect(await postProcessResponse({ price: round }, tampering, {})).to.deep.equal({
          response: { price: round },
        });
        expect(await postProcessResponse(null, probing, {}), `round ${round}`).to.deep.equal({ response: CLEAN });
      }
    } finally {
      configureWorkerPool(DEFAULT_WORKER_POOL_SETTINGS);
    }
  });
});
