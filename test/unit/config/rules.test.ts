import { expect } from 'chai';
import { PUBLIC_DEPLOYMENTS, type ValidationResult, validateConfig } from '../../../src/config/index.js';
import { deriveEndpointId, deriveTemplateIdV0 } from '../../../src/protocol/ids.js';
import { deriveNodeAddress } from '../../../src/protocol/wallet.js';
import { BASE_SECRETS, edited, type Json } from './fixtures.js';

const MNEMONIC = 'achieve climb couple wait accident symbol spy blouse reduce foil echo label';
const SCHEME = 'Currency Converter Security Scheme';

function check(edit: (c: Json) => void): ValidationResult {
  return validateConfig(edited(edit), BASE_SECRETS);
}

function expectError(result: ValidationResult, path: string, message: RegExp): void {
  expect(result.ok, 'expected the config to be invalid').to.equal(false);
  const match = result.errors.find((e) => e.path === path && message.test(e.message));
  expect(match, `no error at ${path} matching ${message}; got ${JSON.stringify(result.errors, null, 1)}`).to.not.equal(
    undefined,
  );
}

function expectValid(result: ValidationResult): void {
  expect(result.errors, JSON.stringify(result.errors)).to.deep.equal([]);
  expect(result.ok).to.equal(true);
}

const endpoint = (c: Json) => c.ois[0].endpoints[0];
const apiSpec = (c: Json) => c.ois[0].apiSpecifications;

describe('config rules (negative tests: path and message)', () => {
  it('accepts the base config and normalises aliases and defaults', () => {
    const result = check(() => {});
    expectValid(result);
    const config = result.config!;
    expect(config.nodeSettings.nodeWalletMnemonic).to.equal(MNEMONIC);
    expect(config.nodeSettings).to.not.have.property('airnodeWalletMnemonic');
    expect(config.chains[0]!.contracts).to.deep.equal({ NodeRrp: '0x5FbDB2315678afecb367f032d93F642f64180aa3' });
    expect(config.chains[0]!.authorizers.crossChainRequesterAuthorizers[0]!.contracts).to.deep.equal({
      NodeRrp: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
    });
    expect(config.chains[0]!.blockHistoryLimit).to.equal(300);
    expect(config.chains[0]!.minConfirmations).to.equal(0);
    expect(config.nodeSettings.cloudProvider).to.deep.equal({ type: 'local', gatewayServerPort: 3000 });
  });

  describe('structure', () => {
    it('rejects unknown keys at the root and at depth', () => {
      const result = check((c) => {
        c.extra = 1;
        endpoint(c).bogus = true;
      });
      expectError(result, 'extra', /Unknown key "extra"/);
      expectError(result, 'ois[0].endpoints[0].bogus', /Unknown key "bogus"/);
    });
    it('reports a missing required field', () => {
      expectError(
        check((c) => delete c.triggers),
        'triggers',
        /Required field is missing/,
      );
    });
    it('reports wrong types at any depth', () => {
      expectError(
        check((c) => {
          endpoint(c).parameters[0].name = 5;
        }),
        'ois[0].endpoints[0].parameters[0].name',
        /expected string/,
      );
    });
    it('returns every problem at once', () => {
      const result = check((c) => {
        c.nodeSettings.stage = 'BAD';
        c.nodeSettings.logLevel = 'TRACE';
        c.chains[0].id = 'x';
        c.ois[0].title = 'bad/title';
      });
      expect(result.errors.map((e) => e.path)).to.include.members([
        'nodeSettings.stage',
        'nodeSettings.logLevel',
        'chains[0].id',
        'ois[0].title',
      ]);
    });
  });

  describe('nodeSettings', () => {
    it('discriminates cloudProvider by type', () => {
      expectError(
        check((c) => (c.nodeSettings.cloudProvider = { type: 'azure' })),
        'nodeSettings.cloudProvider.type',
        /must be one of local, aws, gcp/,
      );
      expectError(
        check((c) => (c.nodeSettings.cloudProvider = { type: 'aws', disableConcurrencyReservations: false })),
        'nodeSettings.cloudProvider.region',
        /Required/,
      );
      expectError(
        check(
          (c) =>
            (c.nodeSettings.cloudProvider = { type: 'gcp', region: 'us-east1', disableConcurrencyReservations: false }),
        ),
        'nodeSettings.cloudProvider.projectId',
        /Required/,
      );
      expectError(
        check((c) => (c.nodeSettings.cloudProvider = { type: 'local', region: 'x' })),
        'nodeSettings.cloudProvider.region',
        /Unknown key/,
      );
    });
    it('requires maxConcurrency and corsOrigins on an enabled gateway', () => {
      const result = check((c) => (c.nodeSettings.httpGateway = { enabled: true }));
      expectError(result, 'nodeSettings.httpGateway.maxConcurrency', /Required/);
      expectError(result, 'nodeSettings.httpGateway.corsOrigins', /Required/);
      expectError(
        check((c) => (c.nodeSettings.oevGateway = { enabled: true, maxConcurrency: 0, corsOrigins: [] })),
        'nodeSettings.oevGateway.maxConcurrency',
        /Too small/,
      );
    });
    it('requires url and a 30-120 character apiKey on an enabled heartbeat', () => {
      const result = check((c) => (c.nodeSettings.heartbeat = { enabled: true, apiKey: 'short' }));
      expectError(result, 'nodeSettings.heartbeat.url', /Required/);
      expectError(result, 'nodeSettings.heartbeat.apiKey', /Too small/);
    });
    it('limits stage to 16 characters of a-z, 0-9 and hyphen', () => {
      expectError(
        check((c) => (c.nodeSettings.stage = 'Dev_1')),
        'nodeSettings.stage',
        /1-16 characters/,
      );
      expectError(
        check((c) => (c.nodeSettings.stage = 'a'.repeat(17))),
        'nodeSettings.stage',
        /1-16 characters/,
      );
    });
    it('accepts only the supported nodeVersion', () => {
      expectError(
        check((c) => (c.nodeSettings.nodeVersion = '0.14.0')),
        'nodeSettings.nodeVersion',
        /must be 0\.15\.0/,
      );
    });
    it('checks logFormat and logLevel enums', () => {
      expectError(
        check((c) => (c.nodeSettings.logFormat = 'xml')),
        'nodeSettings.logFormat',
        /json|plain/,
      );
    });
    it('rejects an invalid mnemonic', () => {
      expectError(
        check((c) => (c.nodeSettings.airnodeWalletMnemonic = 'not a mnemonic')),
        'nodeSettings.airnodeWalletMnemonic',
        /not a valid BIP-39 mnemonic/,
      );
    });
    it('accepts the canonical nodeWalletMnemonic and rejects both names together', () => {
      expectValid(
        check((c) => {
          c.nodeSettings.nodeWalletMnemonic = c.nodeSettings.airnodeWalletMnemonic;
          delete c.nodeSettings.airnodeWalletMnemonic;
        }),
      );
      expectError(
        check((c) => (c.nodeSettings.nodeWalletMnemonic = c.nodeSettings.airnodeWalletMnemonic)),
        'nodeSettings.airnodeWalletMnemonic',
        /either "nodeWalletMnemonic" or its alias/,
      );
      expectError(
        check((c) => delete c.nodeSettings.airnodeWalletMnemonic),
        'nodeSettings.nodeWalletMnemonic',
        /Required/,
      );
    });
  });

  describe('chains', () => {
    it('refuses a chain listed twice (it would be served twice), at the second entry', () => {
      expectError(
        check((c) => c.chains.push(structuredClone(c.chains[0]))),
        'chains[1].id',
        /Chain 31337 is already listed at chains\[0\]: list each chain once/,
      );
      expectValid(check((c) => c.chains.push({ ...structuredClone(c.chains[0]), id: '5' })));
    });
    it('requires a digits-only chain id and type evm', () => {
      const result = check((c) => {
        c.chains[0].id = '0x1';
        c.chains[0].type = 'solana';
      });
      expectError(result, 'chains[0].id', /digits/);
      expectError(result, 'chains[0].type', /evm/);
    });
    it('needs contracts on a chain without a public deployment', () => {
      expectError(
        check((c) => delete c.chains[0].contracts),
        'chains[0].contracts',
        /NodeRrp contract address must be specified for chain ID '31337'/,
      );
    });
    it('needs NodeRrpDryRun only when fulfillmentGasLimit is absent', () => {
      expectError(
        check((c) => delete c.chains[0].options.fulfillmentGasLimit),
        'chains[0].contracts',
        /When 'fulfillmentGasLimit' is not specified, NodeRrpDryRun/,
      );
      expectValid(
        check((c) => {
          delete c.chains[0].options.fulfillmentGasLimit;
          c.chains[0].contracts = {
            NodeRrp: c.chains[0].contracts.AirnodeRrp,
            NodeRrpDryRun: c.chains[0].contracts.AirnodeRrp,
          };
        }),
      );
    });
    it('defaults contracts from the public deployments', () => {
      const result = check((c) => {
        c.chains[0].id = '1';
        delete c.chains[0].contracts;
        delete c.chains[0].options.fulfillmentGasLimit;
      });
      expectValid(result);
      expect(result.config!.chains[0]!.contracts).to.deep.equal({
        NodeRrp: PUBLIC_DEPLOYMENTS['NodeRrp']!['1'],
        NodeRrpDryRun: PUBLIC_DEPLOYMENTS['NodeRrpDryRun']!['1'],
      });
    });
    it('rejects a contract name together with its alias', () => {
      expectError(
        check((c) => (c.chains[0].contracts.NodeRrp = c.chains[0].contracts.AirnodeRrp)),
        'chains[0].contracts.AirnodeRrp',
        /either "NodeRrp" or its alias "AirnodeRrp"/,
      );
    });
    it('requires maxConcurrency >= number of providers', () => {
      expectError(
        check((c) => {
          c.chains[0].providers.second = { url: 'http://127.0.0.1:8546' };
          c.chains[0].maxConcurrency = 1;
        }),
        'chains[0].maxConcurrency',
        /can't be lower than the number of providers/,
      );
    });
    it('requires at least one provider with an absolute URL', () => {
      expectError(
        check((c) => (c.chains[0].providers = {})),
        'chains[0].providers',
        /At least one provider/,
      );
      expectError(
        check((c) => (c.chains[0].providers.local.url = 'not a url')),
        'chains[0].providers.local.url',
        /Invalid URL/,
      );
    });
    it('requires a non-empty gasPriceOracle that ends with constantGasPrice', () => {
      expectError(
        check((c) => (c.chains[0].options.gasPriceOracle = [])),
        'chains[0].options.gasPriceOracle',
        /at least one strategy/,
      );
      expectError(
        check((c) =>
          c.chains[0].options.gasPriceOracle.push({
            gasPriceStrategy: 'providerRecommendedGasPrice',
            recommendedGasPriceMultiplier: 1.2,
          }),
        ),
        'chains[0].options.gasPriceOracle',
        /ConstantGasPrice strategy must be set as the last/,
      );
      expectError(
        check((c) => c.chains[0].options.gasPriceOracle.unshift({ gasPriceStrategy: 'magic' })),
        'chains[0].options.gasPriceOracle[0].gasPriceStrategy',
        /"gasPriceStrategy" must be one of/,
      );
    });
    it('allows at most two decimals in recommendedGasPriceMultiplier', () => {
      expectError(
        check((c) =>
          c.chains[0].options.gasPriceOracle.unshift({
            gasPriceStrategy: 'providerRecommendedGasPrice',
            recommendedGasPriceMultiplier: 1.234,
          }),
        ),
        'chains[0].options.gasPriceOracle[0].recommendedGasPriceMultiplier',
        /at most two decimals/,
      );
      expectValid(
        check((c) =>
          c.chains[0].options.gasPriceOracle.unshift({
            gasPriceStrategy: 'providerRecommendedGasPrice',
            recommendedGasPriceMultiplier: 1.15,
          }),
        ),
      );
    });
    it('defaults providerRecommendedEip1559GasPrice fields (spec defaults)', () => {
      const result = check((c) =>
        c.chains[0].options.gasPriceOracle.unshift({ gasPriceStrategy: 'providerRecommendedEip1559GasPrice' }),
      );
      expectValid(result);
      expect(result.config!.chains[0]!.options.gasPriceOracle[0]).to.deep.equal({
        gasPriceStrategy: 'providerRecommendedEip1559GasPrice',
        baseFeeMultiplier: 2,
        priorityFee: { value: 3.12, unit: 'gwei' },
      });
    });
    it('accepts only the listed units', () => {
      expectError(
        check((c) => (c.chains[0].options.gasPriceOracle[0].gasPrice.unit = 'gigawei')),
        'chains[0].options.gasPriceOracle[0].gasPrice.unit',
        /Invalid option/,
      );
      expectError(
        check((c) => (c.chains[0].options.withdrawalRemainder = { value: 1 })),
        'chains[0].options.withdrawalRemainder.unit',
        /Required/,
      );
    });
    it('requires non-empty cross-chain authorizer lists', () => {
      expectError(
        check((c) => (c.chains[0].authorizers.crossChainRequesterAuthorizers[0].requesterEndpointAuthorizers = [])),
        'chains[0].authorizers.crossChainRequesterAuthorizers[0].requesterEndpointAuthorizers',
        /at least one address/,
      );
    });
    it('rejects negative minConfirmations', () => {
      expectError(
        check((c) => (c.chains[0].minConfirmations = -1)),
        'chains[0].minConfirmations',
        /Too small/,
      );
    });
  });

  describe('triggers', () => {
    it('references an existing OIS title', () => {
      expectError(
        check((c) => (c.triggers.rrp[0].oisTitle = 'Nope')),
        'triggers.rrp[0].oisTitle',
        /No matching OIS for trigger with OIS title "Nope"/,
      );
    });
    it('references an existing endpoint name', () => {
      expectError(
        check((c) => (c.triggers.http[0].endpointName = 'nope')),
        'triggers.http[0].endpointName',
        /No matching endpoint for trigger with endpoint name "nope"/,
      );
    });
    it('has the derived endpointId', () => {
      expectError(
        check((c) => (c.triggers.httpSignedData[0].endpointId = `0x${'1'.repeat(64)}`)),
        'triggers.httpSignedData[0].endpointId',
        new RegExp(`does not match the hash.*${deriveEndpointId('Currency Converter API', 'convertToUSD')}`),
      );
    });
    it('requires cacheResponses on rrp triggers', () => {
      expectError(
        check((c) => delete c.triggers.rrp[0].cacheResponses),
        'triggers.rrp[0].cacheResponses',
        /Required/,
      );
    });
  });

  describe('templates', () => {
    const endpointId = deriveEndpointId('Currency Converter API', 'convertToUSD');
    const templateId = deriveTemplateIdV0(deriveNodeAddress(MNEMONIC), endpointId, '0x1234');
    it('accepts a template whose id is derived from the node address', () => {
      expectValid(check((c) => c.templates.push({ templateId, endpointId, encodedParameters: '0x1234' })));
    });
    it('rejects a template id that does not match', () => {
      expectError(
        check((c) => c.templates.push({ templateId, endpointId, encodedParameters: '0x5678' })),
        'templates[0].templateId',
        /Template is invalid/,
      );
    });
    it('rejects odd-length encodedParameters without crashing', () => {
      expectError(
        check((c) => c.templates.push({ templateId, endpointId, encodedParameters: '0x123' })),
        'templates[0].encodedParameters',
        /even length/,
      );
    });
  });

  describe('apiCredentials', () => {
    it('match an existing OIS title', () => {
      expectError(
        check((c) => (c.apiCredentials[0].oisTitle = 'Other')),
        'apiCredentials[0].oisTitle',
        /No OIS with title "Other"/,
      );
    });
    it('match an existing scheme', () => {
      expectError(
        check((c) => (c.apiCredentials[0].securitySchemeName = 'other')),
        'apiCredentials[0].securitySchemeName',
        /has no security scheme "other"/,
      );
    });
    it('exist for every enabled apiKey and http scheme', () => {
      expectError(
        check((c) => (c.apiCredentials = [])),
        `ois[0].apiSpecifications.security["${SCHEME}"]`,
        /enabled but no credentials/,
      );
      expectError(
        check((c) => {
          apiSpec(c).components.securitySchemes.bearer = { type: 'http', scheme: 'bearer' };
          apiSpec(c).security.bearer = [];
        }),
        'ois[0].apiSpecifications.security.bearer',
        /enabled but no credentials/,
      );
    });
    it('forbid relay schemes together with gateway triggers', () => {
      const result = check((c) => {
        apiSpec(c).components.securitySchemes.requester = { type: 'relayRequesterAddress', in: 'header', name: 'x' };
        apiSpec(c).security.requester = [];
      });
      const path = 'ois[0].apiSpecifications.components.securitySchemes.requester.type';
      expectError(result, path, /can't be used with an HTTP gateway/);
      expectError(result, path, /can't be used with an HTTP signed data gateway/);
    });
  });

  describe('OIS', () => {
    it('limits the title', () => {
      expectError(
        check((c) => (c.ois[0].title = 'a/b')),
        'ois[0].title',
        /1-64 characters/,
      );
      expectError(
        check((c) => (c.ois[0].title = 'a'.repeat(65))),
        'ois[0].title',
        /1-64 characters/,
      );
    });
    it('requires oisFormat 2.3.x', () => {
      expectError(
        check((c) => (c.ois[0].oisFormat = '3.0.0')),
        'ois[0].oisFormat',
        /must be 2\.3/,
      );
    });
    it('rejects duplicate OIS titles and endpoint names', () => {
      expectError(
        check((c) => c.ois.push(structuredClone(c.ois[0]))),
        'ois[1].title',
        /OIS titles must be unique/,
      );
      expectError(
        check((c) => c.ois[0].endpoints.push(structuredClone(endpoint(c)))),
        'ois[0].endpoints[1].name',
        /Endpoint names must be unique/,
      );
    });
    it('warns (not errors) on more than one server', () => {
      const result = check((c) => apiSpec(c).servers.push({ url: 'http://localhost:5001' }));
      expectValid(result);
      // (The example's authorizers add their address checksum warnings under chains.)
      expect(result.warnings.filter((w) => w.path.startsWith('ois'))).to.deep.equal([
        { path: 'ois[0].apiSpecifications.servers', message: '2 servers are listed; only servers[0] is used' },
      ]);
    });
    it('refuses reserved parameters the endpoint sets so that every request fails, with the path and rule', () => {
      const reserved = (c: Json) => endpoint(c).reservedParameters;
      for (const type of ['integer', 'int257', 'int256,uint8', 'timestamp[]']) {
        expectError(
          check((c) => (reserved(c)[0].fixed = type)),
          'ois[0].endpoints[0].reservedParameters[0].fixed',
          /can never be encoded: the types are uint256, int256/,
        );
      }
      // _times (a default: the requester's empty value gives way to it) with a type that is not numeric.
      expectError(
        check((c) => (reserved(c)[0].fixed = 'string')),
        'ois[0].endpoints[0].reservedParameters[2].default',
        /_times can only be used with numeric types/,
      );
      expectError(
        check((c) => {
          reserved(c)[0].fixed = 'timestamp';
          reserved(c)[2] = { name: '_times' };
        }),
        'ois[0].endpoints[0].reservedParameters[1].fixed',
        /_path must be empty when _type is timestamp/,
      );
      expectError(
        check((c) => (reserved(c)[0].fixed = 'int256,string')),
        'ois[0].endpoints[0].reservedParameters[1].fixed',
        /_path is fixed to 1 value\(s\) for the 2 of _type/,
      );
      // What a requester's own values can still make work is accepted.
      expectValid(
        check((c) => {
          reserved(c)[0].fixed = 'int256[],string32,timestamp';
          reserved(c)[1] = { name: '_path' };
        }),
      );
      expectValid(check((c) => (reserved(c)[0] = { name: '_type', default: 'integer' })));
      expectValid(
        check((c) => {
          reserved(c)[0].fixed = 'int256,string';
          reserved(c)[1] = { name: '_path', default: 'result' };
        }),
      );
    });
    it('supports only get and post', () => {
      expectError(
        check((c) => (endpoint(c).operation.method = 'put')),
        'ois[0].endpoints[0].operation.method',
        /get|post/,
      );
      expect(check((c) => (apiSpec(c).paths['/convert'].put = { parameters: [] })).ok).to.equal(false);
    });
    it('requires paths to start with "/"', () => {
      expectError(
        check((c) => (apiSpec(c).paths['convert'] = { get: { parameters: [] } })),
        'ois[0].apiSpecifications.paths.convert',
        /Invalid key "convert": Path must start with "\/"/,
      );
    });
    it('requires operations to exist in apiSpecifications', () => {
      expectError(
        check((c) => (endpoint(c).operation.path = '/other')),
        'ois[0].endpoints[0].operation',
        /No matching API specification found.*GET \/other/,
      );
    });
    it('requires path parameters to be declared and used', () => {
      expectError(
        check((c) => {
          apiSpec(c).paths['/convert/{id}'] = { get: { parameters: [] } };
        }),
        'ois[0].apiSpecifications.paths["/convert/{id}"].get.parameters',
        /Path parameter "id" is not found in "parameters"/,
      );
      expectError(
        check((c) => apiSpec(c).paths['/convert'].get.parameters.push({ in: 'path', name: 'id' })),
        'ois[0].apiSpecifications.paths["/convert"].get.parameters[3]',
        /Parameter "id" is not found in the URL path/,
      );
    });
    it('requires every API parameter to be covered by parameters or fixedOperationParameters', () => {
      expectError(
        check((c) => endpoint(c).parameters.pop()),
        'ois[0].endpoints[0]',
        /Parameter "amount" not found in "fixedOperationParameters" or "parameters"/,
      );
    });
    it('gives each uncovered API parameter of one endpoint the endpoint path', () => {
      const result = check((c) => {
        endpoint(c).parameters = [];
        endpoint(c).fixedOperationParameters = [];
      });
      const uncovered = result.errors.filter((e) =>
        / not found in "fixedOperationParameters" or "parameters"/.test(e.message),
      );
      expect(uncovered.length).to.be.greaterThan(1);
      for (const issue of uncovered) expect(issue.path).to.equal('ois[0].endpoints[0]');
    });
    it('rejects an operation parameter both fixed and an endpoint parameter', () => {
      const result = check((c) =>
        endpoint(c).parameters.push({ name: 'to', operationParameter: { in: 'query', name: 'to' } }),
      );
      expectError(
        result,
        'ois[0].endpoints[0].parameters[2].operationParameter',
        /used in both "parameters" and "fixedOperationParameters"/,
      );
      expectError(result, 'ois[0].endpoints[0].fixedOperationParameters[0].operationParameter', /used in both/);
    });
    it('allows at most one of fixed and default on a reserved parameter', () => {
      expectError(
        check((c) => (endpoint(c).reservedParameters[0].default = 'uint256')),
        'ois[0].endpoints[0].reservedParameters[0]',
        /at most one of "default" and "fixed"/,
      );
    });
    it('requires non-negative integers for _minConfirmations and _gasPrice', () => {
      const result = check((c) => {
        endpoint(c).reservedParameters.push({ name: '_minConfirmations', fixed: '-1' });
        endpoint(c).reservedParameters.push({ name: '_gasPrice', default: 'abc' });
      });
      expectError(
        result,
        'ois[0].endpoints[0].reservedParameters[3].fixed',
        /_minConfirmations must be a non-negative integer/,
      );
      expectError(
        result,
        'ois[0].endpoints[0].reservedParameters[4].default',
        /_gasPrice must be a non-negative integer/,
      );
    });
    it('requires _type among reserved parameters', () => {
      expectError(
        check((c) => endpoint(c).reservedParameters.shift()),
        'ois[0].endpoints[0].reservedParameters',
        /must contain object with \{ "name": "_type" \}/,
      );
    });
    it('rejects unknown reserved parameter names', () => {
      expectError(
        check((c) => (endpoint(c).reservedParameters[1].name = '_other')),
        'ois[0].endpoints[0].reservedParameters[1].name',
        /Invalid option/,
      );
    });
    it('rejects endpoint parameter names starting with "_" and duplicates', () => {
      expectError(
        check((c) => (endpoint(c).parameters[0].name = '_from')),
        'ois[0].endpoints[0].parameters[0].name',
        /must not start with "_"/,
      );
      expectError(
        check((c) => (endpoint(c).parameters[1].name = 'from')),
        'ois[0].endpoints[0].parameters[1].name',
        /Parameter names must be unique/,
      );
    });
    it('requires empty fixedOperationParameters without an operation', () => {
      expectError(
        check((c) => delete endpoint(c).operation),
        'ois[0].endpoints[0].fixedOperationParameters',
        /must be empty array when "operation" is not specified/,
      );
    });
    it('requires a processing specification without operation and fixed parameters', () => {
      expectError(
        check((c) => {
          delete endpoint(c).operation;
          endpoint(c).fixedOperationParameters = [];
        }),
        'ois[0].endpoints[0]',
        /At least one processing schema must be defined/,
      );
      expectValid(
        check((c) => {
          delete endpoint(c).operation;
          endpoint(c).fixedOperationParameters = [];
          endpoint(c).parameters = [];
          endpoint(c).postProcessingSpecificationV2 = {
            environment: 'Node',
            value: '({response}) => ({response: 1})',
            timeoutMs: 5000,
          };
          c.apiCredentials = [];
          apiSpec(c).security = {};
        }),
      );
    });
    it('rejects V1 and V2 processing of the same phase together', () => {
      expectError(
        check((c) => {
          endpoint(c).preProcessingSpecificationV2 = { environment: 'Node', value: 'x', timeoutMs: 1 };
          endpoint(c).preProcessingSpecifications = [{ environment: 'Node', value: 'x', timeoutMs: 1 }];
        }),
        'ois[0].endpoints[0].preProcessingSpecificationV2',
        /Only one of "preProcessingSpecificationV2" and "preProcessingSpecifications"/,
      );
    });
    it('requires enabled security schemes to be defined', () => {
      expectError(
        check((c) => (apiSpec(c).security.missing = [])),
        'ois[0].apiSpecifications.security.missing',
        /Security scheme "missing" is not defined/,
      );
    });
  });
});
