// Loads the reference packages (CommonJS, ethers 5) as test oracles.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
/** CommonJS require for deep paths of the reference packages. */
export const referenceRequire = require;

type Json = unknown;
export type ReferenceAbi = {
  encode(parameters: { type: string; name: string; value: unknown }[]): string;
  decode(encoded: string): Record<string, unknown>;
};
export type ReferenceAdapter = {
  extractAndEncodeResponse(
    data: Json,
    parameters: { _type?: string; _path?: string; _times?: string },
  ): { rawValue: Json; encodedValue: string; values: unknown[] };
  buildRequest(options: unknown): {
    baseUrl: string;
    path: string;
    method: string;
    headers: Record<string, string>;
    data: Record<string, unknown>;
  };
};

export const referenceAbi = require('@api3/airnode-abi') as ReferenceAbi;
export const referenceAdapter = require('@api3/airnode-adapter') as ReferenceAdapter;

// axios as the reference adapter resolves it, to serialise query strings exactly as it would.
const adapterRequire = createRequire(require.resolve('@api3/airnode-adapter'));
export const referenceAxios = adapterRequire('axios') as {
  getUri(config: { url: string; params?: unknown }): string;
};

export function readVectors<T = Json>(name: string): T {
  return JSON.parse(readFileSync(new URL(`../../fixtures/airnode/vectors/${name}`, import.meta.url), 'utf8')) as T;
}

export function readExample<T = Json>(relativePath: string): T {
  return JSON.parse(readFileSync(new URL(`../../fixtures/airnode/${relativePath}`, import.meta.url), 'utf8')) as T;
}
