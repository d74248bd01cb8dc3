// What the APIs' rate budget (src/ois/budget.ts) costs per API call, in CPU on one core: the check every attempt
// makes, with no budget (the fast path), with a budget of the OIS that never refuses, with the OIS's and an
// endpoint's, and on an OIS paused by a 429 (a refusal). Load-independent enough to set beside the gateway's CPU
// per request (docs/benchmarks.md, "Gateways"): the share of a gateway call the budget takes.
//   node --import tsx bench/api-budget.bench.ts [--calls 2000000]
import { parseArgs } from 'node:util';
import { ApiBudgets } from '../src/ois/budget.js';

const { values } = parseArgs({ options: { calls: { type: 'string', default: '2000000' } } });
const calls = Number(values.calls);

/** CPU nanoseconds per call of `run`, the median of five passes (user + system time of this process). */
function nsPerCall(run: () => unknown): number {
  const passes: number[] = [];
  for (let pass = 0; pass < 5; pass++) {
    const start = process.cpuUsage();
    for (let i = 0; i < calls; i++) run();
    const used = process.cpuUsage(start);
    passes.push(((used.user + used.system) * 1000) / calls);
  }
  return passes.sort((a, b) => a - b)[2]!;
}

// A loop calls far faster than any budget allows, so the budgets' clock moves 1 ms per reading: 1,000 calls a
// second, which 1,000,000/s never refuses. performance.now() itself, which the process's budgets read, is measured
// on its own line and is to be added.
let clockMs = 0;
const clock = { now: () => (clockMs += 1) };
const never = { calls: 1_000_000, windowMs: 1_000 };
const none = new ApiBudgets();
const ois = new ApiBudgets([{ ois: 'Loopback API', rate: never }], clock);
const both = new ApiBudgets(
  [
    { ois: 'Loopback API', rate: never },
    { ois: 'Loopback API', endpoint: 'price', rate: never },
  ],
  clock,
);
const paused = new ApiBudgets([], { ...clock, maxPauseMs: Number.MAX_SAFE_INTEGER });
paused.pause('Loopback API', 1e12);

const rows: [string, number][] = [
  ['no budget (fast path)', nsPerCall(() => none.acquire('Loopback API', 'price'))],
  ['a budget of the OIS, never refusing', nsPerCall(() => ois.acquire('Loopback API', 'price'))],
  ["the OIS's and the endpoint's, never refusing", nsPerCall(() => both.acquire('Loopback API', 'price'))],
  ['an OIS paused by its 429 (refused)', nsPerCall(() => paused.acquire('Loopback API', 'price'))],
  ['performance.now() (read once per check with a budget)', nsPerCall(() => performance.now())],
];
for (const [name, ns] of rows) process.stdout.write(`${name}: ${ns.toFixed(0)} ns CPU per call\n`);
