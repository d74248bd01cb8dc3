// What the `validate` benchmarks (config-validate.bench.ts, validate-floor.bench.ts) share, so that both measure the
// same inputs against the same command: the generated configs, one size class in four shapes built from the
// reference node/config.example.json (its secrets.env beside it), and the reference validator's command.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { getAddress } from '../../src/protocol/address.js';
import { deriveEndpointId } from '../../src/protocol/ids.js';

/** A config shape: how many OIS, endpoints per OIS, chains, and authorizer entries per chain. */
export type Shape = {
  name: string;
  description: string;
  ois: number;
  endpoints: number;
  chains: number;
  /** requesterEndpointAuthorizers per chain; as many cross-chain and ERC721 authorizers, a tenth as many. */
  authorizers: number;
  /** Triggers per endpoint: rrp and http, or rrp, http and httpSignedData. */
  triggers: ('rrp' | 'http' | 'httpSignedData')[];
};

export const SHAPES: Shape[] = [
  {
    name: 'bench',
    description: '100 OIS x 50 endpoints, rrp + http trigger each, 20 chains (the shape measured so far)',
    ois: 100,
    endpoints: 50,
    chains: 20,
    authorizers: 1,
    triggers: ['rrp', 'http'],
  },
  {
    name: 'few-ois',
    description: '4 OIS x 1,250 endpoints, rrp + http trigger each, 20 chains',
    ois: 4,
    endpoints: 1_250,
    chains: 20,
    authorizers: 1,
    triggers: ['rrp', 'http'],
  },
  {
    name: 'many-ois',
    description: '1,000 OIS x 5 endpoints, rrp + http + httpSignedData trigger each, 1,000 apiCredentials, 20 chains',
    ois: 1_000,
    endpoints: 5,
    chains: 20,
    authorizers: 1,
    triggers: ['rrp', 'http', 'httpSignedData'],
  },
  {
    name: 'many-chains',
    description:
      '50 OIS x 40 endpoints, rrp + http trigger each, 200 chains with 100 requester-endpoint authorizers, 10 cross-chain and 10 ERC721 authorizers each',
    ois: 50,
    endpoints: 40,
    chains: 200,
    authorizers: 100,
    triggers: ['rrp', 'http'],
  },
];

const fixtures = new URL('../../test/fixtures/airnode/', import.meta.url);
export const secretsText = readFileSync(new URL('node/secrets.example.env', fixtures), 'utf8');
export const exampleConfigUrl = new URL('node/config.example.json', fixtures);
const base = JSON.parse(readFileSync(exampleConfigUrl, 'utf8'));

const address = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;

/**
 * `value` with every address in it EIP-55 checksummed: the reference example's ERC721 authorizer has a mixed-case
 * address whose checksum does not match, which `validate` warns about once per chain that copies it (hundreds of
 * lines for the many-chains shape, drowning what the benchmark prints).
 */
function checksummed<T>(value: T): T {
  if (typeof value === 'string')
    return (/^0x[0-9a-fA-F]{40}$/.test(value) ? getAddress(value.toLowerCase()) : value) as T;
  if (Array.isArray(value)) return value.map(checksummed) as T;
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([key, entry]) => [key, checksummed(entry)])) as T;
  return value;
}

/** A large valid config built from the reference example, in the given shape. */
export function generateConfig(shape: Shape) {
  const config = structuredClone(base);
  const chain = checksummed(base.chains[0]);
  const authorizers = structuredClone(chain.authorizers);
  const crossChain = authorizers.crossChainRequesterAuthorizers[0];
  const erc721 = authorizers.requesterAuthorizersWithErc721[0];
  const few = Math.max(1, Math.floor(shape.authorizers / 10));
  config.chains = Array.from({ length: shape.chains }, (_, i) => ({
    ...structuredClone(chain),
    id: String(31337 + i),
    providers: { a: { url: '$' + '{PROVIDER_URL}' }, b: { url: `http://127.0.0.1:${8545 + i}` } },
    authorizers:
      shape.authorizers <= 1
        ? structuredClone(chain.authorizers)
        : {
            ...authorizers,
            requesterEndpointAuthorizers: Array.from({ length: shape.authorizers }, (_, a) =>
              address(i * 1000 + a + 1),
            ),
            crossChainRequesterAuthorizers: Array.from({ length: few }, (_, a) => ({
              ...structuredClone(crossChain),
              requesterEndpointAuthorizers: [address(900_000 + i * 100 + a)],
              chainId: String(1 + a),
            })),
            requesterAuthorizersWithErc721: Array.from({ length: few }, (_, a) => ({
              ...structuredClone(erc721),
              erc721s: [address(800_000 + i * 100 + a)],
            })),
          },
  }));
  const ois = base.ois[0];
  config.ois = [];
  config.triggers = { rrp: [], http: [], httpSignedData: [] };
  config.apiCredentials = [];
  for (let o = 0; o < shape.ois; o++) {
    const title = `Generated API ${o}`;
    const paths: Record<string, unknown> = {};
    const endpoints = [];
    for (let e = 0; e < shape.endpoints; e++) {
      const path = `/convert/${e}/{coin}`;
      paths[path] = {
        get: {
          parameters: [
            ...structuredClone(ois.apiSpecifications.paths['/convert'].get.parameters),
            { in: 'path', name: 'coin' },
          ],
        },
      };
      const endpoint = structuredClone(ois.endpoints[0]);
      endpoint.name = `endpoint${e}`;
      endpoint.operation.path = path;
      endpoint.parameters.push({ name: 'coin', operationParameter: { in: 'path', name: 'coin' } });
      endpoints.push(endpoint);
      const trigger = {
        endpointId: deriveEndpointId(title, endpoint.name),
        oisTitle: title,
        endpointName: endpoint.name,
      };
      for (const list of shape.triggers) {
        config.triggers[list].push(list === 'rrp' ? { ...trigger, cacheResponses: false } : trigger);
      }
    }
    config.ois.push({
      ...structuredClone(ois),
      title,
      apiSpecifications: { ...structuredClone(ois.apiSpecifications), paths },
      endpoints,
    });
    config.apiCredentials.push({ ...base.apiCredentials[0], oisTitle: title });
  }
  return config;
}

const require = createRequire(import.meta.url);

/** The reference's `airnode-validator` bin (@api3/airnode-validator 0.15.0), run through its own #! line. */
export const referenceValidatorCli = join(
  dirname(require.resolve('@api3/airnode-validator/package.json')),
  (require('@api3/airnode-validator/package.json') as { bin: Record<string, string> }).bin['airnode-validator']!,
);
