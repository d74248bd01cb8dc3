// Shared test data: the reference fixtures in test/fixtures/airnode/ and a mutable base config.
import { readdirSync, readFileSync, statSync } from 'node:fs';

export const FIXTURES = new URL('../../fixtures/airnode/', import.meta.url);

export const fixturePath = (relative: string) => new URL(relative, FIXTURES).pathname;
export const readFixture = (relative: string) => readFileSync(new URL(relative, FIXTURES), 'utf8');

export type FixturePair = {
  config: string;
  secrets: string;
  /** the reference rejects it too; the only expected errors */
  expectedErrors?: { path: string; message: RegExp }[];
};

const wrongNodeVersion = [{ path: 'nodeSettings.nodeVersion', message: /must be 0\.15\.0/ }];

/** Every example config under the fixtures with its secrets file. */
export function fixturePairs(): FixturePair[] {
  const pairs: FixturePair[] = [
    { config: 'node/config.example.json', secrets: 'node/secrets.example.env' },
    { config: 'node/test-fixture.config.valid.json', secrets: 'node/secrets.example.env' },
    { config: 'deployer/config.example.json', secrets: 'deployer/secrets.example.env' },
    // Upstream test fixtures written for nodeVersion 0.8.0: the 0.15 reference rejects them for that alone.
    {
      config: 'deployer/config.aws.valid.json',
      secrets: 'deployer/secrets.valid.env',
      expectedErrors: wrongNodeVersion,
    },
    {
      config: 'deployer/config.gcp.valid.json',
      secrets: 'deployer/secrets.valid.env',
      expectedErrors: wrongNodeVersion,
    },
    { config: 'validator/config.valid.json', secrets: 'validator/secrets.valid.env' },
    { config: 'validator/interpolated-config.valid.json', secrets: 'validator/secrets.valid.env' },
  ];
  const examples = new URL('examples/', FIXTURES);
  for (const name of readdirSync(examples).sort()) {
    if (!statSync(new URL(name, examples)).isDirectory()) continue;
    pairs.push({ config: `examples/${name}/config.example.json`, secrets: `examples/${name}/secrets.example.env` });
  }
  return pairs;
}

export const BASE_SECRETS = readFixture('node/secrets.example.env');
const baseText = readFixture('node/config.example.json');

// biome-ignore lint/suspicious/noExplicitAny: tests mutate arbitrary parts of the JSON tree
export type Json = any;

/** A fresh copy of node/config.example.json (local, all authorizer kinds, rrp/http/httpSignedData triggers). */
export const baseConfig = (): Json => JSON.parse(baseText);

/** The base config after `edit`; returns the object for validateConfig(…, BASE_SECRETS). */
export function edited(edit: (config: Json) => void): Json {
  const config = baseConfig();
  edit(config);
  return config;
}
