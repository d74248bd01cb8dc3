// Loads a connection to the API server (the operator's, the CLI's, the coordinator and worker pods') without
// @kubernetes/client-node: importing that package takes a process from ~45 to ~130 MiB of RSS and ~0.6 s of start-up
// (generated API clients, undici, auth plugins), and a client needs only a server URL, TLS material and
// credentials. Covered, as client-go reads them: a kubeconfig's current context or the one chosen (--context)
// (server, certificate-authority[-data], insecure-skip-tls-verify, tls-server-name; client-certificate[-data] and
// client-key[-data], token, tokenFile, username/password, impersonation: `as`, `as-uid`, `as-groups`, `as-user-extra`;
// the context's namespace), KUBECONFIG lists merged
// (the first file to set a name wins), ~/.kube/config, and the in-cluster service account, whose token file is
// re-read every minute because the kubelet rotates it. A user with an exec or auth-provider plugin is handed to the
// package's KubeConfig, loaded only then (a literal dynamic import, the one run-time import of the package in src/),
// since those plugins are what it is for; it then only supplies credentials: requests still go through RestClient.
import { existsSync, readFileSync } from 'node:fs';
import type https from 'node:https';
import { isIPv6 } from 'node:net';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import yaml from 'js-yaml';
import { errorMessage } from '../common/errors.js';
import { monotonicNow } from '../common/time.js';

/**
 * What the REST client needs of a kubeconfig: the current cluster's server, and before each request the TLS
 * material and credentials. Both the lean config below and client-node's KubeConfig have this shape.
 */
export interface ClientConfig {
  getCurrentCluster(): { server: string } | null;
  applyToHTTPSOptions(options: https.RequestOptions): Promise<void>;
}

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** How long a token read from a file is used before the file is read again (client-go's cached token source). */
export const TOKEN_FILE_PERIOD_MS = 60_000;

/** A kubeconfig or in-cluster setting the operator cannot use; the message names the file and field. */
export class KubeConfigError extends Error {
  override name = 'KubeConfigError';
}

type Fields = Record<string, unknown>;

/** The kubeconfig fields of one context, merged across files, with relative file paths made absolute. */
export type KubeConfigDocument = {
  'current-context'?: string;
  clusters: { name: string; cluster: Fields }[];
  users: { name: string; user: Fields }[];
  contexts: { name: string; context: Fields }[];
};

/** A loaded connection and the namespace of its context (the service account's in a cluster), if it names one. */
export type LoadedClientConfig = ClientConfig & { namespace?: string };

export type LoadOptions = {
  /** --kubeconfig: this file only. */
  path?: string;
  /** --context: this context of the kubeconfig instead of its current-context. */
  context?: string;
  /**
   * Where to look when no path is given. 'in-cluster' (the operator and its pods): the service account when the
   * process runs in a pod, else KUBECONFIG, else ~/.kube/config. 'kubeconfig' (kubectl's order, for the CLI):
   * KUBECONFIG, else ~/.kube/config, else the service account.
   */
  prefer?: 'in-cluster' | 'kubeconfig';
  env?: NodeJS.ProcessEnv;
  /** Where the service account's token, ca.crt and namespace are mounted. */
  serviceAccountDir?: string;
  /** The clock the token file's period is measured on (monotonic unless a test gives its own). */
  now?: () => number;
};

/**
 * --kubeconfig PATH, else in the order `prefer` says: the in-cluster service account (KUBERNETES_SERVICE_HOST set
 * and a token mounted), KUBECONFIG (a list of files), ~/.kube/config. A --context needs a kubeconfig file.
 */
export async function loadClientConfig(options: LoadOptions = {}): Promise<LoadedClientConfig> {
  const env = options.env ?? process.env;
  const serviceAccountDir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  if (options.path) return fromDocument(readKubeConfigFiles([options.path]), options);
  const inCluster = () =>
    env.KUBERNETES_SERVICE_HOST && existsSync(join(serviceAccountDir, 'token')) && !options.context
      ? inClusterConfig(env, serviceAccountDir, options.now)
      : undefined;
  if (options.prefer !== 'kubeconfig') {
    const config = inCluster();
    if (config) return config;
  }
  const files = (env.KUBECONFIG ?? '').split(delimiter).filter(Boolean);
  if (files.length > 0) return fromDocument(readKubeConfigFiles(files), options);
  const home = join(env.HOME || homedir(), '.kube', 'config');
  if (existsSync(home)) return fromDocument(readKubeConfigFiles([home]), options);
  const config = inCluster();
  if (config) return config;
  throw new KubeConfigError(
    options.context
      ? `no kubeconfig to take context "${options.context}" from: no --kubeconfig, KUBECONFIG or ~/.kube/config`
      : 'no Kubernetes cluster configured: not in a cluster, no --kubeconfig, KUBECONFIG or ~/.kube/config',
  );
}

/** Reads and merges kubeconfig files: current-context from the first that sets it, each name from the first file. */
export function readKubeConfigFiles(paths: string[]): KubeConfigDocument {
  const merged: KubeConfigDocument = { clusters: [], users: [], contexts: [] };
  for (const path of paths) {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      throw new KubeConfigError(`kubeconfig ${path}: ${errorMessage(error)}`);
    }
    const document = parseKubeConfig(text, path);
    merged['current-context'] ??= document['current-context'];
    for (const section of ['clusters', 'users', 'contexts'] as const) {
      const target = merged[section] as { name: string }[];
      for (const entry of document[section]) if (!target.some((e) => e.name === entry.name)) target.push(entry);
    }
  }
  return merged;
}

const FILE_FIELDS = {
  cluster: ['certificate-authority'],
  user: ['client-certificate', 'client-key', 'tokenFile', 'token-file'],
};

/** One kubeconfig file's text. `path` names it in errors and anchors its relative file paths. */
export function parseKubeConfig(text: string, path: string): KubeConfigDocument {
  let raw: unknown;
  try {
    raw = yaml.load(text);
  } catch (error) {
    // js-yaml's message quotes the lines around the error, which may hold a token or key: only the position.
    const mark = (error as { mark?: { line: number; column: number } }).mark;
    throw new KubeConfigError(
      `kubeconfig ${path}: not valid YAML${mark ? ` (line ${mark.line + 1}, column ${mark.column + 1})` : ''}`,
    );
  }
  if (raw === undefined || raw === null) raw = {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new KubeConfigError(`kubeconfig ${path}: not a mapping`);
  const document = raw as Fields;
  const base = dirname(path);
  const section = <K extends 'cluster' | 'user' | 'context'>(list: string, key: K) => {
    const entries = document[list] ?? [];
    if (!Array.isArray(entries)) throw new KubeConfigError(`kubeconfig ${path}: ${list} must be a list`);
    return entries.map((entry: unknown, index) => {
      const at = `kubeconfig ${path}: ${list}[${index}]`;
      if (!entry || typeof entry !== 'object') throw new KubeConfigError(`${at} must be a mapping`);
      const { name, [key]: fields } = entry as Fields;
      if (typeof name !== 'string' || !name) throw new KubeConfigError(`${at}.name is missing`);
      if (fields !== undefined && (fields === null || typeof fields !== 'object' || Array.isArray(fields)))
        throw new KubeConfigError(`${at}.${key} must be a mapping`);
      const copy: Fields = { ...(fields as Fields | undefined) };
      for (const field of (FILE_FIELDS as Record<string, string[]>)[key] ?? []) {
        const value = copy[field];
        if (typeof value === 'string' && value && !isAbsolute(value)) copy[field] = join(base, value);
      }
      return { name, [key]: copy } as { name: string } & Record<K, Fields>;
    });
  };
  const current = document['current-context'];
  return {
    ...(typeof current === 'string' && current ? { 'current-context': current } : {}),
    clusters: section('clusters', 'cluster'),
    users: section('users', 'user'),
    contexts: section('contexts', 'context'),
  };
}

/** A user that needs a credential plugin, which only client-node implements. */
export function needsPlugin(user: Fields | undefined): boolean {
  return Boolean(user && (user.exec || user['auth-provider']));
}

async function fromDocument(document: KubeConfigDocument, options: LoadOptions): Promise<LoadedClientConfig> {
  const selected = selectContext(document, options.context);
  if (needsPlugin(selected.user)) {
    const { KubeConfig } = await import('@kubernetes/client-node');
    const kubeConfig = new KubeConfig();
    // JSON is YAML; every file path in the document is absolute already.
    kubeConfig.loadFromString(JSON.stringify(document));
    kubeConfig.setCurrentContext(selected.context);
    return new PluginClientConfig(kubeConfig, selected);
  }
  return new LeanKubeConfig(selected, options.now);
}

/** The longest part of a credential plugin's failure that is repeated in an error. */
const PLUGIN_MESSAGE_LIMIT = 300;

/**
 * The fallback's edge: client-node's KubeConfig runs the credential plugin, and nothing of client-node leaves this
 * class but credentials. A plugin's failure (client-node rejects with whatever it wrote to stderr) becomes a
 * KubeConfigError naming the context, its message cut short: not an ApiError, so the RestClient does not retry it.
 */
export class PluginClientConfig implements ClientConfig {
  readonly namespace: string | undefined;
  readonly contextName: string;

  // client-node sends Impersonate-User for `as` and drops the other impersonation fields: they are added here.
  private readonly impersonation: Record<string, string | string[]>;

  constructor(
    private readonly kubeConfig: Pick<ClientConfig, 'getCurrentCluster' | 'applyToHTTPSOptions'>,
    selected: SelectedContext,
  ) {
    this.namespace = selected.namespace;
    this.contextName = selected.context;
    this.impersonation = impersonationHeaders(selected.user ?? {}, `users[context "${selected.context}"].user`);
  }

  getCurrentCluster(): { server: string } | null {
    return this.kubeConfig.getCurrentCluster();
  }

  async applyToHTTPSOptions(options: https.RequestOptions): Promise<void> {
    try {
      await this.kubeConfig.applyToHTTPSOptions(options);
    } catch (error) {
      const message = errorMessage(error).trim();
      const short = message.length > PLUGIN_MESSAGE_LIMIT ? `${message.slice(0, PLUGIN_MESSAGE_LIMIT)}...` : message;
      throw new KubeConfigError(
        `kubeconfig: the credential plugin of context "${this.contextName}" failed${short ? `: ${short}` : ''}`,
      );
    }
    options.headers = { ...options.headers, ...this.impersonation };
  }
}

// RFC 7230's token characters, which a header name may hold as they are.
const HEADER_NAME_CHARACTER = /^[A-Za-z0-9!#$&'*+\-.^_`|~]$/;

/**
 * An `as-user-extra` key in a header name as client-go writes it (transport.headerKeyEscape): every UTF-8 byte that
 * is not a token character, and `%`, as %XX; the apiserver unescapes it.
 */
function headerKeyEscape(key: string): string {
  let escaped = '';
  for (const byte of Buffer.from(key, 'utf8')) {
    const character = String.fromCharCode(byte);
    escaped += HEADER_NAME_CHARACTER.test(character)
      ? character
      : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return escaped;
}

/** A header value as Go sends a string: its UTF-8 bytes (node:http writes a string's characters as latin1 bytes). */
function headerValue(value: string, field: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\x00-\x08\x0a-\x1f\x7f]/.test(value))
    throw new KubeConfigError(`kubeconfig: ${field} holds a control character, which a request header cannot carry`);
  return Buffer.from(value, 'utf8').toString('latin1');
}

/**
 * The user's impersonation (`as`, `as-uid`, `as-groups`, `as-user-extra`) as the headers client-go sends for it
 * (Impersonate-User, -Uid, -Group once per group, Impersonate-Extra-<key> once per value). A field of the wrong
 * shape, or uid, groups or extra without `as` (clientcmd refuses that too), is a KubeConfigError naming the field:
 * a request that silently ran as the kubeconfig's own user would be worse.
 */
export function impersonationHeaders(user: Fields, userAt: string): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  const text = (field: string): string | undefined => {
    const value = user[field];
    if (value === undefined || value === null || value === '') return undefined;
    if (typeof value !== 'string') throw new KubeConfigError(`kubeconfig: ${userAt}.${field} must be a string`);
    return headerValue(value, `${userAt}.${field}`);
  };
  const texts = (field: string, value: unknown): string[] => {
    if (value === undefined || value === null) return [];
    if (!Array.isArray(value) || !value.every((item) => typeof item === 'string'))
      throw new KubeConfigError(`kubeconfig: ${field} must be a list of strings`);
    return value.map((item) => headerValue(item, field));
  };
  const as = text('as');
  const uid = text('as-uid');
  const groups = texts(`${userAt}.as-groups`, user['as-groups']);
  const extra = user['as-user-extra'] ?? {};
  if (typeof extra !== 'object' || Array.isArray(extra))
    throw new KubeConfigError(`kubeconfig: ${userAt}.as-user-extra must be a map of keys to lists of strings`);
  const extraHeaders = Object.entries(extra as Fields).map(
    ([key, values]) =>
      [`Impersonate-Extra-${headerKeyEscape(key)}`, texts(`${userAt}.as-user-extra["${key}"]`, values)] as const,
  );
  const without = [
    ...(uid ? ['as-uid'] : []),
    ...(groups.length > 0 ? ['as-groups'] : []),
    ...(extraHeaders.length > 0 ? ['as-user-extra'] : []),
  ];
  if (!as) {
    if (without.length > 0)
      throw new KubeConfigError(
        `kubeconfig: ${userAt}.${without.join(', ')} without ${userAt}.as: impersonation needs the user to act as`,
      );
    return headers;
  }
  headers['Impersonate-User'] = as;
  if (uid) headers['Impersonate-Uid'] = uid;
  if (groups.length > 0) headers['Impersonate-Group'] = groups;
  for (const [name, values] of extraHeaders) if (values.length > 0) headers[name] = values;
  return headers;
}

export type SelectedContext = {
  context: string;
  cluster: Fields & { name: string };
  user: Fields | undefined;
  namespace?: string;
};

/** The chosen context's (else the current context's) cluster and user, with path-addressed errors for what is missing. */
export function selectContext(document: KubeConfigDocument, chosen?: string): SelectedContext {
  const name = chosen || document['current-context'];
  if (!name) throw new KubeConfigError('kubeconfig: current-context is not set (choose one with --context)');
  const context = document.contexts.find((entry) => entry.name === name)?.context;
  if (!context)
    throw new KubeConfigError(
      `kubeconfig: context "${name}" (${chosen ? '--context' : 'current-context'}) is not defined`,
    );
  const clusterName = context.cluster;
  if (typeof clusterName !== 'string' || !clusterName)
    throw new KubeConfigError(`kubeconfig: context "${name}" names no cluster`);
  const cluster = document.clusters.find((entry) => entry.name === clusterName)?.cluster;
  if (!cluster) throw new KubeConfigError(`kubeconfig: cluster "${clusterName}" (context "${name}") is not defined`);
  if (typeof cluster.server !== 'string' || !cluster.server)
    throw new KubeConfigError(`kubeconfig: clusters["${clusterName}"].cluster.server is missing`);
  const userName = context.user;
  let user: Fields | undefined;
  if (typeof userName === 'string' && userName) {
    user = document.users.find((entry) => entry.name === userName)?.user;
    if (!user) throw new KubeConfigError(`kubeconfig: user "${userName}" (context "${name}") is not defined`);
  }
  const namespace = typeof context.namespace === 'string' && context.namespace ? context.namespace : undefined;
  return { context: name, cluster: { ...cluster, name: clusterName }, user, ...(namespace ? { namespace } : {}) };
}

/** The in-cluster config as client-go's rest.InClusterConfig builds it. */
export function inClusterConfig(
  env: NodeJS.ProcessEnv,
  serviceAccountDir = SERVICE_ACCOUNT_DIR,
  now?: () => number,
): LeanKubeConfig {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port)
    throw new KubeConfigError('in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set');
  const namespaceFile = join(serviceAccountDir, 'namespace');
  const namespace = existsSync(namespaceFile) ? readFileSync(namespaceFile, 'utf8').trim() : '';
  return new LeanKubeConfig(
    {
      context: 'in-cluster',
      cluster: {
        name: 'in-cluster',
        server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`,
        'certificate-authority': join(serviceAccountDir, 'ca.crt'),
      },
      user: { tokenFile: join(serviceAccountDir, 'token') },
      ...(namespace ? { namespace } : {}),
    },
    now,
  );
}

function fileOrData(fields: Fields, fileField: string, at: string): Buffer | undefined {
  const file = fields[fileField];
  const data = fields[`${fileField}-data`];
  if (typeof file === 'string' && file) {
    try {
      return readFileSync(file);
    } catch (error) {
      throw new KubeConfigError(`kubeconfig: ${at}.${fileField}: ${errorMessage(error)}`);
    }
  }
  if (typeof data === 'string' && data) return Buffer.from(data, 'base64');
  return undefined;
}

type Tls = Pick<https.RequestOptions, 'ca' | 'cert' | 'key' | 'rejectUnauthorized' | 'servername'>;

/** A kubeconfig context without plugins: TLS material read once, a token file re-read every minute. */
export class LeanKubeConfig implements ClientConfig {
  readonly namespace: string | undefined;
  readonly contextName: string;
  private readonly server: string;
  private readonly tls: Tls = {};
  private readonly token: string | undefined;
  private readonly tokenFile: string | undefined;
  private readonly basicAuth: string | undefined;
  private readonly impersonation: Record<string, string | string[]>;
  private readonly now: () => number;
  private fileToken: { value: string; readAt: number } | undefined;

  constructor(selected: SelectedContext, now: () => number = monotonicNow) {
    const { cluster, user = {} } = selected;
    const clusterAt = `clusters["${cluster.name}"].cluster`;
    const userAt = `users[context "${selected.context}"].user`;
    if (needsPlugin(user)) throw new KubeConfigError(`kubeconfig: ${userAt} needs a credential plugin`);
    if (cluster['proxy-url'])
      throw new KubeConfigError(`kubeconfig: ${clusterAt}.proxy-url is not supported by the operator's client`);
    let server: URL;
    try {
      server = new URL(String(cluster.server));
    } catch {
      throw new KubeConfigError(`kubeconfig: ${clusterAt}.server is not a URL`);
    }
    if (server.protocol !== 'https:' && server.protocol !== 'http:')
      throw new KubeConfigError(`kubeconfig: ${clusterAt}.server must be http(s)`);
    this.server = String(cluster.server).replace(/\/$/, '');
    this.contextName = selected.context;
    this.namespace = selected.namespace;
    this.now = now;
    const ca = fileOrData(cluster, 'certificate-authority', clusterAt);
    if (ca) this.tls.ca = ca;
    if (cluster['insecure-skip-tls-verify'] === true) this.tls.rejectUnauthorized = false;
    if (typeof cluster['tls-server-name'] === 'string' && cluster['tls-server-name'])
      this.tls.servername = cluster['tls-server-name'];
    const cert = fileOrData(user, 'client-certificate', userAt);
    const key = fileOrData(user, 'client-key', userAt);
    if (Boolean(cert) !== Boolean(key))
      throw new KubeConfigError(`kubeconfig: ${userAt} has a client certificate without its key, or a key alone`);
    if (cert && key) Object.assign(this.tls, { cert, key });
    this.token = typeof user.token === 'string' && user.token ? user.token : undefined;
    // client-go's field is tokenFile; client-node reads token-file.
    const tokenFile = user.tokenFile || user['token-file'];
    this.tokenFile = typeof tokenFile === 'string' && tokenFile ? tokenFile : undefined;
    if (typeof user.username === 'string' && user.username)
      this.basicAuth = `${user.username}:${typeof user.password === 'string' ? user.password : ''}`;
    this.impersonation = impersonationHeaders(user, userAt);
    // Fail at start, not on the first request, when the token file cannot be read.
    if (this.tokenFile) this.bearer();
  }

  getCurrentCluster(): { name: string; server: string } {
    return { name: this.contextName, server: this.server };
  }

  async applyToHTTPSOptions(options: https.RequestOptions): Promise<void> {
    Object.assign(options, this.tls);
    options.headers ??= {};
    const headers = options.headers as Record<string, string>;
    const token = this.bearer();
    if (token) headers.Authorization = `Bearer ${token}`;
    Object.assign(headers, this.impersonation);
    if (this.basicAuth) options.auth = this.basicAuth;
  }

  /**
   * The bearer token: the token file's content once it is a minute old (the last good read when a read fails, as
   * client-go keeps it), else the kubeconfig's token. A token file wins over a token, as in client-go.
   */
  private bearer(): string | undefined {
    if (!this.tokenFile) return this.token;
    const now = this.now();
    if (!this.fileToken || now - this.fileToken.readAt >= TOKEN_FILE_PERIOD_MS) {
      try {
        const value = readFileSync(this.tokenFile, 'utf8').trim();
        if (!value) throw new Error('the file is empty');
        this.fileToken = { value, readAt: now };
      } catch (error) {
        if (!this.fileToken)
          throw new KubeConfigError(`token file ${this.tokenFile} cannot be read: ${errorMessage(error)}`);
        // Keep the last good token; try the file again on the next request.
      }
    }
    return this.fileToken.value;
  }
}
