// Template resolution (airnode-facts §3 2e): local `templates` first, then on-chain getTemplates in
// batches of 10 with a per-id templates() fallback. Missing templates come back absent.
import { ZeroAddress } from 'ethers';
import { callView } from './calls.js';
import { rrpInterface } from './contracts.js';
import type { RpcClient } from './rpc.js';
import { BATCH_SIZE } from './types.js';

export type LocalTemplate = { templateId: string; endpointId: string; encodedParameters: string };
export type Template = { nodeAddress: string; endpointId: string; encodedParameters: string };

export function chunk<T>(items: T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}

export async function resolveTemplates(
  client: RpcClient,
  input: { rrpAddress: string; nodeAddress: string; templateIds: string[]; localTemplates: LocalTemplate[] },
): Promise<Map<string, Template>> {
  const resolved = new Map<string, Template>();
  const local = new Map(input.localTemplates.map((t) => [t.templateId.toLowerCase(), t]));
  const remote: string[] = [];
  for (const id of new Set(input.templateIds.map((t) => t.toLowerCase()))) {
    const template = local.get(id);
    if (template) {
      // A local template is the node's own by definition.
      resolved.set(id, {
        nodeAddress: input.nodeAddress,
        endpointId: template.endpointId.toLowerCase(),
        encodedParameters: template.encodedParameters,
      });
    } else {
      remote.push(id);
    }
  }
  const contract = { address: input.rrpAddress, iface: rrpInterface };
  const store = (id: string, nodeAddress: string, endpointId: string, encodedParameters: string) => {
    if (nodeAddress === ZeroAddress) return; // missing ids return zero values
    resolved.set(id, { nodeAddress, endpointId: endpointId.toLowerCase(), encodedParameters });
  };
  for (const ids of chunk(remote, BATCH_SIZE)) {
    try {
      const [nodes, endpointIds, parameters] = await callView<[string[], string[], string[]]>(
        client,
        contract,
        'getTemplates',
        [ids],
      );
      ids.forEach((id, i) => {
        store(id, String(nodes[i]), String(endpointIds[i]), String(parameters[i]));
      });
    } catch {
      for (const id of ids) {
        try {
          const [node, endpointId, parameters] = await callView<[string, string, string]>(
            client,
            contract,
            'templates',
            [id],
          );
          store(id, node, endpointId, parameters);
        } catch {
          // left unresolved: the request is dropped this cycle and retried next one
        }
      }
    }
  }
  return resolved;
}
