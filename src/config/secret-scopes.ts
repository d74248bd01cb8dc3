// Which `${NAME}` of a config each workload needs, from where the reference sits in the config: the keys of the
// Secret a workload's pod receives, and nothing more. A worker runs upstream API answers and processing code, a
// gateway faces callers: neither should hold a key only another part of the config uses. So a worker gets the API
// credentials of its OIS and never the mnemonic nor a provider URL: the coordinator signs and sends. A gateway
// never gets the mnemonic either: the signed-data and OEV gateways sign with the node key alone, which the operator
// derives and hands over apart (its own Secret, ORACLE_NODE_SIGNING_KEY), so a gateway compromise cannot reach
// the sponsor wallets.

import { isRecord } from '../common/json.js';
import type { Workload } from '../common/workloads.js';
import { interpolateSecrets, NestingTooDeepError, secretsFromEnvironment } from './secrets.js';

export type { Workload } from '../common/workloads.js';

/** What a reference is used for, read from its place in the config. */
type Slot =
  | { kind: 'mnemonic' }
  | { kind: 'provider' }
  | { kind: 'heartbeat' }
  | { kind: 'gateway' }
  /** An OIS (its definition or its apiCredentials entry), by title. */
  | { kind: 'ois'; title: string }
  /** Anywhere else (stage, chain options, templates, ...): every workload validates it. */
  | { kind: 'shared' };

const GATEWAY_SETTINGS = new Set(['httpGateway', 'httpSignedDataGateway', 'oevGateway']);

const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const stringAt = (value: unknown, key: string): string | undefined =>
  isRecord(value) && typeof value[key] === 'string' ? value[key] : undefined;

function slotOf(root: Record<string, unknown>, path: (string | number)[]): Slot {
  const [section, first, second, third] = path;
  if (section === 'nodeSettings') {
    if (first === 'nodeWalletMnemonic' || first === 'airnodeWalletMnemonic') return { kind: 'mnemonic' };
    if (first === 'heartbeat') return { kind: 'heartbeat' };
    if (typeof first === 'string' && GATEWAY_SETTINGS.has(first)) return { kind: 'gateway' };
  }
  if (section === 'chains' && second === 'providers' && third !== undefined) return { kind: 'provider' };
  if ((section === 'ois' || section === 'apiCredentials') && typeof first === 'number') {
    const entry = asArray(root[section])[first];
    const title = section === 'ois' ? stringAt(entry, 'title') : stringAt(entry, 'oisTitle');
    if (title !== undefined) return { kind: 'ois', title };
  }
  return { kind: 'shared' };
}

/** Titles of the OIS that a list of triggers (`triggers.rrp`, `.http`, `.httpSignedData`) calls. */
function triggeredOis(root: Record<string, unknown>, sections: string[]): Set<string> {
  const triggers = root['triggers'];
  const titles = new Set<string>();
  for (const section of sections) {
    for (const trigger of asArray(isRecord(triggers) ? triggers[section] : undefined)) {
      const title = stringAt(trigger, 'oisTitle');
      if (title !== undefined) titles.add(title);
    }
  }
  return titles;
}

/** Whether a workload uses a reference in this slot. */
function needs(workload: Workload, slot: Slot, root: Record<string, unknown>): boolean {
  switch (slot.kind) {
    case 'shared':
      return true;
    // The coordinator discovers requests, signs and sends every transaction (src/node/shard.ts) and the heartbeat;
    // a worker only calls APIs (src/node/api-call.ts); a signing gateway gets the node key alone (see above).
    case 'mnemonic':
      return workload === 'coordinator';
    case 'provider':
      return workload === 'coordinator';
    case 'heartbeat':
      return workload === 'coordinator';
    case 'gateway':
      return workload === 'gateway';
    // API calls: the worker for the request-response triggers, the gateway for its own; never the coordinator,
    // whose shards run as worker Jobs.
    case 'ois':
      if (workload === 'worker') return triggeredOis(root, ['rrp']).has(slot.title);
      if (workload === 'gateway') return triggeredOis(root, ['http', 'httpSignedData']).has(slot.title);
      return false;
  }
}

/** Every valid `${NAME}` of a parsed config with the paths it is used at (parsed, not rendered). */
function referencePaths(root: unknown): Map<string, (string | number)[][]> {
  const found = new Map<string, (string | number)[][]>();
  const path: (string | number)[] = [];
  const visit = (node: unknown, depth: number) => {
    if (depth > 256) throw new NestingTooDeepError('nested deeper than 256 levels');
    if (typeof node === 'string') {
      for (const name of referencedNamesOf(node)) found.set(name, [...(found.get(name) ?? []), [...path]]);
      return;
    }
    if (Array.isArray(node)) {
      node.forEach((item, index) => {
        path.push(index);
        visit(item, depth + 1);
        path.pop();
      });
      return;
    }
    if (isRecord(node)) {
      for (const [key, value] of Object.entries(node)) {
        path.push(key);
        for (const name of referencedNamesOf(key)) found.set(name, [...(found.get(name) ?? []), [...path]]);
        visit(value, depth + 1);
        path.pop();
      }
    }
  };
  visit(root, 0);
  return found;
}

/** The `${NAME}` references of one string, by the interpolation's own rule (escapes and invalid names excluded). */
function referencedNamesOf(text: string): string[] {
  return text.includes('${') ? [...interpolateSecrets(text, {}).missing.keys()] : [];
}

export type SecretScopes = Record<Workload, string[]>;

/**
 * The names each workload's pod receives: those its own part of the config references, sorted. A name used in
 * several places goes to every workload that uses one of them. A config that is not an object, or nested beyond
 * the validator's limit, gives none (validation refuses it before anything is built).
 */
export function secretScopes(config: unknown): SecretScopes {
  const scopes: SecretScopes = { coordinator: [], gateway: [], worker: [] };
  if (!isRecord(config)) return scopes;
  let references: Map<string, (string | number)[][]>;
  try {
    references = referencePaths(config);
  } catch (error) {
    if (error instanceof NestingTooDeepError) return scopes;
    throw error;
  }
  for (const workload of Object.keys(scopes) as Workload[]) {
    scopes[workload] = [...references]
      .filter(([, paths]) => paths.some((path) => needs(workload, slotOf(config, path), config)))
      .map(([name]) => name)
      .sort();
  }
  return scopes;
}

/**
 * What a workload's engine puts in place of a name its pod was deliberately not given, so that validating the
 * whole config does not fail on a part the workload never uses. Each is well-formed where the schema checks the
 * form and useless otherwise: a reserved `.invalid` host (RFC 2606) long enough for a heartbeat key, and for a
 * mnemonic the BIP-39 test vector, which no workload that lacks the real one has a code path to sign with.
 */
export const WITHHELD_SECRET = 'https://withheld-secret.invalid/';
export const WITHHELD_MNEMONIC =
  'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about';

/** Stand-ins for the names a workload does not receive (see WITHHELD_SECRET), by what they are used for. */
export function withheldStandIns(config: unknown, workload: Workload): Record<string, string> {
  if (!isRecord(config)) return {};
  let references: Map<string, (string | number)[][]>;
  try {
    references = referencePaths(config);
  } catch (error) {
    if (error instanceof NestingTooDeepError) return {};
    throw error;
  }
  const standIns: Record<string, string> = {};
  for (const [name, paths] of references) {
    if (paths.some((path) => needs(workload, slotOf(config, path), config))) continue;
    const mnemonic = paths.some((path) => slotOf(config, path).kind === 'mnemonic');
    standIns[name] = mnemonic ? WITHHELD_MNEMONIC : WITHHELD_SECRET;
  }
  return standIns;
}

/**
 * The secrets of a workload's pod: the values of the names its config references, from the environment, and for
 * a pod scoped to one workload (the operator's, ORACLE_NODE_SECRET_SCOPE) a stand-in for each name that only other
 * workloads use. A name the workload needs and does not have stays missing: validation reports it.
 */
export function scopedSecretsFromEnvironment(
  config: unknown,
  workload: Workload | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const secrets = secretsFromEnvironment(config, env);
  if (!workload) return secrets;
  let root = config;
  if (typeof config === 'string') {
    try {
      root = JSON.parse(config);
    } catch {
      return secrets;
    }
  }
  return { ...withheldStandIns(root, workload), ...secrets };
}
