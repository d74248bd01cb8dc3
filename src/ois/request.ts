// Builds the HTTP request of an OIS endpoint (airnode-facts §5, "Request building"). Pure: no I/O.
// Precedence as in the reference adapter: user parameters < fixedOperationParameters < security schemes.
// Differences (docs/ois-engine.md): path values are URL-encoded, `0`/`false` are valid path values,
// header names merge case-insensitively (as axios does on the wire), `required` parameters are enforced.

import { InvalidParameterError } from './limits.js';
import type { ApiCredential, Endpoint, Ois, Operation, SecurityScheme } from './types.js';
import { isReservedParameterName } from './types.js';

export type RequestMetadata = {
  chainId: string;
  chainType: 'evm';
  requesterAddress: string;
  sponsorAddress: string;
  sponsorWalletAddress: string;
  requestId: string;
};

export type HttpRequest = {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: string;
};

export type BuildRequestOptions = {
  ois: Ois;
  endpointName: string;
  /** Parameters after pre-processing with endpoint defaults merged; reserved names are ignored. */
  parameters: Record<string, unknown>;
  /** Credentials of this OIS (other OIS' credentials are ignored). */
  apiCredentials: readonly ApiCredential[];
  /** Request metadata for relay schemes; absent for gateway calls, which never relay. */
  metadata?: RequestMetadata | undefined;
};

type Sections = {
  path: Record<string, unknown>;
  query: Record<string, unknown>;
  header: Record<string, unknown>;
  cookie: Record<string, unknown>;
};

const RELAY_METADATA_KEYS: Readonly<Record<string, keyof RequestMetadata>> = {
  relayChainId: 'chainId',
  relayChainType: 'chainType',
  relayRequesterAddress: 'requesterAddress',
  relaySponsorAddress: 'sponsorAddress',
  relaySponsorWalletAddress: 'sponsorWalletAddress',
  relayRequestId: 'requestId',
};

// Null-prototype records: a parameter named "__proto__" stays a plain key (spreading copies it as data).
function record(): Record<string, unknown> {
  return Object.create(null) as Record<string, unknown>;
}

function emptySections(): Sections {
  return { path: record(), query: record(), header: record(), cookie: record() };
}

function put(sections: Sections, target: string, name: string, value: unknown): void {
  if (target === 'path' || target === 'query' || target === 'header' || target === 'cookie') {
    sections[target][name] = value;
  }
}

export function findEndpoint(ois: Ois, endpointName: string): Endpoint {
  const endpoint = ois.endpoints.find((candidate) => candidate.name === endpointName);
  if (!endpoint) throw new Error(`Endpoint: '${endpointName}' not found in the OIS.`);
  return endpoint;
}

/** `required` endpoint parameters must have a value once pre-processing and defaults have been applied. */
export function checkRequiredParameters(endpoint: Endpoint, parameters: Record<string, unknown>): void {
  const missing = endpoint.parameters
    .filter((parameter) => parameter.required === true)
    .filter((parameter) => !Object.hasOwn(parameters, parameter.name) || parameters[parameter.name] == null)
    .map((parameter) => `'${parameter.name}'`);
  if (missing.length > 0) throw new Error(`Missing required parameters: ${missing.join(', ')}`);
}

function userSections(endpoint: Endpoint, operation: Operation, parameters: Record<string, unknown>): Sections {
  const sections = emptySections();
  for (const key of Object.keys(parameters)) {
    if (isReservedParameterName(key)) continue;
    const parameter = endpoint.parameters.find((candidate) => candidate.name === key);
    const target = parameter?.operationParameter;
    // Only parameters the endpoint declares and the API operation knows (same name and location) are sent.
    if (!target) continue;
    if (!operation.parameters.some((api) => api.name === target.name && api.in === target.in)) continue;
    put(sections, target.in, target.name, parameters[key]);
  }
  return sections;
}

function fixedSections(endpoint: Endpoint, operation: Operation): Sections {
  const sections = emptySections();
  for (const fixed of endpoint.fixedOperationParameters) {
    const { name, in: target } = fixed.operationParameter;
    if (!operation.parameters.some((api) => api.name === name)) continue;
    put(sections, target, name, fixed.value);
  }
  return sections;
}

function schemeValue(
  scheme: SecurityScheme,
  credential: ApiCredential | undefined,
  metadata: RequestMetadata | undefined,
): { target: string; name: string; value: string } | null {
  if (scheme.type === 'apiKey') {
    if (!credential || !scheme.name || !scheme.in) return null;
    return { target: scheme.in, name: scheme.name, value: credential.securitySchemeValue };
  }
  if (scheme.type === 'http') {
    if (!credential) return null;
    // As the reference: the basic value is sent as configured (already base64 of "user:password").
    if (scheme.scheme === 'basic')
      return { target: 'header', name: 'Authorization', value: `Basic ${credential.securitySchemeValue}` };
    if (scheme.scheme === 'bearer')
      return { target: 'header', name: 'Authorization', value: `Bearer ${credential.securitySchemeValue}` };
    return null;
  }
  const metadataKey = RELAY_METADATA_KEYS[scheme.type];
  if (metadataKey && metadata && scheme.name && scheme.in) {
    return { target: scheme.in, name: scheme.name, value: String(metadata[metadataKey]) };
  }
  return null;
}

function securitySections(options: BuildRequestOptions): Sections {
  const sections = emptySections();
  const { apiSpecifications } = options.ois;
  for (const schemeName of Object.keys(apiSpecifications.security)) {
    if (!Object.hasOwn(apiSpecifications.components.securitySchemes, schemeName)) continue;
    const scheme = apiSpecifications.components.securitySchemes[schemeName]!;
    const credential = options.apiCredentials.find((candidate) => candidate.securitySchemeName === schemeName);
    const applied = schemeValue(scheme, credential, options.metadata);
    if (applied) put(sections, applied.target, applied.name, applied.value);
  }
  return sections;
}

function substitutePath(rawPath: string, values: Record<string, unknown>): string {
  const missing: string[] = [];
  const path = rawPath.replace(/\{([^}]+)\}/g, (match, name: string) => {
    const value = Object.hasOwn(values, name) ? values[name] : undefined;
    if (value === undefined || value === null || value === '') {
      missing.push(`'${name}'`);
      return match;
    }
    const text = stringify(value);
    // "." and ".." stay dot segments even when percent-encoded (%2E%2E): the URL would walk up the API's path
    // and the credentials go to another endpoint of the host. They are refused.
    if (text === '.' || text === '..') {
      throw new InvalidParameterError(`Path parameter '${name}' cannot be "." or ".."`);
    }
    return encodeURIComponent(text);
  });
  if (missing.length > 0) {
    throw new InvalidParameterError(
      `The following path parameters were expected but not provided: ${missing.join(', ')}`,
    );
  }
  return path;
}

function stringify(value: unknown): string {
  return typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value);
}

const AXIOS_UNESCAPES: Readonly<Record<string, string>> = {
  '%3A': ':',
  '%3a': ':',
  '%24': '$',
  '%2C': ',',
  '%2c': ',',
  '%20': '+',
};

/** axios' query encoding, so the API sees the same query string as from the reference. */
function encodeQueryComponent(text: string): string {
  const encoded = encodeURIComponent(text);
  return encoded.includes('%')
    ? encoded.replace(/%3A|%24|%2C|%20/gi, (match) => AXIOS_UNESCAPES[match] ?? match)
    : encoded;
}

function isFlatArray(value: unknown[]): boolean {
  return value.every((element) => element === null || typeof element !== 'object');
}

export function serializeQuery(query: Record<string, unknown>): string {
  const pairs: string[] = [];
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value) && isFlatArray(value)) {
      for (const element of value) {
        if (element === undefined || element === null) continue;
        pairs.push(`${encodeQueryComponent(`${key}[]`)}=${encodeQueryComponent(String(element))}`);
      }
      continue;
    }
    pairs.push(`${encodeQueryComponent(key)}=${encodeQueryComponent(stringify(value))}`);
  }
  return pairs.join('&');
}

/** Later sections win; names compare case-insensitively and keep the first spelling, as axios sends them. */
function mergeHeaders(...sources: Record<string, unknown>[]): Record<string, string> {
  const headers: Record<string, string> = {};
  const spelling = new Map<string, string>();
  for (const source of sources) {
    for (const [name, value] of Object.entries(source)) {
      if (value === undefined || value === null || value === false) continue;
      const lower = name.toLowerCase();
      const key = spelling.get(lower) ?? name;
      spelling.set(lower, key);
      if (key === '__proto__') {
        Object.defineProperty(headers, key, {
          value: stringify(value),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      } else {
        headers[key] = stringify(value);
      }
    }
  }
  return headers;
}

function cookieHeader(cookies: Record<string, unknown>): Record<string, string> {
  const entries = Object.entries(cookies);
  if (entries.length === 0) return {};
  return { Cookie: entries.map(([key, value]) => `${key}=${encodeURIComponent(stringify(value))};`).join(' ') };
}

export function getOperation(ois: Ois, endpoint: Endpoint): Operation {
  if (!endpoint.operation) throw new Error(`Endpoint: '${endpoint.name}' has no operation`);
  const { path, method } = endpoint.operation;
  const pathItem = Object.hasOwn(ois.apiSpecifications.paths, path) ? ois.apiSpecifications.paths[path] : undefined;
  const operation = pathItem && Object.hasOwn(pathItem, method) ? pathItem[method] : undefined;
  if (!operation) throw new Error(`Operation '${method} ${path}' not found in the API specification`);
  return operation;
}

/** The HTTP request for one endpoint call; throws on a missing endpoint, operation or path parameter. */
export function buildRequest(options: BuildRequestOptions): HttpRequest {
  const { ois } = options;
  const endpoint = findEndpoint(ois, options.endpointName);
  const operation = getOperation(ois, endpoint);
  checkRequiredParameters(endpoint, options.parameters);
  const server = ois.apiSpecifications.servers[0];
  if (!server) throw new Error('The API specification has no server URL');

  const user = userSections(endpoint, operation, options.parameters);
  const fixed = fixedSections(endpoint, operation);
  const security = securitySections(options);

  const path = substitutePath(endpoint.operation!.path, { ...user.path, ...fixed.path });
  const query = { ...user.query, ...fixed.query, ...security.query };
  const cookies = { ...user.cookie, ...fixed.cookie, ...security.cookie };
  const headers = mergeHeaders(user.header, fixed.header, security.header, cookieHeader(cookies));
  const url = `${server.url}${path}`;

  if (endpoint.operation!.method === 'post') {
    // POST sends the query-located values as a flat JSON body.
    return {
      method: 'POST',
      url,
      headers: mergeHeaders({ 'Content-Type': 'application/json' }, headers),
      body: JSON.stringify(query),
    };
  }
  const queryString = serializeQuery(query);
  const withoutHash = url.includes('#') ? url.slice(0, url.indexOf('#')) : url;
  return {
    method: 'GET',
    url: queryString ? `${withoutHash}${withoutHash.includes('?') ? '&' : '?'}${queryString}` : url,
    headers,
  };
}
