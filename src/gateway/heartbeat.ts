// Heartbeat after each cycle (airnode-facts §7; reference reporting/heartbeat.ts): a signed payload that tells
// a monitoring service this node is alive and where its gateways are. It never throws: a failure is logged
// and counted, and the cycle goes on.
import type { Registry } from 'prom-client';
import { type Config, DEFAULT_GATEWAY_SERVER_PORT } from '../config/index.js';
import { counter, type Logger, silentLogger } from '../observability/index.js';
import { deriveDeploymentId } from '../protocol/ids.js';
import { nodeWallet } from '../protocol/wallet.js';
import { HTTP_BASE_PATH, HTTP_SIGNED_DATA_BASE_PATH, OEV_BASE_PATH } from './server.js';
import type { NodeSigner } from './signing.js';

export const HEARTBEAT_API_KEY_HEADER = 'airnode-heartbeat-api-key';
export const HEARTBEAT_TIMEOUT_MS = 5_000;

export type HeartbeatState = {
  /** Defaults to the deployment id derived from the config (cloud provider, node address, stage, version). */
  deploymentId?: string;
  signer?: NodeSigner;
  nowMs?: number;
  /** Cloud gateway URLs come from HTTP_GATEWAY_URL, HTTP_SIGNED_DATA_GATEWAY_URL, OEV_GATEWAY_URL. */
  env?: Record<string, string | undefined>;
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

function localGatewayUrl(port: number | undefined, path: string): string {
  return `http://localhost:${port || DEFAULT_GATEWAY_SERVER_PORT}${path}`;
}

/** The payload string exactly as the reference builds it: keys in this order, optional ones omitted. */
export function buildHeartbeatPayload(config: Config, state: HeartbeatState & { deploymentId: string }): string {
  const { cloudProvider, stage } = config.nodeSettings;
  const provider = cloudProvider as { type: string; region?: string; gatewayServerPort?: number };
  const env = state.env ?? process.env;
  const local = provider.type === 'local';
  const urls = local
    ? {
        http: localGatewayUrl(provider.gatewayServerPort, HTTP_BASE_PATH),
        signed: localGatewayUrl(provider.gatewayServerPort, HTTP_SIGNED_DATA_BASE_PATH),
        oev: localGatewayUrl(provider.gatewayServerPort, OEV_BASE_PATH),
      }
    : { http: env.HTTP_GATEWAY_URL, signed: env.HTTP_SIGNED_DATA_GATEWAY_URL, oev: env.OEV_GATEWAY_URL };
  return JSON.stringify({
    timestamp: Math.round((state.nowMs ?? Date.now()) / 1000),
    stage,
    cloud_provider: provider.type,
    deployment_id: state.deploymentId,
    ...(!local ? { region: provider.region } : {}),
    ...(urls.http ? { http_gateway_url: urls.http } : {}),
    ...(urls.signed ? { http_signed_data_gateway_url: urls.signed } : {}),
    ...(urls.oev ? { oev_gateway_url: urls.oev } : {}),
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
    // The URL may carry a token and is registered as a secret by the loader; the logger redacts it.
    logger.error({ err: message }, 'Failed to send heartbeat');
    return { sent: false, reason: 'failed', error: message, ...(payload ? { payload } : {}) };
  }
}
