// An opt-in deny list for API destinations. As in the reference, an OIS server URL is called as configured,
// whatever address it resolves to (a loopback or cloud metadata address included): the operator's config is
// trusted. A node that serves OISes written by others can refuse private, loopback, link-local and metadata
// addresses instead; the check is on the resolved address of every connection (redirects included), so a
// public name that resolves to a private address is refused too.
import { BlockList, isIP } from 'node:net';

export type DestinationPolicy = { denyPrivate: boolean };

const PRIVATE = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
] as const) {
  PRIVATE.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
] as const) {
  PRIVATE.addSubnet(network, prefix, 'ipv6');
}

/** True for an address (IPv4, IPv6 or IPv4-mapped IPv6) in a private, loopback, link-local or reserved range. */
export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return PRIVATE.check(mapped[1]!, 'ipv4');
  const family = isIP(address);
  if (family === 4) return PRIVATE.check(address, 'ipv4');
  if (family === 6) return PRIVATE.check(address, 'ipv6');
  return false;
}

let policy: DestinationPolicy = { denyPrivate: false };

/** Sets the process-wide policy (from the command line or the environment, at start-up). */
export function setDestinationPolicy(next: DestinationPolicy): void {
  policy = { ...next };
}

export function destinationPolicy(): DestinationPolicy {
  return policy;
}

/** The environment variable that turns the deny list on ("true" or "1"). */
export const DENY_PRIVATE_DESTINATIONS_ENV = 'ORACLE_NODE_DENY_PRIVATE_API_DESTINATIONS';

export function destinationPolicyFromEnvironment(env: Record<string, string | undefined>): DestinationPolicy {
  const value = (env[DENY_PRIVATE_DESTINATIONS_ENV] ?? '').trim().toLowerCase();
  return { denyPrivate: value === 'true' || value === '1' };
}
