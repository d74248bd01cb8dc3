// The signed-data gateway's answers, through the real server and engine, carry exactly the signature bytes the
// reference node computes for the same template id, timestamp and value (its signWithTemplateId, ethers 5 and the
// node key), and that ethers 6's wallet gives: the gateway signs with libsecp256k1, not with ethers.
import { createRequire } from 'node:module';
import { expect } from 'chai';
import { getBytes, solidityPackedKeccak256 } from 'ethers';
import { DEFAULT_PATH_KEY, type GatewayServer, startGatewayServer } from '../../../src/gateway/server.js';
import { silentLogger } from '../../../src/observability/index.js';
import { encodeParameters } from '../../../src/ois/abi.js';
import { deriveTemplateIdV1 } from '../../../src/protocol/ids.js';
import { nodeWallet } from '../../../src/protocol/wallet.js';
import { buildConfig, ENDPOINTS, type LoopbackApi, loadEngine, MNEMONIC, startLoopbackApi } from './fixtures.js';

const node = nodeWallet(MNEMONIC);
// The reference reads the node key from its environment.
process.env.AIRNODE_WALLET_PRIVATE_KEY = node.privateKey;
const require = createRequire(import.meta.url);
const reference = require('@api3/airnode-node/dist/src/api/index.js') as {
  signWithTemplateId(templateId: string, timestamp: string, data: string): Promise<string>;
};

type SignedAnswer = { timestamp: string; encodedValue: string; signature: string };

describe('signed-data gateway signature bytes (component)', function () {
  this.timeout(60_000);
  let api: LoopbackApi;
  let server: GatewayServer;

  before(async () => {
    api = await startLoopbackApi();
    const { callEndpoint } = await loadEngine();
    server = await startGatewayServer(buildConfig(api.url), {
      host: '127.0.0.1',
      port: 0,
      callEndpoint,
      logger: silentLogger(),
    });
  });
  after(async () => {
    await server?.close();
    await api?.close();
  });

  async function signed(endpointId: string, encodedParameters: string): Promise<SignedAnswer> {
    const response = await fetch(`http://127.0.0.1:${server.port}/http-signed-data/${DEFAULT_PATH_KEY}/${endpointId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ encodedParameters }),
    });
    expect(response.status).to.equal(200);
    return (await response.json()) as SignedAnswer;
  }

  it('answers the reference’s signWithTemplateId bytes for distinct parameters and a post-processing timestamp', async () => {
    const requests = [
      ...Array.from({ length: 24 }, (_, i) => ({
        endpointId: ENDPOINTS.price,
        encodedParameters: encodeParameters([{ type: 'string', name: 'coin', value: `coin-${i}` }]),
      })),
      { endpointId: ENDPOINTS.stamped, encodedParameters: '0x' },
    ];
    const recoveryBytes = new Set<string>();
    for (const { endpointId, encodedParameters } of requests) {
      const answer = await signed(endpointId, encodedParameters);
      const templateId = deriveTemplateIdV1(endpointId, encodedParameters);
      const expected = await reference.signWithTemplateId(templateId, answer.timestamp, answer.encodedValue);
      expect(answer.signature).to.equal(expected);
      const hash = solidityPackedKeccak256(
        ['bytes32', 'uint256', 'bytes'],
        [templateId, answer.timestamp, answer.encodedValue],
      );
      expect(answer.signature).to.equal(node.signMessageSync(getBytes(hash)));
      recoveryBytes.add(answer.signature.slice(-2));
    }
    // Both values of v occur among these answers, so a swapped recovery id could not pass.
    expect([...recoveryBytes].sort()).to.deep.equal(['1b', '1c']);
  });
});
