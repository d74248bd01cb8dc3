// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are ${NAME} secret references, not templates
import { expect } from 'chai';
import {
  scopedSecretsFromEnvironment,
  secretScopes,
  validateConfig,
  WITHHELD_MNEMONIC,
  WITHHELD_SECRET,
  withheldStandIns,
} from '../../../src/config/index.js';

/** Only the shape secretScopes reads: where each reference sits. */
function configWith(options: { signedData?: boolean; oev?: boolean } = {}) {
  return {
    chains: [
      {
        id: '1',
        providers: { a: { url: '${PROVIDER_A}' }, b: { url: 'https://rpc.example/${PROVIDER_B_KEY}' } },
        options: { gasPriceOracle: [{ gasPriceStrategy: 'constantGasPrice', gasPrice: { value: '${GAS}' } }] },
      },
    ],
    nodeSettings: {
      nodeWalletMnemonic: '${MNEMONIC}',
      heartbeat: { enabled: true, url: '${HEARTBEAT_URL}', apiKey: '${HEARTBEAT_KEY}' },
      httpGateway: { enabled: true, maxConcurrency: 10, corsOrigins: ['${CORS_ORIGIN}'] },
      httpSignedDataGateway: { enabled: options.signedData === true },
      oevGateway: { enabled: options.oev === true },
      stage: 'dev',
    },
    triggers: {
      rrp: [{ oisTitle: 'Chain API', endpointName: 'e' }],
      http: [{ oisTitle: 'Gateway API', endpointName: 'e' }],
      httpSignedData: [],
    },
    ois: [
      { title: 'Chain API', apiSpecifications: { servers: [{ url: '${CHAIN_API_URL}' }] } },
      { title: 'Gateway API', apiSpecifications: { servers: [{ url: 'https://gw.example' }] } },
      { title: 'Unused API', apiSpecifications: { servers: [{ url: 'https://unused.example' }] } },
    ],
    apiCredentials: [
      { oisTitle: 'Chain API', securitySchemeName: 'key', securitySchemeValue: '${CHAIN_API_KEY}' },
      { oisTitle: 'Gateway API', securitySchemeName: 'key', securitySchemeValue: '${GATEWAY_API_KEY}' },
      { oisTitle: 'Unused API', securitySchemeName: 'key', securitySchemeValue: '${UNUSED_API_KEY}' },
    ],
  };
}

describe('secret scopes: the keys each workload receives', () => {
  it('workers get the API credentials of the OIS their request-response triggers call, never the heartbeat or gateway keys', () => {
    // No mnemonic and no provider: the coordinator signs and sends (src/node/shard.ts), a worker only calls APIs.
    expect(secretScopes(configWith()).worker).to.deep.equal(['CHAIN_API_KEY', 'CHAIN_API_URL', 'GAS']);
  });

  it('a worker never gets the mnemonic nor a provider key, whatever gateways are on; it gets stand-ins for them', () => {
    for (const options of [{}, { signedData: true }, { oev: true }]) {
      const worker = secretScopes(configWith(options)).worker;
      expect(worker).not.to.include('MNEMONIC');
      expect(worker).not.to.include('PROVIDER_A');
      expect(worker).not.to.include('PROVIDER_B_KEY');
    }
    expect(withheldStandIns(configWith(), 'worker')).to.deep.equal({
      CORS_ORIGIN: WITHHELD_SECRET,
      GATEWAY_API_KEY: WITHHELD_SECRET,
      HEARTBEAT_KEY: WITHHELD_SECRET,
      HEARTBEAT_URL: WITHHELD_SECRET,
      MNEMONIC: WITHHELD_MNEMONIC,
      PROVIDER_A: WITHHELD_SECRET,
      PROVIDER_B_KEY: WITHHELD_SECRET,
      UNUSED_API_KEY: WITHHELD_SECRET,
    });
  });

  it('the HTTP gateway gets what its endpoints need, no provider, no heartbeat and no mnemonic', () => {
    expect(secretScopes(configWith()).gateway).to.deep.equal(['CORS_ORIGIN', 'GAS', 'GATEWAY_API_KEY']);
  });

  it('the signed-data or OEV gateway gets no mnemonic either: it signs with the node key alone, the mnemonic is a stand-in', () => {
    for (const gateways of [{ signedData: true }, { oev: true }, { signedData: true, oev: true }]) {
      expect(secretScopes(configWith(gateways)).gateway).to.deep.equal(['CORS_ORIGIN', 'GAS', 'GATEWAY_API_KEY']);
      expect(withheldStandIns(configWith(gateways), 'gateway')).to.include({ MNEMONIC: WITHHELD_MNEMONIC });
    }
  });

  it('the coordinator gets the mnemonic, the providers and the heartbeat, no API credential', () => {
    expect(secretScopes(configWith()).coordinator).to.deep.equal([
      'GAS',
      'HEARTBEAT_KEY',
      'HEARTBEAT_URL',
      'MNEMONIC',
      'PROVIDER_A',
      'PROVIDER_B_KEY',
    ]);
  });

  it('credentials of an OIS no trigger calls go to nobody; a reference outside the known places goes to everyone', () => {
    const scopes = secretScopes(configWith());
    for (const keys of Object.values(scopes)) {
      expect(keys).not.to.include('UNUSED_API_KEY');
      expect(keys).to.include('GAS');
    }
  });

  it('a name used in two places goes to every workload that uses one of them', () => {
    const config = configWith();
    config.apiCredentials[1]!.securitySchemeValue = '${PROVIDER_A}';
    expect(secretScopes(config).gateway).to.include('PROVIDER_A');
    expect(secretScopes(config).coordinator).to.include('PROVIDER_A');
    expect(secretScopes(config).worker).not.to.include('PROVIDER_A');
  });

  it('escaped and invalid references are not keys; a config that is not an object has none', () => {
    const config = configWith();
    config.nodeSettings.stage = '\\${NOT_A_KEY}';
    config.chains[0]!.options.gasPriceOracle[0]!.gasPrice.value = '${lower_case}';
    expect(Object.values(secretScopes(config)).flat()).not.to.include.members(['NOT_A_KEY', 'lower_case']);
    expect(secretScopes('text')).to.deep.equal({ coordinator: [], gateway: [], worker: [] });
    expect(secretScopes(null)).to.deep.equal({ coordinator: [], gateway: [], worker: [] });
  });

  it('stand-ins only for the names a workload does not receive: a valid mnemonic for the mnemonic, an .invalid URL otherwise', () => {
    expect(withheldStandIns(configWith(), 'gateway')).to.deep.equal({
      CHAIN_API_KEY: WITHHELD_SECRET,
      CHAIN_API_URL: WITHHELD_SECRET,
      HEARTBEAT_KEY: WITHHELD_SECRET,
      HEARTBEAT_URL: WITHHELD_SECRET,
      MNEMONIC: WITHHELD_MNEMONIC,
      PROVIDER_A: WITHHELD_SECRET,
      PROVIDER_B_KEY: WITHHELD_SECRET,
      UNUSED_API_KEY: WITHHELD_SECRET,
    });
    // Long enough for a heartbeat key (30-120 characters).
    expect(WITHHELD_SECRET.length).to.be.at.least(30);
  });

  it('a scoped pod takes its own keys from the environment and never a stand-in for one it needs', () => {
    const config = JSON.stringify(configWith());
    const env = { CORS_ORIGIN: 'https://app.example', GAS: '1', MNEMONIC: 'from the environment' };
    const secrets = scopedSecretsFromEnvironment(config, 'gateway', env);
    expect(secrets).to.include({ CORS_ORIGIN: 'https://app.example', GAS: '1', MNEMONIC: 'from the environment' });
    // GATEWAY_API_KEY is the gateway's own and absent: left missing, so validation names it.
    expect(secrets).not.to.have.property('GATEWAY_API_KEY');
    expect(secrets).to.include({ PROVIDER_A: WITHHELD_SECRET });
    // Unscoped (a local run): no stand-ins at all.
    expect(scopedSecretsFromEnvironment(config, undefined, env)).to.deep.equal(env);
  });

  it('the stand-ins pass validation where the schema checks the form (URL, heartbeat key length, mnemonic)', () => {
    const config = {
      chains: [
        {
          id: '31337',
          type: 'evm',
          maxConcurrency: 10,
          providers: { local: { url: '${PROVIDER_URL}' } },
          contracts: { NodeRrp: '0x5FbDB2315678afecb367f032d93F642f64180aa3' },
          authorizers: {
            requesterEndpointAuthorizers: [],
            crossChainRequesterAuthorizers: [],
            requesterAuthorizersWithErc721: [],
            crossChainRequesterAuthorizersWithErc721: [],
          },
          authorizations: { requesterEndpointAuthorizations: {} },
          options: {
            fulfillmentGasLimit: 500000,
            gasPriceOracle: [{ gasPriceStrategy: 'constantGasPrice', gasPrice: { value: 10, unit: 'gwei' } }],
          },
        },
      ],
      nodeSettings: {
        cloudProvider: { type: 'local' },
        nodeWalletMnemonic: '${NODE_WALLET_MNEMONIC}',
        heartbeat: { enabled: true, url: '${HEARTBEAT_URL}', apiKey: '${HEARTBEAT_API_KEY}' },
        httpGateway: { enabled: false },
        httpSignedDataGateway: { enabled: false },
        oevGateway: { enabled: false },
        logFormat: 'json',
        logLevel: 'INFO',
        nodeVersion: '0.15.0',
        stage: 'dev',
      },
      triggers: { rrp: [], http: [], httpSignedData: [] },
      templates: [],
      ois: [],
      apiCredentials: [],
    };
    const secrets = { ...withheldStandIns(config, 'gateway') };
    expect(Object.keys(secrets)).to.have.members([
      'PROVIDER_URL',
      'NODE_WALLET_MNEMONIC',
      'HEARTBEAT_URL',
      'HEARTBEAT_API_KEY',
    ]);
    const result = validateConfig(config, secrets);
    expect(result.errors).to.deep.equal([]);
    expect(result.ok).to.equal(true);
  });
});
