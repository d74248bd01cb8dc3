import { expect } from 'chai';
import { QuickJSInstance } from '../../../src/ois/quickjs-ffi.js';
import { runInSandbox, SandboxError, type SandboxMode } from '../../../src/ois/sandbox.js';

// Every value the sandbox gets back from QuickJS (a result, or what a call threw) is freed by the host, on every
// path: a value left behind stays in the instance's linear memory after its context is gone. Each snippet below
// makes the value of one path 64 KiB, so that a path that forgets to free it grows the instance past its initial
// 16 MiB within 300 calls; the pool then drops the grown instance and creates a new one (what is counted here).
const BIG = `'x'.repeat(65536)`;
const PATHS: { path: string; mode: SandboxMode; code: string; throws: boolean }[] = [
  { path: 'the output read back (finish)', mode: 'sync', code: `output = ${BIG};`, throws: false },
  {
    path: 'an output that cannot be made JSON, and its description (finish, describe)',
    mode: 'sync',
    code: `output = { toJSON() { throw ${BIG}; } };`,
    throws: true,
  },
  {
    path: 'a console argument formatted (format)',
    mode: 'sync',
    code: `console.log({ a: ${BIG} }); output = 1;`,
    throws: false,
  },
  { path: 'a script that throws (evaluate)', mode: 'sync', code: `throw ${BIG};`, throws: true },
  {
    path: 'a timer callback that throws (fireTimer)',
    mode: 'callback',
    code: `setTimeout(() => { throw ${BIG}; }, 0);`,
    throws: true,
  },
];

describe('ois/sandbox: every value from QuickJS is freed', function () {
  this.timeout(120_000);
  let created = 0;
  const create = QuickJSInstance.create;

  before(() => {
    // Counts the instances the pool makes; they are still made by the real create.
    QuickJSInstance.create = (...args: Parameters<typeof create>) => {
      created++;
      return create.apply(QuickJSInstance, args);
    };
  });
  after(() => {
    QuickJSInstance.create = create;
  });

  for (const { path, mode, code, throws } of PATHS) {
    it(`300 calls through ${path} reuse one instance`, async () => {
      const call = () =>
        runInSandbox({ code, mode, globals: {}, timeoutMs: 5_000, timeoutMessage: 'Timeout exceeded', logs: [] });
      await call().catch(() => undefined); // an instance of the default limit is in the pool from here on
      const before = created;
      for (let i = 0; i < 300; i++) {
        const outcome = await call().then(
          () => 'answered',
          (error: unknown) => (error instanceof SandboxError ? 'threw' : error),
        );
        expect(outcome).to.equal(throws ? 'threw' : 'answered');
      }
      expect(created - before, 'instances created (each one means the last one grew)').to.equal(0);
    });
  }
});
