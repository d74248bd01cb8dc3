// The oracle's own metrics, per OracleNode, derived from the status the controller computes (so they say what
// `kubectl get onode` says): Ready, the last successful coordinator cycle, its duration, request outcomes, and
// the health, block lag and faults of each chain provider. The operator scrapes nothing itself: the coordinator's cycle
// report (status.lastCycle) is the source, and for a window's request latencies and polls, which the status does not
// carry, the report itself (observeCycleReport). Only the leader publishes them (setLeading): a replica that stands by
// or lost the lease would otherwise serve frozen values beside the leader's.

import { DEFAULT_TOP_SPONSORS, OTHER_SPONSOR, SponsorLabels, sponsorKey } from '../common/sponsor-labels.js';
import type { Config } from '../config/index.js';
import {
  type CycleReport,
  HEARTBEAT_RESULTS,
  LATENCY_STAGES,
  REQUEST_LATENCY_BUCKETS_SECONDS,
} from '../contract/pods.js';
import type { ObjectKey } from '../kube/index.js';
import { Counter, Gauge, Histogram, type Registry } from '../observability/index.js';
import type { OracleNode, OracleNodeStatus } from './resource.js';

const NODE_LABELS = ['namespace', 'name'] as const;
const PROVIDER_LABELS = ['namespace', 'name', 'chain', 'provider'] as const;
const WALLET_LABELS = ['namespace', 'name', 'chain', 'sponsor_wallet'] as const;
const CHAIN_LABELS = ['namespace', 'name', 'chain'] as const;
type ChainLabels = Record<(typeof CHAIN_LABELS)[number], string>;
type ProviderLabels = Record<(typeof PROVIDER_LABELS)[number], string>;
type WalletLabels = Record<(typeof WALLET_LABELS)[number], string>;
/** Per node: the last cycle Job counted, and the label sets published (to remove them later). */
type NodeSeries = {
  job?: string;
  /** The newest entry of status.cycles counted (its heartbeat). */
  record?: string;
  /** The last cycle report whose window counts (latencies, polls) were counted: its Job, else its start. */
  report?: string;
  providers: Map<string, ProviderLabels>;
  /** Label sets of oracle_node_provider_faults_total counted so far. */
  faults: Map<string, ProviderLabels & { fault: string }>;
  wallets: Map<string, WalletLabels>;
  chains: Map<string, ChainLabels>;
  /** Label sets of oracle_node_api_calls_total and oracle_node_sponsor_fulfilments_total counted so far. */
  usage: Map<string, Record<string, string>>;
  /** The sponsors with a label of their own on this node (top N by volume, never taken back). */
  sponsors?: SponsorLabels;
};

/** What the operator knows of a node beyond its report: the bounds of the report's usage labels. */
export type UsageBounds = {
  /** spec.coordinator.metricsTopSponsors (default DEFAULT_TOP_SPONSORS). */
  topSponsors?: number;
  /** The node's `OIS title\nendpoint name` pairs (its config's triggers): a reported call names one, or is dropped. */
  endpoints: ReadonlySet<string>;
};

/** The key of an OIS title and endpoint name in UsageBounds.endpoints. */
export const endpointKey = (ois: string, endpoint: string) => `${ois}\n${endpoint}`;

/** A node's bounds of its usage labels: its spec's top N, and the endpoints its on-chain requests can reach. */
export function usageBounds(node: OracleNode, config: Pick<Config, 'triggers'>): UsageBounds {
  const topSponsors = node.spec.coordinator?.metricsTopSponsors;
  return {
    ...(topSponsors === undefined ? {} : { topSponsors }),
    endpoints: new Set(config.triggers.rrp.map((trigger) => endpointKey(trigger.oisTitle, trigger.endpointName))),
  };
}

/** Request outcomes counted from each new cycle report, keyed by the counts the coordinator writes. */
const OUTCOMES = { seen: 'discovered', fulfilled: 'fulfilled', failed: 'failed', deferred: 'deferred' } as const;

export class OracleNodeMetrics {
  private readonly ready: Gauge<(typeof NODE_LABELS)[number]>;
  private readonly lastSuccess: Gauge<(typeof NODE_LABELS)[number]>;
  private readonly cycleDuration: Gauge<(typeof NODE_LABELS)[number]>;
  private readonly requests: Counter<(typeof NODE_LABELS)[number] | 'outcome'>;
  private readonly providerUp: Gauge<(typeof PROVIDER_LABELS)[number]>;
  private readonly providerLag: Gauge<(typeof PROVIDER_LABELS)[number]>;
  private readonly providerFaults: Counter<(typeof PROVIDER_LABELS)[number] | 'fault'>;
  private readonly balance: Gauge<(typeof WALLET_LABELS)[number]>;
  private readonly belowThreshold: Gauge<(typeof WALLET_LABELS)[number]>;
  private readonly openRequests: Gauge<(typeof WALLET_LABELS)[number]>;
  private readonly heartbeats: Counter<(typeof NODE_LABELS)[number] | 'outcome'>;
  private readonly gasPrice: Gauge<(typeof CHAIN_LABELS)[number]>;
  private readonly gasPriceStrategyFailures: Counter<(typeof NODE_LABELS)[number]>;
  private readonly requestLatency: Histogram<(typeof NODE_LABELS)[number] | 'stage'>;
  private readonly polls: Counter<(typeof NODE_LABELS)[number]>;
  private readonly idlePolls: Counter<(typeof NODE_LABELS)[number]>;
  private readonly standbyServing: Gauge<(typeof NODE_LABELS)[number]>;
  private readonly standbyServed: Counter<(typeof NODE_LABELS)[number]>;
  private readonly apiCalls: Counter<(typeof NODE_LABELS)[number] | 'ois' | 'endpoint' | 'outcome'>;
  private readonly apiDeferrals: Counter<(typeof NODE_LABELS)[number] | 'ois' | 'status_class'>;
  private readonly sponsorFulfilments: Counter<(typeof NODE_LABELS)[number] | 'chain' | 'sponsor' | 'outcome'>;
  private readonly seen = new Map<string, NodeSeries>();
  private publishing = true;

  constructor(registry: Registry) {
    const registers = [registry];
    this.ready = new Gauge({
      name: 'oracle_node_ready',
      help: 'Whether the OracleNode is Ready (1) or not (0)',
      labelNames: NODE_LABELS,
      registers,
    });
    this.lastSuccess = new Gauge({
      name: 'oracle_node_last_successful_cycle_timestamp_seconds',
      help: 'Unix time at which the last successful coordinator cycle completed',
      labelNames: NODE_LABELS,
      registers,
    });
    this.cycleDuration = new Gauge({
      name: 'oracle_node_cycle_duration_seconds',
      help: 'Duration of the last completed coordinator cycle (its Job)',
      labelNames: NODE_LABELS,
      registers,
    });
    this.requests = new Counter({
      name: 'oracle_node_requests_total',
      help: 'On-chain requests by outcome (seen, fulfilled, failed; deferred: left open after a transient API failure), summed over coordinator cycles',
      labelNames: [...NODE_LABELS, 'outcome'],
      registers,
    });
    this.providerUp = new Gauge({
      name: 'oracle_node_provider_up',
      help: 'Whether a chain provider answered in the last cycle (1) or not (0)',
      labelNames: PROVIDER_LABELS,
      registers,
    });
    this.providerLag = new Gauge({
      name: 'oracle_node_provider_block_lag',
      help: 'Blocks a provider was behind the most advanced provider of its chain in the last cycle',
      labelNames: PROVIDER_LABELS,
      registers,
    });
    this.providerFaults = new Counter({
      name: 'oracle_node_provider_faults_total',
      help: 'Coordinator cycles that left a provider out, by fault (unavailable, oversized, wrong-chain, syncing, lagging, ahead, stalled)',
      labelNames: [...PROVIDER_LABELS, 'fault'],
      registers,
    });
    this.balance = new Gauge({
      name: 'oracle_node_sponsor_wallet_balance_wei',
      help: 'Balance of a sponsor wallet after the last cycle in which it had an open request or sent a transaction',
      labelNames: WALLET_LABELS,
      registers,
    });
    this.belowThreshold = new Gauge({
      name: 'oracle_node_sponsor_wallet_below_threshold',
      help: "1 when a sponsor wallet's balance is below its chain's spec.chainLimits[].lowSponsorBalance (chains with one only)",
      labelNames: WALLET_LABELS,
      registers,
    });
    this.openRequests = new Gauge({
      name: 'oracle_node_sponsor_wallet_open_requests',
      help: 'Requests of a sponsor wallet that were open (waiting or servable) in the last cycle that read it',
      labelNames: WALLET_LABELS,
      registers,
    });
    this.heartbeats = new Counter({
      name: 'oracle_node_heartbeats_total',
      help: 'Heartbeats after coordinator cycles by outcome (Sent, Failed, Disabled)',
      labelNames: [...NODE_LABELS, 'outcome'],
      registers,
    });
    this.gasPrice = new Gauge({
      name: 'oracle_node_gas_price_wei',
      help: "Gas price (or max fee per gas) a chain's transactions were priced at in the last cycle that sent any",
      labelNames: CHAIN_LABELS,
      registers,
    });
    this.gasPriceStrategyFailures = new Counter({
      name: 'oracle_node_gas_price_strategy_failures_total',
      help: 'Gas price strategies that failed in coordinator cycles (the next one, at last the constant price, was used); the WARN lines name strategy and reason',
      labelNames: NODE_LABELS,
      registers,
    });
    this.requestLatency = new Histogram({
      name: 'oracle_node_request_latency_seconds',
      help: "Seconds from a request's block to its fulfilment's submission and to its inclusion (stage), as coordinator windows measured them",
      labelNames: [...NODE_LABELS, 'stage'],
      buckets: REQUEST_LATENCY_BUCKETS_SECONDS,
      registers,
    });
    this.standbyServing = new Gauge({
      name: 'oracle_node_standby_serving',
      help: 'Whether the last cycle of a standby (spec.redundancy.standbyDelayBlocks) served requests: 1 means the primary left them open past the standby delay (it is down); 0 otherwise',
      labelNames: NODE_LABELS,
      registers,
    });
    this.standbyServed = new Counter({
      name: 'oracle_node_standby_served_requests_total',
      help: 'Requests a standby (spec.redundancy.standbyDelayBlocks) fulfilled or failed because the primary had left them open past the standby delay',
      labelNames: NODE_LABELS,
      registers,
    });
    this.polls = new Counter({
      name: 'oracle_node_window_polls_total',
      help: 'Polls of the coordinator windows after their first cycle',
      labelNames: NODE_LABELS,
      registers,
    });
    this.idlePolls = new Counter({
      name: 'oracle_node_window_idle_polls_total',
      help: 'Polls of the coordinator windows that found no new block (one eth_blockNumber per provider)',
      labelNames: NODE_LABELS,
      registers,
    });
    this.apiCalls = new Counter({
      name: 'oracle_node_api_calls_total',
      help: 'API calls of the coordinator cycles by OIS title, endpoint name and outcome (2xx, 3xx, 4xx, 5xx, no_response, failed, deferred)',
      labelNames: [...NODE_LABELS, 'ois', 'endpoint', 'outcome'],
      registers,
    });
    this.apiDeferrals = new Counter({
      name: 'oracle_node_api_deferrals_total',
      help: "Requests of the coordinator cycles left open after their API failed for now, by OIS title and status class (429, 408, 5xx, no response; budget: over the node's rate budget); each is retried, and failed on chain only past spec.apiRetryWindowSeconds",
      labelNames: [...NODE_LABELS, 'ois', 'status_class'],
      registers,
    });
    this.sponsorFulfilments = new Counter({
      name: 'oracle_node_sponsor_fulfilments_total',
      help: 'Requests fulfilled or failed on chain per sponsor; beyond spec.coordinator.metricsTopSponsors sponsors, "other"',
      labelNames: [...NODE_LABELS, 'chain', 'sponsor', 'outcome'],
      registers,
    });
  }

  /**
   * Leading: publish. Not leading: every per-node series goes at once, and nothing is published until this replica
   * leads again (a reconcile still finishing after the lease was lost included); the next leader publishes them.
   */
  setLeading(leading: boolean): void {
    this.publishing = leading;
    if (leading) return;
    for (const metric of [
      this.ready,
      this.lastSuccess,
      this.cycleDuration,
      this.requests,
      this.providerUp,
      this.providerLag,
      this.providerFaults,
      this.balance,
      this.belowThreshold,
      this.openRequests,
      this.heartbeats,
      this.gasPrice,
      this.gasPriceStrategyFailures,
      this.requestLatency,
      this.polls,
      this.idlePolls,
      this.standbyServing,
      this.standbyServed,
      this.apiCalls,
      this.apiDeferrals,
      this.sponsorFulfilments,
    ])
      metric.reset();
    this.seen.clear();
  }

  observe(key: ObjectKey, status: OracleNodeStatus): void {
    if (!this.publishing) return;
    const labels = { namespace: key.namespace, name: key.name };
    const state = this.stateOf(key);

    const ready = status.conditions?.find((c) => c.type === 'Ready');
    this.ready.set(labels, ready?.status === 'True' ? 1 : 0);

    // Each reported cycle's heartbeat is counted once, when it first heads status.cycles.
    const newest = status.cycles?.[0];
    if (newest && newest.job !== state.record) {
      state.record = newest.job;
      if (newest.heartbeat) this.heartbeats.inc({ ...labels, outcome: newest.heartbeat });
    }

    // From the status, not only from the cycles this replica saw finish: a new leader knows it at once.
    const lastSuccess = lastSuccessfulCycleSeconds(status);
    if (lastSuccess !== undefined) this.lastSuccess.set(labels, lastSuccess);

    const cycle = status.lastCycle;
    if (!cycle || cycle.job === state.job || cycle.outcome === 'Running') return;
    // A finished cycle seen for the first time: its counts are added once.
    state.job = cycle.job;
    const started = cycle.startTime ? Date.parse(cycle.startTime) : Number.NaN;
    const completed = cycle.completionTime ? Date.parse(cycle.completionTime) : Number.NaN;
    if (Number.isFinite(started) && Number.isFinite(completed) && completed >= started)
      this.cycleDuration.set(labels, (completed - started) / 1000);
    for (const [outcome, countKey] of Object.entries(OUTCOMES)) {
      const count = cycle.counts?.[countKey];
      if (typeof count === 'number' && count > 0) this.requests.inc({ ...labels, outcome }, count);
    }
    const strategyFailures = cycle.counts?.['gasPriceStrategyFailures'];
    if (typeof strategyFailures === 'number' && strategyFailures > 0) {
      this.gasPriceStrategyFailures.inc(labels, strategyFailures);
    }
    const published = new Map<string, ProviderLabels>();
    for (const provider of cycle.providers ?? []) {
      const providerLabels = { ...labels, chain: provider.chainId, provider: provider.provider };
      published.set(JSON.stringify([provider.chainId, provider.provider]), providerLabels);
      this.providerUp.set(providerLabels, provider.up ? 1 : 0);
      if (provider.blockLag === undefined) this.providerLag.remove(providerLabels);
      else this.providerLag.set(providerLabels, provider.blockLag);
      if (provider.fault) {
        const faultLabels = { ...providerLabels, fault: provider.fault };
        this.providerFaults.inc(faultLabels);
        state.faults.set(JSON.stringify([provider.chainId, provider.provider, provider.fault]), faultLabels);
      }
    }
    // Providers removed from the config stop being reported.
    for (const [entry, providerLabels] of state.providers)
      if (!published.has(entry)) this.removeProvider(providerLabels);
    state.providers = published;
    // A wallet keeps its last known balance until it is read again (wallets with open requests or sends are read).
    for (const wallet of cycle.sponsorWallets ?? []) {
      const walletLabels = { ...labels, chain: wallet.chainId, sponsor_wallet: wallet.sponsorWallet };
      this.balance.set(walletLabels, Number(wallet.balanceWei));
      if (wallet.belowThreshold === undefined) this.belowThreshold.remove(walletLabels);
      else this.belowThreshold.set(walletLabels, wallet.belowThreshold ? 1 : 0);
      this.openRequests.set(walletLabels, wallet.openRequests ?? 0);
      state.wallets.set(JSON.stringify([wallet.chainId, wallet.sponsorWallet]), walletLabels);
    }
    // Likewise a chain keeps its last gas price until its next transaction.
    for (const price of cycle.gasPrices ?? []) {
      const chainLabels = { ...labels, chain: price.chainId };
      this.gasPrice.set(chainLabels, Number(price.gasPriceWei));
      state.chains.set(price.chainId, chainLabels);
    }
  }

  /**
   * A window's counts from its cycle report, once per report (its Job, else its start): the request latencies
   * into the histogram, the polls into their counters, a standby's served requests (role, standbyServed). The report is the coordinator's word, read through the
   * contract's parseCycleReport (bounded, well-formed entries only).
   */
  observeCycleReport(key: ObjectKey, report: CycleReport | undefined, bounds?: UsageBounds): void {
    if (!this.publishing || !report) return;
    const reportId = report.job ?? report.startTime;
    if (!reportId) return;
    const state = this.stateOf(key);
    if (state.report === reportId) return;
    state.report = reportId;
    const labels = { namespace: key.namespace, name: key.name };
    for (const stage of LATENCY_STAGES)
      for (const seconds of report.latencySeconds?.[stage] ?? [])
        this.requestLatency.observe({ ...labels, stage }, seconds);
    const polls = report.counts?.['polls'];
    if (typeof polls === 'number' && polls > 0) this.polls.inc(labels, polls);
    const idlePolls = report.counts?.['idlePolls'];
    if (typeof idlePolls === 'number' && idlePolls > 0) this.idlePolls.inc(labels, idlePolls);
    // A standby that served: the primary is down (OracleNodeStandbyServing); a primary's report reads 0.
    const served = report.role === 'standby' ? (report.counts?.['standbyServed'] ?? 0) : 0;
    this.standbyServing.set(labels, served > 0 ? 1 : 0);
    if (served > 0) this.standbyServed.inc(labels, served);
    if (bounds) this.observeUsage(state, labels, report, bounds);
  }

  /**
   * A report's API calls and fulfilments per sponsor. The coordinator is not trusted with the labels: a call counts
   * only under an OIS and endpoint of the node's config, and a sponsor only under its own address while the node's
   * top N (src/common/sponsor-labels.ts, the rule the engine's metrics follow) has room; the rest is `other`.
   */
  private observeUsage(
    state: NodeSeries,
    labels: Record<(typeof NODE_LABELS)[number], string>,
    report: CycleReport,
    bounds: UsageBounds,
  ): void {
    const count = (series: Record<string, string>, inc: () => void) => {
      inc();
      state.usage.set(JSON.stringify(series), series);
    };
    for (const call of report.apiCalls ?? []) {
      if (!bounds.endpoints.has(endpointKey(call.ois, call.endpoint))) continue;
      const series = { ...labels, ois: call.ois, endpoint: call.endpoint, outcome: call.outcome };
      count(series, () => this.apiCalls.inc(series, call.count));
    }
    // Only the node's own OIS titles: the report is the coordinator's word, its labels bounded by the config.
    const titles = new Set([...bounds.endpoints].map((key) => key.slice(0, key.indexOf('\n'))));
    for (const deferral of report.apiDeferrals ?? []) {
      if (!titles.has(deferral.ois)) continue;
      const series = { ...labels, ois: deferral.ois, status_class: deferral.statusClass };
      count(series, () => this.apiDeferrals.inc(series, deferral.count));
    }
    const entries = report.sponsorFulfilments ?? [];
    state.sponsors ??= new SponsorLabels(bounds.topSponsors ?? DEFAULT_TOP_SPONSORS);
    state.sponsors.limit = bounds.topSponsors ?? DEFAULT_TOP_SPONSORS;
    const volumes = new Map<string, number>();
    for (const entry of entries) {
      if (entry.sponsor === OTHER_SPONSOR) continue;
      const key = sponsorKey(entry.chainId, entry.sponsor);
      volumes.set(key, (volumes.get(key) ?? 0) + entry.count);
    }
    state.sponsors.observe(volumes);
    for (const entry of entries) {
      const sponsor =
        entry.sponsor === OTHER_SPONSOR ? OTHER_SPONSOR : state.sponsors.labelOf(entry.chainId, entry.sponsor);
      const series = { ...labels, chain: entry.chainId, sponsor, outcome: entry.outcome };
      count(series, () => this.sponsorFulfilments.inc(series, entry.count));
    }
  }

  private stateOf(key: ObjectKey): NodeSeries {
    const id = `${key.namespace}/${key.name}`;
    const state: NodeSeries = this.seen.get(id) ?? {
      providers: new Map(),
      faults: new Map(),
      wallets: new Map(),
      chains: new Map(),
      usage: new Map(),
    };
    this.seen.set(id, state);
    return state;
  }

  private removeProvider(providerLabels: ProviderLabels): void {
    this.providerUp.remove(providerLabels);
    this.providerLag.remove(providerLabels);
  }

  /** The OracleNode is gone: its series go too. */
  forget(key: ObjectKey): void {
    const labels = { namespace: key.namespace, name: key.name };
    const id = `${key.namespace}/${key.name}`;
    this.ready.remove(labels);
    this.lastSuccess.remove(labels);
    this.cycleDuration.remove(labels);
    for (const outcome of Object.keys(OUTCOMES)) this.requests.remove({ ...labels, outcome });
    this.gasPriceStrategyFailures.remove(labels);
    for (const stage of LATENCY_STAGES) this.requestLatency.remove({ ...labels, stage });
    this.polls.remove(labels);
    this.idlePolls.remove(labels);
    this.standbyServing.remove(labels);
    this.standbyServed.remove(labels);
    const state = this.seen.get(id);
    for (const providerLabels of state?.providers.values() ?? []) this.removeProvider(providerLabels);
    for (const faultLabels of state?.faults.values() ?? []) this.providerFaults.remove(faultLabels);
    for (const walletLabels of state?.wallets.values() ?? []) {
      this.balance.remove(walletLabels);
      this.belowThreshold.remove(walletLabels);
      this.openRequests.remove(walletLabels);
    }
    for (const chainLabels of state?.chains.values() ?? []) this.gasPrice.remove(chainLabels);
    for (const series of state?.usage.values() ?? []) {
      if ('status_class' in series) this.apiDeferrals.remove(series);
      else if ('ois' in series) this.apiCalls.remove(series);
      else this.sponsorFulfilments.remove(series);
    }
    for (const outcome of HEARTBEAT_RESULTS) this.heartbeats.remove({ ...labels, outcome });
    this.seen.delete(id);
  }
}

/**
 * Unix seconds at which the newest successful coordinator cycle ended: the newest Succeeded Job (status.lastCycle) or
 * the newest cycle report in status.cycles (a report is written only by a cycle that ran to its end), whichever is
 * later; undefined when the node has never had one.
 */
export function lastSuccessfulCycleSeconds(status: OracleNodeStatus): number | undefined {
  const ends: number[] = [];
  const cycle = status.lastCycle;
  if (cycle?.outcome === 'Succeeded' && cycle.completionTime) ends.push(Date.parse(cycle.completionTime));
  for (const record of status.cycles ?? [])
    if (record.startTime) ends.push(Date.parse(record.startTime) + (record.durationSeconds ?? 0) * 1000);
  const finite = ends.filter(Number.isFinite);
  return finite.length > 0 ? Math.max(...finite) / 1000 : undefined;
}
