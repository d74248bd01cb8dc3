// Authorization (airnode-facts §3.1): all four authorizer lists empty means open; otherwise the
// off-chain `authorizations` short-circuit, then on-chain authorizers in chunks of 10, OR-merged.
// A request without a positive answer is not served (dropped, no fail transaction).
import { Interface } from 'ethers';
import { callView, ethCall } from './calls.js';
import { erc721AuthorizerInterface, rrpInterface } from './contracts.js';
import { RpcClient } from './rpc.js';
import { chunk } from './templates.js';
import { BATCH_SIZE, type ChainConfig } from './types.js';

export type AuthorizationInput = {
  id: string;
  endpointId: string;
  sponsor: string;
  requester: string;
};

export function authorizersAreEmpty(authorizers: ChainConfig['authorizers']): boolean {
  return (
    authorizers.requesterEndpointAuthorizers.length === 0 &&
    (authorizers.crossChainRequesterAuthorizers ?? []).length === 0 &&
    (authorizers.requesterAuthorizersWithErc721 ?? []).length === 0 &&
    (authorizers.crossChainRequesterAuthorizersWithErc721 ?? []).length === 0
  );
}

/** Pure part: requests allowed by the config's `authorizations` alone. */
export function authorizedOffChain(
  requests: AuthorizationInput[],
  authorizations: ChainConfig['authorizations'],
): Set<string> {
  const allowed = new Set<string>();
  const byEndpoint = new Map<string, Set<string>>();
  for (const [endpointId, requesters] of Object.entries(authorizations?.requesterEndpointAuthorizations ?? {})) {
    byEndpoint.set(endpointId.toLowerCase(), new Set(requesters.map((r) => r.toLowerCase())));
  }
  for (const request of requests) {
    if (byEndpoint.get(request.endpointId.toLowerCase())?.has(request.requester.toLowerCase())) allowed.add(request.id);
  }
  return allowed;
}

async function rrpAuthorizations(
  client: RpcClient,
  rrpAddress: string,
  authorizers: string[],
  nodeAddress: string,
  requests: AuthorizationInput[],
): Promise<Set<string>> {
  const allowed = new Set<string>();
  if (authorizers.length === 0) return allowed;
  const contract = { address: rrpAddress, iface: rrpInterface };
  for (const batch of chunk(requests, BATCH_SIZE)) {
    try {
      const [statuses] = await callView<[boolean[]]>(client, contract, 'checkAuthorizationStatuses', [
        authorizers,
        nodeAddress,
        batch.map((r) => r.id),
        batch.map((r) => r.endpointId),
        batch.map((r) => r.sponsor),
        batch.map((r) => r.requester),
      ]);
      batch.forEach((request, i) => {
        if (statuses[i] === true) allowed.add(request.id);
      });
    } catch {
      for (const request of batch) {
        try {
          const [status] = await callView<[boolean]>(client, contract, 'checkAuthorizationStatus', [
            authorizers,
            nodeAddress,
            request.id,
            request.endpointId,
            request.sponsor,
            request.requester,
          ]);
          if (status) allowed.add(request.id);
        } catch {
          // "Authorization not found": not served this cycle
        }
      }
    }
  }
  return allowed;
}

const multicallResult = new Interface(['function isAuthorized() view returns (bool)']);

async function erc721Authorizations(
  client: RpcClient,
  authorizer: { erc721s: string[]; RequesterAuthorizerWithErc721: string },
  nodeAddress: string,
  chainId: string,
  requests: AuthorizationInput[],
): Promise<Set<string>> {
  const allowed = new Set<string>();
  for (const batch of chunk(requests, BATCH_SIZE)) {
    const calls: { id: string; data: string }[] = [];
    for (const request of batch) {
      for (const token of authorizer.erc721s) {
        calls.push({
          id: request.id,
          data: erc721AuthorizerInterface.encodeFunctionData('isAuthorized', [
            nodeAddress,
            chainId,
            request.requester,
            token,
          ]),
        });
      }
    }
    try {
      const data = erc721AuthorizerInterface.encodeFunctionData('multicall', [calls.map((c) => c.data)]);
      const raw = await ethCall(client, { to: authorizer.RequesterAuthorizerWithErc721, data });
      const [results] = erc721AuthorizerInterface.decodeFunctionResult('multicall', raw).toArray(true) as [string[]];
      calls.forEach((call, i) => {
        const [ok] = multicallResult.decodeFunctionResult('isAuthorized', results[i] ?? '0x').toArray() as [boolean];
        if (ok) allowed.add(call.id);
      });
    } catch {
      // not authorized by this contract this cycle
    }
  }
  return allowed;
}

/** Ids of the requests that may be served. */
export async function authorizeRequests(
  client: RpcClient,
  input: { chain: ChainConfig; rrpAddress: string; nodeAddress: string; requests: AuthorizationInput[] },
): Promise<Set<string>> {
  const { chain, nodeAddress, requests } = input;
  if (authorizersAreEmpty(chain.authorizers)) return new Set(requests.map((r) => r.id));
  const allowed = authorizedOffChain(requests, chain.authorizations);
  const pending = () => requests.filter((r) => !allowed.has(r.id));
  const merge = (ids: Set<string>) => {
    for (const id of ids) allowed.add(id);
  };

  merge(
    await rrpAuthorizations(
      client,
      input.rrpAddress,
      chain.authorizers.requesterEndpointAuthorizers,
      nodeAddress,
      pending(),
    ),
  );
  for (const crossChain of chain.authorizers.crossChainRequesterAuthorizers ?? []) {
    const rrp = crossChain.contracts.NodeRrp;
    if (!rrp || pending().length === 0) continue;
    const other = new RpcClient(crossChain.chainProvider.url);
    merge(await rrpAuthorizations(other, rrp, crossChain.requesterEndpointAuthorizers, nodeAddress, pending()));
  }
  for (const authorizer of chain.authorizers.requesterAuthorizersWithErc721 ?? []) {
    if (pending().length === 0) break;
    merge(await erc721Authorizations(client, authorizer, nodeAddress, chain.id, pending()));
  }
  for (const crossChain of chain.authorizers.crossChainRequesterAuthorizersWithErc721 ?? []) {
    if (pending().length === 0) break;
    const other = new RpcClient(crossChain.chainProvider.url);
    merge(
      await erc721Authorizations(
        other,
        {
          erc721s: crossChain.erc721s,
          RequesterAuthorizerWithErc721: crossChain.contracts.RequesterAuthorizerWithErc721,
        },
        nodeAddress,
        chain.id,
        pending(),
      ),
    );
  }
  return allowed;
}
