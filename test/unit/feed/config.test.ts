// The feed's config model against the reference's own schema (@api3/airnode-feed 3.3.0, configSchema, zod 3): the
// same bad configs get the same paths and messages, except the deliberate differences below (docs/feeds.md).
// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} strings are secret references
import { createRequire } from 'node:module';
import { expect } from 'chai';
import { formatPath } from '../../../src/config/index.js';
import { validateFeedConfig } from '../../../src/feed/validate.js';
import { encodeParameters } from '../../../src/ois/abi.js';
import { deriveEndpointId, deriveTemplateIdV1 } from '../../../src/protocol/ids.js';
import { TEST_MNEMONIC } from '../../support/chain.js';
import { buildFeedConfig, FEED_ENDPOINT_ID, FEED_OIS_TITLE, feedTemplate } from '../../support/feed.js';

const require = createRequire(import.meta.url);
const reference = require('@api3/airnode-feed') as {
  configSchema: {
    safeParseAsync(input: unknown): Promise<{
      success: boolean;
      error?: { issues: { path: (string | number)[]; message: string; code: string; keys?: string[] }[] };
    }>;
  };
};

type Issue = { path: string; message: string };
// biome-ignore lint/suspicious/noExplicitAny: the rows mutate untyped JSON
type Config = Record<string, any>;

/**
 * zod's own issues (an unknown key, a missing field, a wrong type, a pattern) are worded as the node's `validate` words
 * them, not as zod 3 does (docs/feeds.md, "Validation"): they are compared by path, the schema's own messages in full.
 */
const ZOD_OWN_CODES = new Set(['unrecognized_keys', 'invalid_type', 'invalid_string']);
const NODE_WORDS_FOR_ZOD_OWN =
  /^(Unknown key "|Required field is missing \(|Invalid input: expected |Invalid string: )/;
const ZOD_OWN = "(zod's own issue)";

async function referenceIssues(config: unknown): Promise<Issue[]> {
  let result: Awaited<ReturnType<typeof reference.configSchema.safeParseAsync>>;
  try {
    result = await reference.configSchema.safeParseAsync(structuredClone(config));
  } catch (error) {
    return [{ path: '(the reference threw)', message: (error as Error).message }];
  }
  if (result.success) return [];
  return result.error!.issues.flatMap((issue) => {
    const zodOwn = issue.code === 'invalid_string' ? issue.message === 'Invalid' : ZOD_OWN_CODES.has(issue.code);
    const message = zodOwn ? ZOD_OWN : issue.message;
    return issue.code === 'unrecognized_keys' && issue.keys
      ? issue.keys.map((key) => ({ path: formatPath([...issue.path, key]), message }))
      : [{ path: formatPath(issue.path), message }];
  });
}

async function ourIssues(config: unknown): Promise<Issue[]> {
  const result = await validateFeedConfig(config, {});
  if (result.ok) return [];
  return result.errors.map((e) => (NODE_WORDS_FOR_ZOD_OWN.test(e.message) ? { ...e, message: ZOD_OWN } : e));
}

const sorted = (issues: Issue[]) =>
  [...issues].sort((a, b) => `${a.path} ${a.message}`.localeCompare(`${b.path} ${b.message}`));

function baseConfig(): Config {
  const config = buildFeedConfig({
    apiUrl: 'https://api.example.com',
    assets: ['BTC', 'ETH'],
    fetchInterval: 5,
    signedApis: [
      { name: 'one', url: 'https://signed-api.example.com', authToken: 'token' },
      { name: 'two', url: 'https://other.example.com/', authToken: null },
    ],
  });
  const text = JSON.stringify(config).replace('${WALLET_MNEMONIC}', TEST_MNEMONIC).replace('${API_KEY}', 'api-key');
  return JSON.parse(text) as Config;
}

const templateIds = (config: Config) => Object.keys(config.templates);

/** A template of `endpointId` with one string parameter, under its correct id. */
function addTemplate(config: Config, endpointId: string, value: string): string {
  const parameters = [{ type: 'string32', name: 'coin', value }];
  const templateId = deriveTemplateIdV1(endpointId, encodeParameters(parameters as never));
  config.templates[templateId] = { endpointId, parameters };
  return templateId;
}

type Row = {
  name: string;
  mutate: (config: Config) => void;
  /** A deliberate difference: why, and each side's issues as they are. */
  deliberate?: { why: string; ours: (config: Config) => Issue[]; reference: (config: Config) => Issue[] };
};

const ROWS: Row[] = [
  { name: 'signedApis missing', mutate: (c) => delete c.signedApis },
  { name: 'signedApis empty', mutate: (c) => (c.signedApis = []) },
  { name: 'signedApi url not a URL', mutate: (c) => (c.signedApis[0].url = 'not a url') },
  { name: 'signedApi authToken a number', mutate: (c) => (c.signedApis[0].authToken = 5) },
  { name: 'signedApi unknown key', mutate: (c) => (c.signedApis[0].timeout = 5) },
  { name: 'unknown top-level key', mutate: (c) => (c.chains = []) },
  { name: 'apiCredentials not an array', mutate: (c) => (c.apiCredentials = {}) },
  { name: 'bad mnemonic', mutate: (c) => (c.nodeSettings.airnodeWalletMnemonic = 'not a mnemonic at all') },
  { name: 'node version of another product', mutate: (c) => (c.nodeSettings.nodeVersion = '0.15.0') },
  { name: 'stage with capitals', mutate: (c) => (c.nodeSettings.stage = 'Prod_1') },
  { name: 'nodeSettings unknown key', mutate: (c) => (c.nodeSettings.logLevel = 'info') },
  {
    name: 'template id that its parameters do not derive',
    mutate: (c) => {
      c.templates[templateIds(c)[0]!].parameters[1].value = 'prices.DOGE';
    },
  },
  {
    name: 'template of an endpoint not in endpoints',
    mutate: (c) => {
      addTemplate(c, `0x${'ab'.repeat(32)}`, 'BTC');
    },
  },
  {
    name: 'template endpointId not bytes32',
    mutate: (c) => {
      c.templates[templateIds(c)[0]!].endpointId = '0x1234';
    },
    deliberate: {
      why: "the reference's template-id refinement runs on the bad endpointId and throws out of safeParse",
      ours: (c) => [
        { path: formatPath(['templates', templateIds(c)[0]!, 'endpointId']), message: ZOD_OWN },
        {
          path: formatPath(['templates', templateIds(c)[0]!, 'endpointId']),
          message: 'Endpoint "0x1234" is not defined in the config.endpoints object',
        },
      ],
      reference: () => [
        {
          path: '(the reference threw)',
          message:
            'invalid value for bytes32 (argument="value", value="0x1234", code=INVALID_ARGUMENT, version=solidity/5.8.0)',
        },
      ],
    },
  },
  {
    name: 'endpoint id that its OIS title and name do not derive',
    mutate: (c) => (c.endpoints[`0x${'cd'.repeat(32)}`] = { oisTitle: FEED_OIS_TITLE, endpointName: 'prices' }),
  },
  {
    name: 'endpoint of an unknown OIS',
    mutate: (c) => (c.endpoints[deriveEndpointId('Nobody', 'prices')] = { oisTitle: 'Nobody', endpointName: 'prices' }),
  },
  {
    name: 'endpoint unknown to its OIS',
    mutate: (c) =>
      (c.endpoints[deriveEndpointId(FEED_OIS_TITLE, 'volume')] = { oisTitle: FEED_OIS_TITLE, endpointName: 'volume' }),
  },
  { name: 'signedApiUpdates empty', mutate: (c) => (c.triggers.signedApiUpdates = []) },
  { name: 'fetchInterval a string', mutate: (c) => (c.triggers.signedApiUpdates[0].fetchInterval = '5') },
  {
    name: 'trigger of a template not in templates',
    mutate: (c) => c.triggers.signedApiUpdates[0].templateIds.push(`0x${'ef'.repeat(32)}`),
  },
  {
    name: 'trigger template id not bytes32',
    mutate: (c) => (c.triggers.signedApiUpdates[0].templateIds = ['0xnope']),
  },
  {
    name: 'templates of one update with different operation parameters',
    mutate: (c) => (c.triggers.signedApiUpdates = [{ templateIds: templateIds(c), fetchInterval: 5 }]),
  },
  {
    name: 'templates of one update with different endpoints',
    mutate: (c) => {
      c.endpoints[deriveEndpointId(FEED_OIS_TITLE, 'prices2')] = { oisTitle: FEED_OIS_TITLE, endpointName: 'prices2' };
      c.ois[0].endpoints.push({ ...structuredClone(c.ois[0].endpoints[0]), name: 'prices2' });
      const other = addTemplate(c, deriveEndpointId(FEED_OIS_TITLE, 'prices2'), 'BTC');
      c.triggers.signedApiUpdates = [{ templateIds: [templateIds(c)[0], other], fetchInterval: 5 }];
    },
  },
  {
    name: 'signed API names not unique',
    mutate: (c) => (c.signedApis[1].name = 'one'),
    deliberate: {
      why: 'the reference names the path signedApis.signedApis (its refinement adds the array name to its own path)',
      ours: () => [{ path: 'signedApis', message: 'Signed API names must be unique' }],
      reference: () => [{ path: 'signedApis.signedApis', message: 'Signed API names must be unique' }],
    },
  },
  {
    name: 'template parameters that cannot be encoded',
    mutate: (c) => {
      c.templates[templateIds(c)[0]!].parameters[0].type = 'float';
    },
    deliberate: {
      why: "the reference's path is templates.templates.<id>.parameters, and the encoder's own words follow the colon",
      ours: (c) => [
        {
          path: formatPath(['templates', templateIds(c)[0]!, 'parameters']),
          message: `Unable to encode parameters: ${encodeError(c.templates[templateIds(c)[0]!].parameters)}`,
        },
      ],
      reference: (c) => [
        {
          path: formatPath(['templates', 'templates', templateIds(c)[0]!, 'parameters']),
          message:
            'Unable to encode parameters: invalid type (argument="type", value="float", code=INVALID_ARGUMENT, version=abi/5.8.0)',
        },
      ],
    },
  },
  {
    name: 'fetchInterval 0',
    mutate: (c) => (c.triggers.signedApiUpdates[0].fetchInterval = 0),
    deliberate: {
      why: 'a fetchInterval of 0 or less makes the reference call the API in a busy loop',
      ours: () => [
        {
          path: 'triggers.signedApiUpdates[0].fetchInterval',
          message: 'fetchInterval must be a positive number of seconds',
        },
      ],
      reference: () => [],
    },
  },
  {
    name: 'nodeVersion of another 3.x release',
    mutate: (c) => (c.nodeSettings.nodeVersion = '3.1.0'),
    deliberate: {
      why: 'the reference accepts only its own version; this engine takes the config of any 3.x release',
      ours: () => [],
      reference: () => [{ path: 'nodeSettings.nodeVersion', message: 'Invalid node version' }],
    },
  },
];

function encodeError(parameters: unknown): string {
  try {
    encodeParameters(parameters as never);
    return '';
  } catch (error) {
    return (error as Error).message;
  }
}

describe('feed config: the same errors as the reference schema (@api3/airnode-feed 3.3.0)', function () {
  this.timeout(30_000);

  it('the base config is valid for both', async () => {
    expect(await referenceIssues(baseConfig())).to.deep.equal([]);
    expect(await ourIssues(baseConfig())).to.deep.equal([]);
  });

  for (const row of ROWS) {
    it(`${row.name}${row.deliberate ? ' (deliberate difference)' : ''}`, async () => {
      const config = baseConfig();
      row.mutate(config);
      const [theirs, ours] = await Promise.all([referenceIssues(config), ourIssues(config)]);
      if (row.deliberate) {
        expect(sorted(theirs), 'the reference').to.deep.equal(sorted(row.deliberate.reference(config)));
        expect(sorted(ours), 'ours').to.deep.equal(sorted(row.deliberate.ours(config)));
      } else {
        expect(theirs, 'the reference rejects it').not.to.deep.equal([]);
        expect(sorted(ours)).to.deep.equal(sorted(theirs));
      }
    });
  }

  it('feedTemplate ids are what both derive (the fixtures of the component tests)', async () => {
    const { templateId, template } = feedTemplate('BTC');
    expect(template.endpointId).to.equal(FEED_ENDPOINT_ID);
    expect(templateIds(baseConfig())).to.include(templateId);
  });
});
