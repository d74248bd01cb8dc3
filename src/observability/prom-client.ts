// prom-client's collectors, loaded file by file: its index also loads the Pushgateway (node:https with tls, and
// zlib), the cluster aggregator and the Summary, none of which src/ uses, for about 20 ms of CPU at each start-up of
// every process (docs/benchmarks.md, "Start-up of the Airnode feed"). The types are the package's own; the files are
// its CommonJS modules, so Counter and the others share the one Registry module (and its global registry) as the
// index would.
import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';

const require = createRequire(import.meta.url);

export const Registry: typeof PromClient.Registry = require('prom-client/lib/registry');
export type Registry = PromClient.Registry;
export const Counter: typeof PromClient.Counter = require('prom-client/lib/counter');
export type Counter<T extends string = string> = PromClient.Counter<T>;
export const Gauge: typeof PromClient.Gauge = require('prom-client/lib/gauge');
export type Gauge<T extends string = string> = PromClient.Gauge<T>;
export const Histogram: typeof PromClient.Histogram = require('prom-client/lib/histogram');
export type Histogram<T extends string = string> = PromClient.Histogram<T>;
export const collectDefaultMetrics: typeof PromClient.collectDefaultMetrics = require('prom-client/lib/defaultMetrics');
