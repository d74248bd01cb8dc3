import { expect } from 'chai';
import fc from 'fast-check';
import { MAX_CONFIG_BYTES, type ValidationResult, validateConfig } from '../../../src/config/index.js';
import { BASE_SECRETS, baseConfig, fixturePairs, type Json, readFixture } from './fixtures.js';
import { applyMutations, mutationArb } from './mutations.js';

function expectStructured(result: ValidationResult): void {
  expect(result).to.be.an('object');
  expect(result.ok).to.be.a('boolean');
  expect(result.errors).to.be.an('array');
  expect(result.warnings).to.be.an('array');
  for (const issue of [...result.errors, ...result.warnings]) {
    expect(issue.path).to.be.a('string');
    expect(issue.message).to.be.a('string').and.not.equal('');
  }
  if (result.ok) expect(result.errors).to.have.length(0);
  else expect(result.errors.length).to.be.greaterThan(0);
  expect(result.errors.some((e) => e.message.startsWith('Internal validator error'))).to.equal(false);
}

describe('validator robustness', () => {
  it('reports malformed JSON with line and column', () => {
    const result = validateConfig('{\n  "chains": [\n    1,\n  ]\n}', BASE_SECRETS);
    expectStructured(result);
    expect(result.errors[0]!.message).to.match(/^Malformed JSON at line 4, column 3: /);
  });

  it('rejects non-object roots', () => {
    for (const text of ['[]', '42', 'null', '"x"']) {
      const result = validateConfig(text, BASE_SECRETS);
      expectStructured(result);
      expect(result.errors[0]!.message).to.equal('Config must be a JSON object');
    }
  });

  it('rejects a config above the size cap with a clear error', () => {
    const result = validateConfig(`{"pad":"${'x'.repeat(MAX_CONFIG_BYTES)}"}`, BASE_SECRETS);
    expectStructured(result);
    expect(result.errors[0]!.message).to.match(/larger than the 10 MiB limit/);
  });

  it('survives deep nesting', () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    const result = validateConfig(`{"chains":${deep}}`, BASE_SECRETS);
    expectStructured(result);
    expect(result.errors[0]!.message).to.match(/nested deeper than/);
    let nested: Json = 'leaf';
    for (let i = 0; i < 5000; i++) nested = { a: nested };
    const config = baseConfig();
    config.ois[0].endpoints[0].fixedOperationParameters[0].value = nested;
    expectStructured(validateConfig(config, BASE_SECRETS));
  });

  it('checks an operation with 60,000 parameters in linear time, with the same issues', () => {
    // Compared pair by pair, the parameter rules took ~3.6 billion comparisons here: minutes, past the timeout.
    const count = 60_000;
    const config = baseConfig();
    const apiParameters = config.ois[0].apiSpecifications.paths['/convert'].get.parameters;
    const endpoint = config.ois[0].endpoints[0];
    for (let i = 0; i < count; i++) {
      apiParameters.push({ in: 'header', name: `p${i}` });
      endpoint.parameters.push({ name: `e${i}`, operationParameter: { in: 'header', name: `p${i}` } });
    }
    // Repeated: the first in the operation and among the endpoint's parameters; one only in the endpoint.
    apiParameters.push({ in: 'header', name: 'p0' });
    endpoint.parameters.push({ name: 'again', operationParameter: { in: 'header', name: 'p1' } });
    endpoint.parameters.push({ name: 'nowhere', operationParameter: { in: 'cookie', name: 'p2' } });
    const result = validateConfig(config, BASE_SECRETS);
    expectStructured(result);
    const last = apiParameters.length - 1;
    const params = endpoint.parameters.length;
    expect(result.errors).to.deep.include.members([
      {
        path: `ois[0].apiSpecifications.paths["/convert"].get.parameters[${last}]`,
        message: 'Parameter "p0" in "header" is used multiple times',
      },
      {
        path: `ois[0].endpoints[0].parameters[${params - 2}].operationParameter`,
        message: 'Parameter "p1" in "header" is used multiple times',
      },
      {
        path: `ois[0].endpoints[0].parameters[${params - 1}].operationParameter`,
        message: 'No matching API specification parameter found in "apiSpecifications" section for "p2" in "cookie"',
      },
    ]);
  });

  it('gives odd-length hex an error (the reference crashes on it)', () => {
    const config = baseConfig();
    config.templates.push({
      templateId: `0x${'a'.repeat(64)}`,
      endpointId: `0x${'b'.repeat(64)}`,
      encodedParameters: '0xabc',
    });
    const result = validateConfig(config, BASE_SECRETS);
    expectStructured(result);
    expect(result.errors.map((e) => e.path)).to.include('templates[0].encodedParameters');
  });

  it('gives a lone surrogate in a trigger name a path-addressed error, not an internal one', () => {
    // The same malformed name in the OIS and in the trigger: the trigger matches it, and its id must be derived.
    for (const field of ['oisTitle', 'endpointName'] as const) {
      const config = baseConfig();
      const trigger = config.triggers.rrp[0] as Record<string, string>;
      const ois = (config.ois as { title: string; endpoints: { name: string }[] }[]).find(
        (candidate) => candidate.title === trigger.oisTitle,
      )!;
      const endpoint = ois.endpoints.find((candidate) => candidate.name === trigger.endpointName)!;
      if (field === 'oisTitle') ois.title = `${ois.title}\ud800`;
      else endpoint.name = `${endpoint.name}\ud800`;
      trigger[field] = `${trigger[field]}\ud800`;
      const result = validateConfig(config, BASE_SECRETS);
      expectStructured(result);
      expect(result.errors.map((e) => e.path)).to.include(`triggers.rrp[0].${field}`);
    }
  });

  it('handles wrong types at every path of a valid config', () => {
    const paths: (string | number)[][] = [];
    const collect = (node: Json, path: (string | number)[]) => {
      paths.push(path);
      if (node && typeof node === 'object')
        for (const [k, v] of Object.entries(node)) collect(v, [...path, Array.isArray(node) ? Number(k) : k]);
    };
    collect(baseConfig(), []);
    for (const replacement of [null, 'text', {}]) {
      for (const path of paths.slice(1)) {
        const config = baseConfig();
        let parent = config;
        for (const key of path.slice(0, -1)) parent = parent[key];
        parent[path[path.length - 1]!] = replacement;
        expectStructured(validateConfig(config, BASE_SECRETS));
      }
    }
  });
});

describe('validator property test (fast-check)', function () {
  this.timeout(120_000);
  const bases = fixturePairs()
    .slice(0, 12)
    .map((pair) => ({ config: JSON.parse(readFixture(pair.config)), secrets: readFixture(pair.secrets) }));

  it('always returns a structured result for mutated configs', () => {
    fc.assert(
      fc.property(
        fc.nat({ max: bases.length - 1 }),
        fc.array(mutationArb, { minLength: 1, maxLength: 4 }),
        (index, mutations) => {
          const base = bases[index]!;
          const mutated = applyMutations(structuredClone(base.config), mutations);
          expectStructured(validateConfig(mutated, base.secrets));
          expectStructured(validateConfig(JSON.stringify(mutated), base.secrets));
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('always returns a structured result for arbitrary JSON text and secrets', () => {
    fc.assert(
      fc.property(fc.oneof(fc.json(), fc.string()), fc.string(), (text, secrets) => {
        expectStructured(validateConfig(text, secrets));
      }),
      { numRuns: 1000 },
    );
  });
});
