// The ERC721 and cross-chain authorizers against the REAL contracts on two anvil chains: requests are made on
// the request chain (31337); the cross-chain authorizers live on a second chain (31338). RequesterAuthorizerWithErc721
// and MockErc721 come from @api3/airnode-protocol-v1@3.4.0, AirnodeRrpV0 and RequesterAuthorizerWithAirnode from
// @api3/airnode-protocol@0.15.0. Every "dropped" assertion is followed by a cycle with all authorizer lists empty
// that serves the same request, so a drop is the authorizer's doing and not a broken request.
import { expect } from 'chai';
import { AbiCoder, Contract } from 'ethers';
import { MemoryResponseCache } from '../../../src/node/cache.js';
import { type CycleSummary, runCycle } from '../../../src/node/cycle.js';
import { InProcessExecutor } from '../../../src/node/executor.js';
import { silentLogger } from '../../../src/node/logger.js';
import {
  type Deployment,
  deployErc721Authorizer,
  deployer,
  deployRequester,
  type Erc721Deployment,
  minedReceipt,
  protocolArtifacts,
  protocolV1Artifacts,
  rpc,
  setBalance,
  startTestChain,
  testProvider,
  waitForMined,
} from '../../support/chain.js';
import {
  type ApiServer,
  buildConfig,
  type ConfigOptions,
  createSponsor,
  ENDPOINTS,
  encodeCoin,
  makeFullRequest,
  NODE_ADDRESS,
  type RequestEvents,
  requestEvents,
  startApiServer,
  wallets,
} from '../../support/harness.js';

const OTHER_CHAIN_ID = 31338;

describe('ERC721 and cross-chain authorizers on anvil (real contracts)', () => {
  // The chain the requests are made on and the node serves.
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  // A second chain that only holds authorizer contracts.
  let other: Awaited<ReturnType<typeof startTestChain>>;
  let erc721: Erc721Deployment;
  let otherErc721: Erc721Deployment;
  let api: ApiServer;
  let sponsorSeq = 0;
  // Tokens 0..9 of each MockErc721 belong to the deployer; every deposit uses a fresh one.
  const nextToken = new Map<string, number>();

  async function cycle(overrides: Partial<ConfigOptions> = {}): Promise<CycleSummary> {
    const config = buildConfig({
      providers: { anvil: chain.anvil.url },
      deployment: chain.deployment,
      apiUrl: api.url,
      ...overrides,
    });
    const cache = new MemoryResponseCache();
    const executor = new InProcessExecutor({ config, wallets, logger: silentLogger, cache });
    const summary = await runCycle(config, { executor, logger: silentLogger, wallets, discoveryTimeoutMs: 10_000 });
    await waitForMined(chain.anvil.url);
    return summary;
  }

  /** Requesters on the request chain, sponsored by a fresh sponsor, and one price request from each. */
  async function requestsFrom(count: number): Promise<{ requesters: string[]; requestIds: string[] }> {
    const requesters: string[] = [];
    for (let i = 0; i < count; i++) {
      requesters.push(await deployRequester(chain.anvil.url, chain.deployment.AirnodeRrpV0));
    }
    const sponsor = await createSponsor(chain.deployment, `authorizers-${sponsorSeq++}`, requesters);
    const requestIds: string[] = [];
    for (const requester of requesters) {
      requestIds.push(
        await makeFullRequest(chain.deployment, {
          requester,
          endpointId: ENDPOINTS.price,
          sponsor: sponsor.address,
          sponsorWallet: sponsor.sponsorWallet,
          parameters: encodeCoin('ETH'),
        }),
      );
    }
    return { requesters, requestIds };
  }

  /** Deposits a MockErc721 token into the authorizer for (node, chainId, requester): `safeTransferFrom` with data. */
  async function deposit(
    url: string,
    chainId: number,
    contracts: Erc721Deployment,
    input: { depositChainId: number; requester: string },
  ): Promise<void> {
    const tokenId = nextToken.get(contracts.MockErc721 + url) ?? 0;
    nextToken.set(contracts.MockErc721 + url, tokenId + 1);
    const signer = deployer(url, chainId);
    const token = new Contract(contracts.MockErc721, protocolV1Artifacts.MockErc721().abi, signer);
    const data = AbiCoder.defaultAbiCoder().encode(
      ['address', 'uint256', 'address'],
      [NODE_ADDRESS, input.depositChainId, input.requester],
    );
    const tx = await token.getFunction('safeTransferFrom(address,address,uint256,bytes)')(
      await signer.getAddress(),
      contracts.RequesterAuthorizerWithErc721,
      tokenId,
      data,
    );
    await minedReceipt(tx);
    // The deposit is what the contract answers for; the node must reach the same answer.
    const authorizer = new Contract(
      contracts.RequesterAuthorizerWithErc721,
      protocolV1Artifacts.RequesterAuthorizerWithErc721().abi,
      testProvider(url, chainId),
    );
    expect(
      await authorizer.getFunction('isAuthorized')(
        NODE_ADDRESS,
        input.depositChainId,
        input.requester,
        contracts.MockErc721,
      ),
    ).to.equal(true);
  }

  const events = (requestId: string): Promise<RequestEvents> => requestEvents(chain.deployment, requestId);
  const dropped: RequestEvents = { fulfilled: [], failed: [] };

  /** With every authorizer list empty the node is open: the given requests are fulfilled now. */
  async function expectServedWhenOpen(requestIds: string[]): Promise<void> {
    for (const requestId of requestIds) expect(await events(requestId)).to.deep.equal(dropped);
    await cycle();
    for (const requestId of requestIds) expect((await events(requestId)).fulfilled).to.have.length(1);
  }

  const otherProvider = () => ({ url: other.anvil.url });

  before(async () => {
    chain = await startTestChain();
    other = await startTestChain({ chainId: OTHER_CHAIN_ID });
    erc721 = await deployErc721Authorizer(chain.anvil.url);
    otherErc721 = await deployErc721Authorizer(other.anvil.url, OTHER_CHAIN_ID);
    api = await startApiServer();
    // The node wallet whitelists requesters on the other chain's RequesterAuthorizerWithAirnode.
    await setBalance(other.anvil.url, NODE_ADDRESS, 10n ** 20n);
  });
  after(async () => {
    await api?.close();
    await chain?.anvil.stop();
    await other?.anvil.stop();
  });

  it('the second chain really has its own chain id', async () => {
    expect(Number(await rpc<string>(other.anvil.url, 'eth_chainId'))).to.equal(OTHER_CHAIN_ID);
    expect(Number(await rpc<string>(chain.anvil.url, 'eth_chainId'))).to.equal(chain.deployment.chainId);
    expect(other.deployment.chainId).to.equal(OTHER_CHAIN_ID);
  });

  describe('requesterAuthorizersWithErc721 (same chain)', () => {
    it('serves a requester with a deposited token and drops one without', async () => {
      const {
        requesters: [holder],
        requestIds: [held, unheld],
      } = await requestsFrom(2);
      await deposit(chain.anvil.url, chain.deployment.chainId, erc721, {
        depositChainId: chain.deployment.chainId,
        requester: holder!,
      });
      // A second token contract without deposits: the node ORs over the listed tokens.
      const unused = await deployErc721Authorizer(chain.anvil.url);
      await cycle({
        chainAuthorizers: {
          requesterAuthorizersWithErc721: [
            {
              erc721s: [unused.MockErc721, erc721.MockErc721],
              RequesterAuthorizerWithErc721: erc721.RequesterAuthorizerWithErc721,
            },
          ],
        },
      });
      expect((await events(held!)).fulfilled).to.have.length(1);
      expect(await events(unheld!)).to.deep.equal(dropped);
      await expectServedWhenOpen([unheld!]);
    });
  });

  describe('crossChainRequesterAuthorizersWithErc721', () => {
    it("serves a requester whose token is deposited on the other chain for this chain's id, drops the others", async () => {
      const {
        requesters: [holder, wrongChain],
        requestIds: [held, heldForOtherChain, unheld],
      } = await requestsFrom(3);
      // The deposit names the chain the requests are made on.
      await deposit(other.anvil.url, OTHER_CHAIN_ID, otherErc721, {
        depositChainId: chain.deployment.chainId,
        requester: holder!,
      });
      // A deposit for the authorizer chain's own id does not authorize requests made on the request chain.
      await deposit(other.anvil.url, OTHER_CHAIN_ID, otherErc721, {
        depositChainId: OTHER_CHAIN_ID,
        requester: wrongChain!,
      });
      await cycle({
        chainAuthorizers: {
          crossChainRequesterAuthorizersWithErc721: [
            {
              erc721s: [otherErc721.MockErc721],
              chainType: 'evm',
              chainId: String(OTHER_CHAIN_ID),
              contracts: { RequesterAuthorizerWithErc721: otherErc721.RequesterAuthorizerWithErc721 },
              chainProvider: otherProvider(),
            },
          ],
        },
      });
      expect((await events(held!)).fulfilled).to.have.length(1);
      expect(await events(heldForOtherChain!)).to.deep.equal(dropped);
      expect(await events(unheld!)).to.deep.equal(dropped);
      await expectServedWhenOpen([heldForOtherChain!, unheld!]);
    });
  });

  describe('crossChainRequesterAuthorizers (RequesterAuthorizerWithAirnode on the other chain)', () => {
    it('serves a requester whitelisted on the other chain and drops the others', async () => {
      const {
        requesters: [whitelisted, whitelistedHere],
        requestIds: [listed, listedHere, unlisted],
      } = await requestsFrom(3);
      const whitelist = async (deployment: Deployment, chainId: number, requester: string) => {
        const authorizer = new Contract(
          deployment.RequesterAuthorizerWithAirnode,
          protocolArtifacts.RequesterAuthorizerWithAirnode().abi,
          wallets.node.connect(testProvider(deployment.url, chainId)),
        );
        const tx = await authorizer.getFunction('setIndefiniteWhitelistStatus')(
          NODE_ADDRESS,
          ENDPOINTS.price,
          requester,
          true,
        );
        await minedReceipt(tx);
      };
      await whitelist(other.deployment, OTHER_CHAIN_ID, whitelisted!);
      // Whitelisted on the request chain's own authorizer (same address, as both chains were deployed alike),
      // which is not configured: the node must ask the other chain.
      await setBalance(chain.anvil.url, NODE_ADDRESS, 10n ** 20n);
      await whitelist(chain.deployment, chain.deployment.chainId, whitelistedHere!);
      expect(other.deployment.RequesterAuthorizerWithAirnode).to.equal(chain.deployment.RequesterAuthorizerWithAirnode);
      await cycle({
        chainAuthorizers: {
          crossChainRequesterAuthorizers: [
            {
              requesterEndpointAuthorizers: [other.deployment.RequesterAuthorizerWithAirnode],
              chainType: 'evm',
              chainId: String(OTHER_CHAIN_ID),
              contracts: { NodeRrp: other.deployment.AirnodeRrpV0 },
              chainProvider: otherProvider(),
            },
          ],
        },
      });
      expect((await events(listed!)).fulfilled).to.have.length(1);
      expect(await events(listedHere!)).to.deep.equal(dropped);
      expect(await events(unlisted!)).to.deep.equal(dropped);
      await expectServedWhenOpen([listedHere!, unlisted!]);
    });
  });
});
