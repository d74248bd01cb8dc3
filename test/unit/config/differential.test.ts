// Differential test against the reference validator (@api3/airnode-validator 0.15.0, CommonJS, zod 3,
// ethers 5): same verdict on the fixtures and on generated mutations, except the deliberate differences
// listed in DELIBERATE below. A reference exception (it crashes on some inputs) counts as "invalid".
// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} strings are secret references
import { createRequire } from 'node:module';
import { expect } from 'chai';
import fc from 'fast-check';
import { type Issue, validateConfig } from '../../../src/config/index.js';
import { BASE_SECRETS, baseConfig, fixturePairs, type Json, readFixture } from './fixtures.js';
import { applyMutations, mutationArb } from './mutations.js';

const require = createRequire(import.meta.url);
const reference = require('@api3/airnode-validator') as {
  parseConfigWithSecrets: (
    config: unknown,
    secrets: Record<string, string>,
  ) => {
    success: boolean;
    error?: { issues?: { path: (string | number)[]; message: string; code: string; keys?: string[] }[] };
  };
};
const dotenv = require('dotenv') as { parse: (text: string) => Record<string, string> };

type ReferenceIssue = { path: string; message: string };
type Verdict = { ok: boolean; crashed: boolean; issues: ReferenceIssue[] };

function referenceVerdict(config: unknown, secretsText: string): Verdict {
  try {
    const result = reference.parseConfigWithSecrets(structuredClone(config), dotenv.parse(secretsText));
    const issues = (result.error?.issues ?? []).flatMap((i) =>
      i.code === 'unrecognized_keys' && i.keys
        ? i.keys.map((k) => ({ path: [...i.path, k].join('.'), message: i.message }))
        : [{ path: i.path.join('.'), message: i.message }],
    );
    return { ok: result.success, crashed: false, issues };
  } catch (error) {
    return { ok: false, crashed: true, issues: [{ path: '', message: String(error) }] };
  }
}

/**
 * Where we deliberately differ. `ours` matches our errors for inputs that we reject and the reference accepts;
 * `reference` matches reference issues for inputs that we accept and the reference rejects.
 */
const DELIBERATE: { id: string; reason: string; ours?: RegExp; reference?: RegExp }[] = [
  {
    id: 'underscore-parameter-names',
    reason: 'spec: endpoint parameter names must not start with "_" (the reference only forbids the reserved names)',
    ours: /must not start with "_"/,
  },
  {
    id: 'two-decimal-multiplier',
    reason: 'spec: recommendedGasPriceMultiplier has at most two decimals (the reference accepts any positive number)',
    ours: /at most two decimals/,
  },
  {
    id: 'credentials-reference-existing-scheme',
    reason: 'spec: an apiCredentials entry names an existing OIS title and scheme (the reference ignores orphans)',
    ours: /No OIS with title|has no security scheme/,
  },
  {
    id: 'credentials-match-ois-title',
    reason: 'spec: credentials match oisTitle + securitySchemeName (the reference matches the scheme name only)',
    ours: /enabled but no credentials/,
  },
  {
    id: 'unique-ois-titles',
    reason: 'spec: the OIS title is unique within the node',
    ours: /OIS titles must be unique/,
  },
  {
    id: 'unique-endpoint-names',
    reason: 'spec: endpoint names are unique within an OIS',
    ours: /Endpoint names must be unique/,
  },
  { id: 'at-least-one-provider', reason: 'spec: providers holds one or more providers', ours: /At least one provider/ },
  {
    id: 'non-negative-counts',
    reason:
      'minConfirmations >= 0, blockHistoryLimit > 0, gatewayServerPort 1-65535 (the reference takes any integer/number)',
    ours: /Too (small|big)|expected int/,
  },
  {
    id: 'reserved-integers',
    reason: '_minConfirmations/_gasPrice must be decimal digits (the reference uses parseInt, so "12abc" passes)',
    ours: /must be a non-negative integer/,
  },
  {
    id: 'safe-integers',
    reason: 'integers beyond 2^53 lose precision and are rejected (zod 4 int); the reference accepts them',
    ours: /expected int, received number/,
  },
  {
    id: 'nesting-limit',
    reason: `configs nested deeper than 256 levels are rejected before validation (stack safety)`,
    ours: /nested deeper than/,
  },
  {
    id: 'secret-reference-names',
    reason: '${…} must hold a secret name; the reference evaluates it as a JavaScript expression (lodash template)',
    ours: /not a valid secret reference|is not defined in secrets\.env/,
  },
  {
    id: 'each-chain-once',
    reason: 'a chain listed twice is served twice (its requests counted twice, fulfilments raced on the same wallets)',
    ours: /is already listed at chains\[/,
  },
  {
    id: 'reserved-parameters-that-never-encode',
    reason: 'a _type, _path or _times the endpoint sets so that every request fails (e.g. _type "integer")',
    ours: /can never be encoded|every request would fail/,
  },
  {
    id: 'canonical-names',
    reason: 'nodeWalletMnemonic, NodeRrp, NodeRrpDryRun are canonical here; the reference knows only its own names',
    reference: /(^|\.)(nodeWalletMnemonic|airnodeWalletMnemonic|NodeRrp|NodeRrpDryRun) /,
  },
  {
    id: 'eip1559-defaults',
    reason: 'spec: providerRecommendedEip1559GasPrice defaults baseFeeMultiplier 2 and priorityFee 3.12 gwei',
    reference: /baseFeeMultiplier|priorityFee/,
  },
];

const explainedByUs = (errors: Issue[]) =>
  errors.length > 0 && errors.every((e) => DELIBERATE.some((d) => d.ours?.test(e.message)));
const explainedByReference = (verdict: Verdict) =>
  !verdict.crashed &&
  verdict.issues.length > 0 &&
  verdict.issues.every((i) => DELIBERATE.some((d) => d.reference?.test(`${i.path} ${i.message}`)));

function compare(config: Json, secretsText: string): { same: boolean; explained: boolean; detail: string } {
  const ours = validateConfig(config, secretsText);
  const theirs = referenceVerdict(config, secretsText);
  const same = ours.ok === theirs.ok;
  const explained = same || (ours.ok ? explainedByReference(theirs) : explainedByUs(ours.errors));
  return {
    same,
    explained,
    detail: `ours ${ours.ok} ${JSON.stringify(ours.errors.slice(0, 5))}; reference ${theirs.ok} ${JSON.stringify(theirs.issues.slice(0, 5))}`,
  };
}

describe('differential test against @api3/airnode-validator 0.15.0', function () {
  const runs = Number(process.env['DIFF_RUNS'] ?? 200);
  this.timeout(Math.max(180_000, runs * 300));

  describe('fixtures: same verdict', () => {
    for (const pair of fixturePairs()) {
      it(pair.config, () => {
        const result = compare(JSON.parse(readFixture(pair.config)), readFixture(pair.secrets));
        expect(result.same, result.detail).to.equal(true);
      });
    }
  });

  describe('targeted mutations: same verdict', () => {
    const cases: [string, (c: Json) => void][] = [
      ['unknown root key', (c) => (c.extra = 1)],
      ['wrong stage', (c) => (c.nodeSettings.stage = 'UPPER')],
      ['trigger to a missing OIS', (c) => (c.triggers.rrp[0].oisTitle = 'x')],
      ['wrong endpointId', (c) => (c.triggers.http[0].endpointId = `0x${'0'.repeat(64)}`)],
      [
        'gas oracle not ending in constant',
        (c) =>
          c.chains[0].options.gasPriceOracle
            .reverse()
            .push({ gasPriceStrategy: 'providerRecommendedGasPrice', recommendedGasPriceMultiplier: 1.1 }),
      ],
      ['missing credentials', (c) => (c.apiCredentials = [])],
      ['fixed and default reserved', (c) => (c.ois[0].endpoints[0].reservedParameters[0].default = 'x')],
      ['no _type', (c) => c.ois[0].endpoints[0].reservedParameters.shift()],
      ['operation missing in spec', (c) => (c.ois[0].endpoints[0].operation.path = '/none')],
      ['maxConcurrency below providers', (c) => (c.chains[0].maxConcurrency = 0)],
      ['unknown chain without contracts', (c) => delete c.chains[0].contracts],
      [
        'public chain without contracts',
        (c) => {
          c.chains[0].id = '1';
          delete c.chains[0].contracts;
        },
      ],
      ['wrong nodeVersion', (c) => (c.nodeSettings.nodeVersion = '0.14.0')],
      [
        'aws without region',
        (c) => (c.nodeSettings.cloudProvider = { type: 'aws', disableConcurrencyReservations: true }),
      ],
      ['heartbeat enabled without key', (c) => (c.nodeSettings.heartbeat = { enabled: true, url: 'http://x' })],
      [
        'relay scheme with gateways',
        (c) => {
          c.ois[0].apiSpecifications.components.securitySchemes.r = { type: 'relayChainId', in: 'query', name: 'c' };
          c.ois[0].apiSpecifications.security.r = [];
        },
      ],
      ['two servers (warning only)', (c) => c.ois[0].apiSpecifications.servers.push({ url: 'http://b' })],
      ['missing secret', (c) => (c.chains[0].providers.local.url = '${NOPE}')],
      ['escaped placeholder', (c) => (c.ois[0].endpoints[0].description = 'literal \\${X}')],
    ];
    for (const [name, edit] of cases) {
      it(name, () => {
        const config = baseConfig();
        edit(config);
        const result = compare(config, BASE_SECRETS);
        expect(result.same, result.detail).to.equal(true);
      });
    }
  });

  describe('deliberate differences (listed with reasons)', () => {
    const cases: [string, (c: Json) => void, boolean][] = [
      ['underscore-parameter-names', (c) => (c.ois[0].endpoints[0].parameters[0].name = '_from'), false],
      [
        'two-decimal-multiplier',
        (c) =>
          c.chains[0].options.gasPriceOracle.unshift({
            gasPriceStrategy: 'providerRecommendedGasPrice',
            recommendedGasPriceMultiplier: 1.125,
          }),
        false,
      ],
      [
        'credentials-reference-existing-scheme',
        (c) => c.apiCredentials.push({ oisTitle: 'Other', securitySchemeName: 'x', securitySchemeValue: 'y' }),
        false,
      ],
      [
        'credentials-match-ois-title',
        (c) => {
          // A second OIS with the same scheme name: the reference is satisfied by the first OIS's credential.
          const other = structuredClone(c.ois[0]);
          other.title = 'Other API';
          c.ois.push(other);
        },
        false,
      ],
      ['unique-ois-titles', (c) => c.ois.push(structuredClone(c.ois[0])), false],
      ['at-least-one-provider', (c) => (c.chains[0].providers = {}), false],
      [
        'canonical-names',
        (c) => {
          c.nodeSettings.nodeWalletMnemonic = c.nodeSettings.airnodeWalletMnemonic;
          delete c.nodeSettings.airnodeWalletMnemonic;
        },
        true,
      ],
      [
        'eip1559-defaults',
        (c) => c.chains[0].options.gasPriceOracle.unshift({ gasPriceStrategy: 'providerRecommendedEip1559GasPrice' }),
        true,
      ],
    ];
    for (const [id, edit, oursOk] of cases) {
      const entry = DELIBERATE.find((d) => d.id === id)!;
      it(`${id}: ${entry.reason}`, () => {
        const config = baseConfig();
        edit(config);
        const result = compare(config, BASE_SECRETS);
        expect(result.same, result.detail).to.equal(false);
        expect(result.explained, result.detail).to.equal(true);
        expect(validateConfig(config, BASE_SECRETS).ok).to.equal(oursOk);
      });
    }

    it('odd-length encodedParameters: the reference throws, we return an error', () => {
      const config = baseConfig();
      config.templates.push({
        templateId: `0x${'1'.repeat(64)}`,
        endpointId: `0x${'2'.repeat(64)}`,
        encodedParameters: '0x123',
      });
      expect(referenceVerdict(config, BASE_SECRETS).crashed).to.equal(true);
      const ours = validateConfig(config, BASE_SECRETS);
      expect(ours.ok).to.equal(false);
      expect(ours.errors.map((e) => e.path)).to.include('templates[0].encodedParameters');
    });
  });

  it('random mutations: same verdict or a listed deliberate difference', () => {
    const bases = fixturePairs()
      .filter((p) => !p.expectedErrors)
      .map((p) => ({ config: JSON.parse(readFixture(p.config)), secrets: readFixture(p.secrets) }));
    fc.assert(
      fc.property(
        fc.nat({ max: bases.length - 1 }),
        fc.array(mutationArb, { minLength: 1, maxLength: 2 }),
        (index, mutations) => {
          const base = bases[index]!;
          const mutated = applyMutations(structuredClone(base.config), mutations);
          const result = compare(mutated, base.secrets);
          expect(result.explained, `${JSON.stringify(mutations).slice(0, 400)}\n${result.detail}`).to.equal(true);
        },
      ),
      // DIFF_RUNS raises the count for a longer local search (1500 runs passed when this was written).
      { numRuns: runs },
    );
  });
});
