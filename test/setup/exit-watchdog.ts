// After the last test, a process that something leaked keeps alive (a timer that polls forever, a socket, a child)
// would hold the run until CI's time limit. 30 s after the root after-all hook it says what still runs and exits with
// mocha's exit code; the timer is unref'd, so a process that ends by itself is never held by it.
const GRACE_MS = 30_000;

after(() => {
  setTimeout(() => {
    const running = process.getActiveResourcesInfo().filter((kind) => kind !== 'TTYWrap');
    console.error(`mocha: still running ${GRACE_MS / 1000} s after the last test (${running.join(', ')}): exiting`);
    process.exit();
  }, GRACE_MS).unref();
});
