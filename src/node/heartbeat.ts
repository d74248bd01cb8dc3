// Heartbeat after each cycle (airnode-facts §7; reference reporting/heartbeat.ts): a signed payload that tells
// a monitoring service this node is alive and where its gateways are. Sent by `oracle-node start` and by
// `oracle-node coordinator` (alone or in the operator's CronJob). It never throws: a failure is logged and
// counted, and the cycle goes on.
import type { BaseWallet } from 'ethers';
import type { Registry } from 'prom-client';
import { type Config, DEFAULT_GATEWAY_SERVER_PORT, GATEWAY_BASE_PATHS } from '../config/index.js';
import type { HeartbeatReport } from '../contract/pods.js';
import { counter, type Logger, registerSecret, silentLogger } from '../observability/index.js';
import { deriveDeploymentId } from '../protocol/ids.js';
import { nodeWallet } from '../protocol/wallet.js';
import type { LastCycleCounts } from './usage-counts.js';

export type HeartbeatSigner = Pick<BaseWallet, 'address' | 'signMessageSync'>;

export const HEARTBEAT_API_KEY_HEADER = 'airnode-heartbeat-api-key';
export const HEARTBEAT_TIMEOUT_MS = 5_000;

export type HeartbeatState = {
  /** Defaults to the deployment id derived from the config (cloud provider, node address, stage, version). */
  deploymentId?: string;
  signer?: HeartbeatSigner;
  nowMs?: number;
  /** Cloud gateway URLs come from HTTP_GATEWAY_URL, HTTP_SIGNED_DATA_GATEWAY_URL, OEV_GATEWAY_URL. */
  env?: Record<string, string | undefined>;
  /**
   * Set in a pod the operator made. The reference's local URLs (localhost) would be wrong there: the enabled
   * gateways are reported under `gatewayUrl` (spec.gateway.publicUrl, else the Service's load-balancer
   * address), and no URL at all when there is none.
   */
  kubernetes?: { gatewayUrl?: string };
  /**
   * The counts of the cycle just run (`--heartbeat-usage`): sent as `last_cycle`, after the reference's keys and
   * signed with them. Absent, the payload is the reference's, byte for byte.
   */
  usage?: LastCycleCounts;
};

export type HeartbeatOptions = {
  fetch?: typeof fetch;
  timeoutMs?: number;
  logger?: Logger;
  registry?: Registry;
};

export type HeartbeatOutcome =
  | { sent: false; reason: 'disabled' }
  | { sent: true; status: number; payload: string; signature: string }
  | { sent: false; reason: 'failed'; error: string; payload?: string };

/** How a heartbeat went, as the cycle report (and so the operator's metrics and Events) names it. */
export function heartbeatResult(outcome: HeartbeatOutcome): HeartbeatReport {
  if (outcome.sent) return 'Sent';
  return outcome.reason === 'disabled' ? 'Disabled' : 'Failed';
}

function localGatewayUrl(port: number | undefined, path: string): string {
  return `http://localhost:${port || DEFAULT_GATEWAY_SERVER_PORT}${path}`;
}

type GatewayUrls = { http?: string | undefined; signed?: string | undefined; oev?: string | undefined };

/** The enabled gateways under a public base URL (a trailing slash is dropped). */
function publicGatewayUrls(config: Config, base: string | undefined): GatewayUrls {
  if (!base) return {};
  const root = base.replace(/\/+$/, '');
  const at = (gateway: keyof typeof GATEWAY_BASE_PATHS) =>
    config.nodeSettings[gateway]?.enabled === true ? `${root}${GATEWAY_BASE_PATHS[gateway]}` : undefined;
  return { http: at('httpGateway'), signed: at('httpSignedDataGateway'), oev: at('oevGateway') };
}

function gatewayUrlsOf(config: Config, state: HeartbeatState): GatewayUrls {
  const provider = config.nodeSettings.cloudProvider as { type: string; gatewayServerPort?: number };
  if (state.kubernetes) return publicGatewayUrls(config, state.kubernetes.gatewayUrl);
  if (provider.type === 'local')
    return {
      http: localGatewayUrl(provider.gatewayServerPort, GATEWAY_BASE_PATHS.httpGateway),
      signed: localGatewayUrl(provider.gatewayServerPort, GATEWAY_BASE_PATHS.httpSignedDataGateway),
      oev: localGatewayUrl(provider.gatewayServerPort, GATEWAY_BASE_PATHS.oevGateway),
    };
  const env = state.env ?? process.env;
  return { http: env.HTTP_GATEWAY_URL, signed: env.HTTP_SIGNED_DATA_GATEWAY_URL, oev: env.OEV_GATEWAY_URL };
}

/**
 * The payload string exactly as the reference builds it: keys in this order, optional ones omitted; `last_cycle`
 * only when asked for (a receiver that checks the payload's keys may not know it).
 */
export function buildHeartbeatPayload(config: Config, state: HeartbeatState & { deploymentId: string }): string {
  const { cloudProvider, stage } = config.nodeSettings;
  const provider = cloudProvider as { type: string; region?: string };
  const local = provider.type === 'local';
  const urls = gatewayUrlsOf(config, state);
  return JSON.stringify({
    timestamp: Math.round((state.nowMs ?? Date.now()) / 1000),
    stage,
    cloud_provider: provider.type,
    deployment_id: state.deploymentId,
    ...(!local ? { region: provider.region } : {}),
    ...(urls.http ? { http_gateway_url: urls.http } : {}),
    ...(urls.signed ? { http_signed_data_gateway_url: urls.signed } : {}),
    ...(urls.oev ? { oev_gateway_url: urls.oev } : {}),
    ...(state.usage ? { last_cycle: state.usage } : {}),
  });
}

export async function sendHeartbeat(
  config: Config,
  state: HeartbeatState = {},
  options: HeartbeatOptions = {},
): Promise<HeartbeatOutcome> {
  const logger = options.logger ?? silentLogger();
  const results = options.registry
    ? counter(options.registry, {
        name: 'heartbeat_requests_total',
        help: 'Heartbeats by outcome (success, failure)',
        labelNames: ['outcome'] as const,
      })
    : undefined;
  const heartbeat = config.nodeSettings.heartbeat;
  if (!heartbeat.enabled) {
    logger.info("Not sending heartbeat as 'nodeSettings.heartbeat' is disabled");
    return { sent: false, reason: 'disabled' };
  }
  // Either may carry a credential; whatever logs them (a fetch error naming the URL) redacts them.
  registerSecret(heartbeat.url);
  registerSecret(heartbeat.apiKey);
  let payload: string | undefined;
  try {
    const signer = state.signer ?? nodeWallet(config.nodeSettings.nodeWalletMnemonic!);
    const { cloudProvider, stage, nodeVersion } = config.nodeSettings;
    const deploymentId =
      state.deploymentId ??
      deriveDeploymentId(cloudProvider as { type: string; region?: string }, signer.address, stage, nodeVersion);
    payload = buildHeartbeatPayload(config, { ...state, deploymentId });
    const signature = signer.signMessageSync(payload);
    logger.info('Sending heartbeat...');
    const response = await (options.fetch ?? fetch)(heartbeat.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [HEARTBEAT_API_KEY_HEADER]: heartbeat.apiKey },
      body: JSON.stringify({ payload, signature }),
      signal: AbortSignal.timeout(options.timeoutMs ?? HEARTBEAT_TIMEOUT_MS),
      redirect: 'error',
    });
    // Drain the body so the connection is released; its content is not used.
    await response.arrayBuffer().catch(() => undefined);
    if (!response.ok) throw new Error(`Heartbeat endpoint answered with status code ${response.status}`);
    results?.inc({ outcome: 'success' });
    logger.info('Heartbeat sent successfully');
    return { sent: true, status: response.status, payload, signature };
  } catch (error) {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    results?.inc({ outcome: 'failure' });
    logger.error({ err: message }, 'Failed to send heartbeat');
    return { sent: false, reason: 'failed', error: message, ...(payload ? { payload } : {}) };
  }
}
