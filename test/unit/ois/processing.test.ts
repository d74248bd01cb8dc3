import { createRequire } from 'node:module';
import { expect } from 'chai';
import { postProcessResponse, preProcessEndpointParameters } from '../../../src/ois/processing.js';
import { runInSandbox, SandboxError } from '../../../src/ois/sandbox.js';
import type { Endpoint, Ois } from '../../../src/ois/types.js';
import { readExample } from './reference.js';

const require = createRequire(import.meta.url);
const commons = require('@api3/commons') as {
  preProcessEndpointParameters(endpoint: unknown, parameters: unknown): Promise<{ endpointParameters: unknown }>;
  postProcessResponse(response: unknown, endpoint: unknown, parameters: unknown): Promise<unknown>;
};

/** The config loader turns `\${` into `${` after secrets interpolation (airnode-facts §8). */
function exampleEndpoint(example: string): Endpoint {
  const text = JSON.stringify(readExample<{ ois: Ois[] }>(`examples/${example}/config.example.json`)).replaceAll(
    '\\\\${',
    '${',
  );
  return (JSON.parse(text) as { ois: Ois[] }).ois[0]!.endpoints[0]!;
}

function endpointWith(specs: Partial<Endpoint>): Endpoint {
  return {
    name: 'e',
    fixedOperationParameters: [],
    reservedParameters: [{ name: '_type' }],
    parameters: [],
    ...specs,
  };
}

async function sandboxError(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected a failure');
}

// Snippets that should finish get a budget no loaded machine exhausts; those that must hit the deadline get SHORT.
const SHORT = 300;
const run = (code: string, mode: 'sync' | 'callback' | 'function', globals = {}, timeoutMs = 5_000) =>
  runInSandbox({ code, mode, globals, timeoutMs, timeoutMessage: 'Timeout exceeded' });

describe('ois/processing: sandboxed pre/post-processing', function () {
  this.timeout(30_000);

  describe('the sandbox', () => {
    it('evaluates synchronous, callback and function snippets with JSON values', async () => {
      expect(await run('const output = input.a + 1;', 'sync', { input: { a: 1 } })).to.equal(2);
      expect(await run('setTimeout(() => resolve(input * 2), 20);', 'callback', { input: 21 })).to.equal(42);
      expect(
        await run('async (p) => ({ ...p, b: await Promise.resolve(2) })', 'function', { payload: { a: 1 } }),
      ).to.deep.equal({ a: 1, b: 2 });
    });

    it('hands hostile JSON values over intact: an own "__proto__" key, quotes, escapes, line separators', async () => {
      const hostile = JSON.parse(
        '{"__proto__": {"polluted": true}, "a\\"b": "\\\\\\"\\u2028\\u2029</script>\\u0024{x}`", "nested": [{"__proto__": null}], "é": "日本"}',
      ) as Record<string, unknown>;
      for (const mode of ['sync', 'function'] as const) {
        const code =
          mode === 'sync'
            ? 'const output = { value: input, own: Object.keys(input), polluted: ({}).polluted !== undefined || input.polluted !== undefined };'
            : '(value) => ({ value, own: Object.keys(value), polluted: ({}).polluted !== undefined || value.polluted !== undefined })';
        expect(await run(code, mode, { input: hostile, payload: hostile }), mode).to.deep.equal({
          value: hostile,
          own: Object.keys(hostile),
          polluted: false,
        });
      }
    });

    it("defines the globals before a script's own declarations take effect, as the reference's context does", async () => {
      expect(await run('function input() {} const output = typeof input;', 'sync', { input: 1 })).to.equal('function');
      expect(await run('var input; const output = input;', 'sync', { input: 7 })).to.equal(7);
    });

    it('stops while(true){} at the deadline', async () => {
      // Without the deadline this never returns and the test times out.
      expect(await sandboxError(run('while(true){}', 'sync', {}, SHORT))).to.equal('Timeout exceeded');
    });

    it('stops a never-resolving async snippet and an async busy loop', async () => {
      expect(await sandboxError(run('new Promise(() => {})', 'callback', {}, SHORT))).to.equal('Timeout exceeded');
      expect(await sandboxError(run('async () => new Promise(() => {})', 'function', { payload: {} }, SHORT))).to.equal(
        'Timeout exceeded',
      );
      expect(
        await sandboxError(run('async () => { await null; while (true) {} }', 'function', { payload: {} }, SHORT)),
      ).to.equal('Timeout exceeded');
      expect(
        await sandboxError(run('setInterval(() => {}, 1)', 'callback', {}, SHORT)),
        'an interval that never resolves',
      ).to.equal('Timeout exceeded');
    });

    it('has no process, require, module, fetch, environment or host constructors', async () => {
      for (const code of [
        'const output = process.env',
        'const output = require("child_process")',
        'const output = globalThis.constructor.constructor("return process")()',
        'const output = (function(){ return this })().process.pid',
        'const output = Function("return require")()("fs")',
        'const output = fetch("http://127.0.0.1")',
      ]) {
        const message = await sandboxError(run(code, 'sync'));
        expect(message, code).to.match(
          /not defined|undefined|not a function|cannot read|not supported|not found|could not load/i,
        );
      }
      const globals = (await run('const output = Object.getOwnPropertyNames(globalThis)', 'sync')) as string[];
      for (const name of [
        'process',
        'require',
        'module',
        'Buffer',
        'fetch',
        'std',
        'os',
        'print',
        'WebAssembly',
        'performance',
      ]) {
        expect(globals, name).to.not.include(name);
      }
      const dynamicImport = await sandboxError(run('import("fs").then(resolve, reject)', 'callback'));
      expect(dynamicImport).to.match(/could not load|not supported|not found|import/i);
      expect(
        await run('const output = typeof process + typeof require + typeof module + typeof Buffer', 'sync'),
      ).to.equal('undefinedundefinedundefinedundefined');
    });

    it('stops a memory bomb with a clear error and keeps serving', async () => {
      const message = await sandboxError(
        runInSandbox({
          code: 'const a = []; while (true) a.push(new Array(1e5).fill(Math.random()));',
          mode: 'sync',
          globals: {},
          timeoutMs: 20_000,
          timeoutMessage: 'Timeout exceeded',
        }),
      );
      expect(message).to.match(/^Processing exceeded the memory limit of \d+ bytes$/);
      const strings = await sandboxError(
        runInSandbox({
          code: 'let s = "x"; while (true) s = s + s;',
          mode: 'sync',
          globals: {},
          timeoutMs: 20_000,
          timeoutMessage: 'Timeout exceeded',
        }),
      );
      expect(strings).to.match(/memory limit|string too long/);
      expect(await run('const output = 1 + 1', 'sync')).to.equal(2);
    });

    it('stops runaway recursion with a clear error', async () => {
      expect(await sandboxError(run('function f() { return f() + 1 } const output = f()', 'sync'))).to.equal(
        'Processing exceeded the maximum stack size',
      );
      expect(await run('function f(n) { return n === 0 ? 0 : f(n - 1) + 1 } const output = f(500)', 'sync')).to.equal(
        500,
      );
    });

    it('reports thrown errors, rejections and non-JSON output', async () => {
      expect(await sandboxError(run('throw new Error("boom")', 'sync'))).to.equal('boom');
      expect(await sandboxError(run('() => { throw new TypeError("bad") }', 'function', { payload: {} }))).to.equal(
        'TypeError: bad',
      );
      expect(await sandboxError(run('reject(new Error("nope"))', 'callback'))).to.equal('nope');
      expect(await sandboxError(run('const output = 1n', 'sync'))).to.match(
        /^Processing output is not JSON-serializable/,
      );
      expect(await sandboxError(run('const x = 1;', 'sync'))).to.match(/output.*not defined/);
      expect(await sandboxError(run('syntax error here', 'sync'))).to.match(/SyntaxError/);
      expect(await sandboxError(run('throw "text"', 'sync'))).to.equal('text');
      expect(await sandboxError(run('throw 42', 'sync'))).to.equal('42');
      expect(await sandboxError(run('throw 10n', 'sync'))).to.equal('10');
      expect(await sandboxError(run('throw undefined', 'sync'))).to.equal('undefined');
      expect(await sandboxError(run('reject({ code: 7 })', 'callback'))).to.equal('{"code":7}');
      expect(await sandboxError(run('for (let i = 0; i < 1001; i++) setTimeout(() => {}, 1)', 'callback'))).to.equal(
        'Too many timers',
      );
    });

    it('captures console output instead of printing it', async () => {
      const logs: string[] = [];
      await runInSandbox({
        code: 'console.log("a", { b: 1 }); console.error("c"); const output = 1;',
        mode: 'sync',
        globals: {},
        timeoutMs: 5_000,
        timeoutMessage: 'T',
        logs,
      });
      expect(logs).to.deep.equal(['a {"b":1}', 'c']);

      // A line stops at 2,000 characters, and the arguments past it are never formatted (no toJSON of theirs runs).
      const bounded: string[] = [];
      const formattedPastTheLimit = await runInSandbox({
        code: `console.log(...Array(60000).fill('abc'));
          console.log('x'.repeat(2000), { toJSON() { globalThis.formatted = true; return 1; } });
          const output = globalThis.formatted === true;`,
        mode: 'sync',
        globals: {},
        timeoutMs: 5_000,
        timeoutMessage: 'T',
        logs: bounded,
      });
      expect(bounded.map((line) => line.length)).to.deep.equal([2000, 2000]);
      expect(bounded[0]!.startsWith('abc abc abc')).to.equal(true);
      expect(formattedPastTheLimit).to.equal(false);
    });

    it('cannot be fooled by a snippet that replaces JSON.stringify', async () => {
      expect(await run('JSON.stringify = () => "not json"; const output = { a: 1 };', 'sync')).to.deep.equal({ a: 1 });
    });

    it('isolates executions from each other', async () => {
      await run('globalThis.leak = 42; const output = 1', 'sync');
      expect(await run('const output = typeof leak', 'sync')).to.equal('undefined');
    });

    it('runs many executions concurrently', async () => {
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => run('setTimeout(() => resolve(input), 5)', 'callback', { input: i })),
      );
      expect(results).to.deep.equal(Array.from({ length: 20 }, (_, i) => i));
    });

    it('throws SandboxError instances', async () => {
      try {
        await run('throw 1', 'sync');
        expect.fail('should throw');
      } catch (error) {
        expect(error).to.be.instanceOf(SandboxError);
      }
    });
  });

  describe('specifications (inputs and outputs as the reference)', () => {
    it('runs the coingecko-pre-processing example like the reference', async () => {
      const endpoint = exampleEndpoint('coingecko-pre-processing');
      const parameters = { coinId: 'bitcoin', unixTimestamp: '1650000000', _type: 'int256', _path: 'x' };
      const ours = await preProcessEndpointParameters(endpoint, parameters);
      const theirs = await commons.preProcessEndpointParameters(endpoint, parameters);
      expect(ours).to.deep.equal(theirs.endpointParameters);
      expect(ours).to.deep.include({ unixTimestamp: '15-04-2022', _type: 'int256', _path: 'x' });
    });

    it('runs the coingecko-post-processing example like the reference', async () => {
      const endpoint = exampleEndpoint('coingecko-post-processing');
      const response = [
        { current_price: 100.5, price_change_percentage_30d_in_currency: 1.25 },
        { current_price: 50.25, price_change_percentage_30d_in_currency: -3.5 },
      ];
      const logs: string[] = [];
      const ours = await postProcessResponse(response, endpoint, { coinIds: 'a,b' }, { logs });
      const theirs = await commons.postProcessResponse(response, endpoint, { coinIds: 'a,b' });
      expect(ours).to.deep.equal(theirs);
      expect(logs).to.have.length(2);
    });

    it('hides reserved parameters from V1 snippets and re-adds them afterwards', async () => {
      const endpoint = endpointWith({
        preProcessingSpecifications: [
          {
            environment: 'Node',
            timeoutMs: 1000,
            value: 'const output = { ...input, seen: Object.keys(endpointParameters).join() };',
          },
          {
            environment: 'Node async',
            timeoutMs: 1000,
            value: 'setTimeout(() => resolve({ ...input, _type: "bool", step2: true }), 1);',
          },
        ],
      });
      const parameters = { a: '1', _type: 'int256', _path: 'p' };
      const ours = await preProcessEndpointParameters(endpoint, parameters);
      const theirs = await commons.preProcessEndpointParameters(endpoint, parameters);
      expect(ours).to.deep.equal(theirs.endpointParameters);
      expect(ours).to.deep.equal({ a: '1', seen: 'a', step2: true, _type: 'int256', _path: 'p' });
    });

    it('chains V1 post-processing and validates V2 output shapes', async () => {
      const chained = endpointWith({
        postProcessingSpecifications: [
          { environment: 'Node', timeoutMs: 1000, value: 'const output = input.value * 2;' },
          { environment: 'Node async', timeoutMs: 1000, value: 'resolve(input + Number(endpointParameters.add));' },
        ],
      });
      expect(await postProcessResponse({ value: 20 }, chained, { add: '2', _times: '1' })).to.deep.equal({
        response: 42,
      });

      const v2 = (value: string) =>
        endpointWith({ postProcessingSpecificationV2: { environment: 'Node', timeoutMs: 1000, value } });
      expect(
        await postProcessResponse(1, v2('({ response }) => ({ response: response + 1, timestamp: 5 })'), {}),
      ).to.deep.equal({
        response: 2,
        timestamp: 5,
      });
      expect(await sandboxError(postProcessResponse(1, v2('({ response }) => response'), {}))).to.match(
        /must return an object/,
      );
      expect(await sandboxError(postProcessResponse(1, v2('() => ({ response: 1, timestamp: -1 })'), {}))).to.match(
        /invalid timestamp/,
      );
      const pre = endpointWith({
        preProcessingSpecificationV2: { environment: 'Node', timeoutMs: 1000, value: '() => ({ wrong: 1 })' },
      });
      expect(await sandboxError(preProcessEndpointParameters(pre, {}))).to.match(/endpointParameters/);
      const preV1 = endpointWith({
        preProcessingSpecifications: [{ environment: 'Node', timeoutMs: 1000, value: 'const output = [1]' }],
      });
      expect(await sandboxError(preProcessEndpointParameters(preV1, {}))).to.match(/must be an object/);
    });

    it('uses the reference timeout texts and the overall budget', async () => {
      const sync = endpointWith({
        postProcessingSpecifications: [{ environment: 'Node', timeoutMs: 50, value: 'while (true) {}' }],
      });
      expect(await sandboxError(postProcessResponse(1, sync, {}))).to.equal('Script execution timed out after 50ms');
      const async = endpointWith({
        postProcessingSpecifications: [{ environment: 'Node async', timeoutMs: 50, value: '' }],
      });
      expect(await sandboxError(postProcessResponse(1, async, {}))).to.equal('Timeout exceeded');
      const v2 = endpointWith({
        postProcessingSpecificationV2: { environment: 'Node', timeoutMs: 50, value: '() => new Promise(() => {})' },
      });
      expect(await sandboxError(postProcessResponse(1, v2, {}))).to.equal('Full timeout exceeded');
      const budget = endpointWith({
        postProcessingSpecifications: [{ environment: 'Node', timeoutMs: 5000, value: 'while (true) {}' }],
      });
      expect(await sandboxError(postProcessResponse(1, budget, {}, { totalTimeoutMs: 100 }))).to.equal(
        'Full timeout exceeded',
      );
    });
  });
});
