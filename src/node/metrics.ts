// Prometheus metrics of the cycle, registered on the registry the gateway server exposes at /metrics.

import { DEFAULT_TOP_SPONSORS, SponsorLabels } from '../common/sponsor-labels.js';
import { REQUEST_LATENCY_BUCKETS_SECONDS } from '../contract/pods.js';
import type { Registry } from '../observability/index.js';
import { counter, gauge, histogram } from '../observability/index.js';
import type { CycleSummary } from './cycle.js';
import {
  apiCallCounts,
  apiDeferralCounts,
  sponsorAnswers,
  sponsorFulfilmentCounts,
  sponsorVolumes,
} from './usage-counts.js';
import type { WindowSummary } from './window.js';

export type CycleMetricsOptions = {
  /** How many sponsors get a label value of their own (`--metrics-top-sponsors`); the others are `other`. */
  topSponsors?: number;
};

export function cycleMetrics(registry: Registry, options: CycleMetricsOptions = {}) {
  const cycles = counter(registry, {
    name: 'node_cycles_total',
    help: 'Request-response cycles by outcome',
    labelNames: ['outcome'] as const,
  });
  const transactions = counter(registry, {
    name: 'node_cycle_transactions_total',
    help: 'Request outcomes of the cycles (fulfilled, failed, withdrawn, skipped, errors; replaced: stuck transactions replaced)',
    labelNames: ['outcome'] as const,
  });
  const duration = histogram(registry, {
    name: 'node_cycle_duration_seconds',
    help: 'Wall time of a request-response cycle',
    buckets: [0.1, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120],
  });
  const providerUp = gauge(registry, {
    name: 'node_provider_up',
    help: '1 when the provider answered in the last cycle and was fit to serve, else 0',
    labelNames: ['chain_id', 'provider'] as const,
  });
  const providerLag = gauge(registry, {
    name: 'node_provider_lag_blocks',
    help: 'Blocks the provider was behind the best provider of its chain in the last cycle',
    labelNames: ['chain_id', 'provider'] as const,
  });
  const providerFaults = counter(registry, {
    name: 'node_provider_faults_total',
    help: 'Cycles that left a provider out, by fault (unavailable, oversized, wrong-chain, syncing, lagging, ahead, stalled)',
    labelNames: ['chain_id', 'provider', 'fault'] as const,
  });
  const balance = gauge(registry, {
    name: 'node_sponsor_wallet_balance_wei',
    help: 'Balance of a sponsor wallet after the last cycle in which it sent a transaction',
    labelNames: ['chain_id', 'sponsor_wallet'] as const,
  });
  const strategyFailures = counter(registry, {
    name: 'node_gas_price_strategy_failures_total',
    help: 'Gas price strategies that failed (each logged at WARN); the next strategy, at last the constant one, is used',
    labelNames: ['chain_id', 'strategy'] as const,
  });
  const requestLatency = histogram(registry, {
    name: 'node_request_latency_seconds',
    help: "Seconds from a request's block to its fulfilment's submission and to its inclusion, measured by windows (--poll-interval)",
    labelNames: ['stage'] as const,
    buckets: REQUEST_LATENCY_BUCKETS_SECONDS,
  });
  const polls = counter(registry, {
    name: 'node_window_polls_total',
    help: 'Polls of the windows after their first cycle (each asks every provider for its head)',
  });
  const deferrals = counter(registry, {
    name: 'node_api_deferrals_total',
    help: "Requests left open after an API call that failed for now, by OIS and status class (429, 408, 5xx, no response; budget: over this node's own rate budget); each is retried later (--api-retry-window)",
    labelNames: ['ois', 'status_class'] as const,
  });
  const idlePolls = counter(registry, {
    name: 'node_window_idle_polls_total',
    help: 'Polls of the windows that found no new block (one eth_blockNumber per provider, nothing more)',
  });
  const apiCalls = counter(registry, {
    name: 'node_api_calls_total',
    help: 'API calls of the cycles by OIS title, endpoint name and outcome (2xx, 3xx, 4xx, 5xx, no_response, failed: processing or encoding, deferred: kept back by the rate budget)',
    labelNames: ['ois', 'endpoint', 'outcome'] as const,
  });
  const sponsorFulfilments = counter(registry, {
    name: 'node_sponsor_fulfilments_total',
    help: 'Requests fulfilled or failed on chain per sponsor; sponsors beyond --metrics-top-sponsors are "other"',
    labelNames: ['chain_id', 'sponsor', 'outcome'] as const,
  });
  const sponsors = new SponsorLabels(options.topSponsors ?? DEFAULT_TOP_SPONSORS);
  const observeUsage = (summary: CycleSummary) => {
    for (const { ois, endpoint, outcome, count } of apiCallCounts(summary))
      apiCalls.inc({ ois, endpoint, outcome }, count);
    const answers = sponsorAnswers(summary);
    sponsors.observe(sponsorVolumes(answers));
    for (const { chainId, sponsor, outcome, count } of sponsorFulfilmentCounts(answers, (chain, address) =>
      sponsors.labelOf(chain, address),
    ))
      sponsorFulfilments.inc({ chain_id: chainId, sponsor, outcome }, count);
  };
  return {
    observe(summary: CycleSummary | WindowSummary | undefined, seconds: number) {
      duration.observe(seconds);
      cycles.inc({ outcome: summary ? 'completed' : 'error' });
      if (!summary) return;
      for (const [outcome, count] of Object.entries(summary.transactions)) transactions.inc({ outcome }, count);
      observeUsage(summary);
      for (const provider of summary.providers) {
        const labels = { chain_id: provider.chainId, provider: provider.provider };
        providerUp.set(labels, provider.ok ? 1 : 0);
        if (provider.lagBlocks === undefined) providerLag.remove(labels);
        else providerLag.set(labels, provider.lagBlocks);
        if (provider.fault) providerFaults.inc({ ...labels, fault: provider.fault });
      }
      for (const failure of summary.gasPriceStrategyFailures) {
        strategyFailures.inc({ chain_id: failure.chainId, strategy: failure.strategy }, failure.count);
      }
      for (const deferral of apiDeferralCounts(summary))
        deferrals.inc({ ois: deferral.ois, status_class: deferral.statusClass }, deferral.count);
      for (const wallet of summary.sponsorWallets) {
        balance.set({ chain_id: wallet.chainId, sponsor_wallet: wallet.sponsorWallet }, Number(wallet.balanceWei));
      }
      if ('window' in summary) {
        polls.inc(summary.window.polls);
        idlePolls.inc(summary.window.idlePolls);
        for (const [stage, latencies] of Object.entries(summary.latency))
          for (const latency of latencies) requestLatency.observe({ stage }, latency);
      }
    },
  };
}
