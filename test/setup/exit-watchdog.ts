// After the last test, a process that something leaked keeps alive (a timer that polls forever, a socket, a child)
// would hold the run until CI's time limit. 30 s after the root after-all hook it says what still runs and exits with
// mocha's exit code; the timer is unref'd, so a process that ends by itself is never held by it.
// TEST_LEAK_STACKS=1 also records where each timer was made and prints the stacks of the ones still held then: the
// tracking costs a stack per timer, so it is off by default.
import { createHook } from 'node:async_hooks';

const GRACE_MS = 30_000;

type HeldTimer = { hasRef(): boolean };
const timers = new Map<number, { resource: HeldTimer; stack: string }>();
if (process.env.TEST_LEAK_STACKS) {
  createHook({
    init(asyncId, type, _trigger, resource) {
      if (type !== 'Timeout') return;
      const stack = (new Error().stack ?? '').split('\n').slice(2, 14).join('\n');
      timers.set(asyncId, { resource: resource as HeldTimer, stack });
    },
    destroy(asyncId) {
      timers.delete(asyncId);
    },
  }).enable();
}

after(() => {
  setTimeout(() => {
    const running = process.getActiveResourcesInfo().filter((kind) => kind !== 'TTYWrap');
    console.error(`mocha: still running ${GRACE_MS / 1000} s after the last test (${running.join(', ')}): exiting`);
    for (const { resource, stack } of timers.values())
      if (resource.hasRef()) console.error(`mocha: a timer still held, made at\n${stack}`);
    process.exit();
  }, GRACE_MS).unref();
});
