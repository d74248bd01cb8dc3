// The objects `oracle-node manifest` prints for an existing deployment: the Secret (as `kubectl create secret
// generic --from-env-file --dry-run=client -o yaml` would print it) and the OracleNode with config.json as written
// under spec.config. Pure functions of their input; the command (manifest-command.ts) does the reading and printing.
import yaml from 'js-yaml';
import { formatPath } from '../config/paths.js';
import { API_VERSION, KIND } from '../operator/resource.js';

/** A DNS-1123 label: the OracleNode's name and a namespace (children and label values are built from them). */
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** A DNS-1123 subdomain: a Secret's name. */
export const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export type ManifestInput = {
  name: string;
  namespace?: string | undefined;
  /** config.json as written (placeholders and the reference's names kept): the operator validates it itself. */
  config: unknown;
  /** The kind printed: an OracleNode (default) or, for an Airnode feed's config.json, an AirnodeFeed. */
  kind?: 'OracleNode' | 'AirnodeFeed';
  /** Print the OracleNode with its coordinator suspended (spec.coordinator.suspend), to resume with one patch. */
  suspended?: boolean | undefined;
  /** The Secret that spec.secretRef names; absent for a config without any `${NAME}`. */
  secret?: {
    name: string;
    /** The parsed secrets.env to put inline, or undefined when the Secret is created elsewhere. */
    data?: Record<string, string> | undefined;
  };
};

type ManifestObject = { apiVersion: string; kind: string; metadata: Record<string, string>; [key: string]: unknown };

function metadata(name: string, namespace: string | undefined): Record<string, string> {
  return namespace === undefined ? { name } : { name, namespace };
}

/** The Secret (when inline) then the OracleNode (or AirnodeFeed), in the order `kubectl apply` should create them. */
export function manifestObjects(input: ManifestInput): ManifestObject[] {
  const objects: ManifestObject[] = [];
  const { secret } = input;
  if (secret?.data) {
    const data = Object.fromEntries(
      Object.entries(secret.data).map(([key, value]) => [key, Buffer.from(value, 'utf8').toString('base64')]),
    );
    objects.push({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: metadata(secret.name, input.namespace),
      type: 'Opaque',
      data,
    });
  }
  const spec: Record<string, unknown> = {};
  if (secret) spec.secretRef = { name: secret.name };
  spec.config = input.config;
  if (input.suspended) spec.coordinator = { suspend: true };
  const kind = input.kind ?? KIND;
  objects.push({ apiVersion: API_VERSION, kind, metadata: metadata(input.name, input.namespace), spec });
  return objects;
}

/**
 * YAML 1.1 (kubectl's reader) takes `1_000` or `0x_ff` for numbers; js-yaml's YAML 1.2 schema does not, so it
 * would print such a string unquoted. Declaring them as an implicit type makes the dumper quote them.
 */
const yaml11Numbers = new yaml.Type('tag:oracle-node.io,2026:yaml11-number', {
  kind: 'scalar',
  resolve: (text: string) => text.includes('_') && /^[-+]?\.?[0-9][0-9a-zA-Z_.+-]*$/.test(text),
});
const KUBECTL_SAFE_SCHEMA = yaml.DEFAULT_SCHEMA.extend({ implicit: [yaml11Numbers] });

/**
 * The objects as one YAML stream. Long strings stay on one line, and strings that a YAML 1.1 reader (kubectl's)
 * would take for a number, a boolean or a time ("0x…", "yes", "010", "1_000", "2026-01-01") are quoted, so
 * `kubectl apply` reads back exactly the strings of config.json.
 */
export function manifestYaml(objects: ManifestObject[], header: string[] = []): string {
  const documents = objects.map((object) =>
    yaml.dump(object, { schema: KUBECTL_SAFE_SCHEMA, lineWidth: -1, noRefs: true, sortKeys: false }),
  );
  return `${header.map((line) => `# ${line}\n`).join('')}${documents.join('---\n')}`;
}

/** The one command that resumes a node printed with `--suspended`. */
export function resumeCommand(name: string, namespace: string | undefined): string {
  const words = [
    'kubectl',
    'patch',
    'oraclenode',
    name,
    '--type',
    'merge',
    '-p',
    '{"spec":{"coordinator":{"suspend":false}}}',
  ];
  if (namespace !== undefined) words.push('-n', namespace);
  return words.map(shellQuote).join(' ');
}

/** Loopback hosts: inside a pod they are the pod itself, never the machine `manifest` runs on. */
const LOOPBACK_HOST = /^(localhost|127(\.\d{1,3}){3}|\[::1\]|0\.0\.0\.0)$/i;

function isLoopbackUrl(url: unknown): boolean {
  if (typeof url !== 'string') return false;
  try {
    const { hostname } = new URL(url);
    return LOOPBACK_HOST.test(hostname) || hostname.toLowerCase().endsWith('.localhost');
  } catch {
    return false;
  }
}

type PodUrls = {
  chains: {
    providers: Record<string, { url: string }>;
    authorizers: {
      crossChainRequesterAuthorizers?: { chainProvider: { url: string } }[] | undefined;
      crossChainRequesterAuthorizersWithErc721?: { chainProvider: { url: string } }[] | undefined;
    };
  }[];
  ois: { apiSpecifications: { servers: { url: string }[] } }[];
  nodeSettings: { heartbeat: { enabled: boolean; url?: string | undefined } };
};

/**
 * The URLs of a validated config (secrets interpolated) that point at a loopback address: they work where the
 * reference ran beside its chain or API, never in a pod. Paths only: a provider URL often carries a key.
 */
export function loopbackUrlPaths(config: PodUrls): string[] {
  const paths: string[] = [];
  const check = (url: unknown, ...path: (string | number)[]) => {
    if (isLoopbackUrl(url)) paths.push(formatPath(path));
  };
  config.chains.forEach((chain, c) => {
    for (const [name, provider] of Object.entries(chain.providers))
      check(provider.url, 'chains', c, 'providers', name, 'url');
    for (const kind of ['crossChainRequesterAuthorizers', 'crossChainRequesterAuthorizersWithErc721'] as const) {
      for (const [i, authorizer] of (chain.authorizers[kind] ?? []).entries())
        check(authorizer.chainProvider.url, 'chains', c, 'authorizers', kind, i, 'chainProvider', 'url');
    }
  });
  for (const [o, ois] of config.ois.entries())
    check(ois.apiSpecifications.servers[0]?.url, 'ois', o, 'apiSpecifications', 'servers', 0, 'url');
  if (config.nodeSettings.heartbeat.enabled)
    check(config.nodeSettings.heartbeat.url, 'nodeSettings', 'heartbeat', 'url');
  return paths;
}

const SHELL_SAFE = /^[A-Za-z0-9_./=:@%+-]+$/;
const shellQuote = (word: string) => (SHELL_SAFE.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`);

/** The command that creates the Secret from secrets.env itself (names and the path only, never a value). */
export function createSecretCommand(secretName: string, secretsPath: string, namespace: string | undefined): string {
  const words = ['kubectl', 'create', 'secret', 'generic', secretName, `--from-env-file=${secretsPath}`];
  if (namespace !== undefined) words.push('-n', namespace);
  return words.map(shellQuote).join(' ');
}

/**
 * The secrets whose value `kubectl create secret --from-env-file` reads differently from secrets.env's rules:
 * kubectl takes everything after the first `=` literally (quotes, trailing spaces and ` # comments` included),
 * refuses `export NAME=…` and multi-line values. Names only: the values never leave this function.
 */
export function namesKubectlReadsDifferently(secretsText: string, secrets: Record<string, string>): string[] {
  const kubectlValues = new Map<string, string>();
  for (const raw of secretsText.replace(/^\uFEFF/, '').split('\n')) {
    const line = raw.replace(/\r$/, '').trimStart();
    if (line === '' || line.startsWith('#')) continue;
    const equals = line.indexOf('=');
    if (equals > 0) kubectlValues.set(line.slice(0, equals), line.slice(equals + 1));
  }
  return Object.keys(secrets).filter((name) => kubectlValues.get(name) !== secrets[name]);
}
