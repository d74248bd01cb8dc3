// `oracle-node derive <what>`: the protocol's identifiers and wallets, byte-compatible with the reference
// (src/chain). Mnemonics come from --mnemonic, a secrets.env (-s), NODE_WALLET_MNEMONIC or AIRNODE_WALLET_MNEMONIC, or
// standard input, and are never printed.

import { errorMessage } from '../common/errors.js';
import { parseSecretsEnv } from '../config/secrets.js';
import { getAddress, InvalidAddressError } from '../protocol/address.js';
import { deriveEndpointId, deriveTemplateIdV0, deriveTemplateIdV1, isBytes32 } from '../protocol/ids.js';
import {
  deriveNodeAddress,
  deriveSponsorWallet,
  deriveSponsorWalletAddressFromXpub,
  deriveXpub,
  isValidMnemonic,
} from '../protocol/wallet.js';
import { type CliIo, parseCommandArgs, processIo, UsageError, usageError } from './args.js';
import type { Subcommand } from './subcommand.js';

const USAGE = `Usage: oracle-node derive <what> [options]

  endpoint-id <oisTitle> <endpointName>
  template-id --endpoint-id <bytes32> --parameters <hex> (--node-address <address> | --v1)
  node-address   [--mnemonic <words> | -s <secrets.env>]
  xpub           [--mnemonic <words> | -s <secrets.env>]
  sponsor-wallet --sponsor <address> [--protocol-id 1] [--mnemonic <words> | -s <secrets.env> | --xpub <xpub>]

The mnemonic is read from --mnemonic; else from -s <secrets.env>, its NODE_WALLET_MNEMONIC or
AIRNODE_WALLET_MNEMONIC (the name of a 0.15 secrets.env); else from the environment variable of either name;
else from standard input.`;

const HEX = /^0x([0-9a-fA-F]{2})*$/;

type Values = {
  'node-address'?: string | undefined;
  'endpoint-id'?: string | undefined;
  parameters?: string | undefined;
  v1?: boolean | undefined;
  mnemonic?: string | undefined;
  secrets?: string | undefined;
  xpub?: string | undefined;
  sponsor?: string | undefined;
  'protocol-id'?: string | undefined;
};

/** The names a mnemonic goes by: this project's, then the reference's (every 0.15 secrets.env). */
const MNEMONIC_NAMES = ['NODE_WALLET_MNEMONIC', 'AIRNODE_WALLET_MNEMONIC'] as const;

// Read synchronously, as validate reads its files: a one-shot command waits for the file anyway.
const { readFileSync } = process.getBuiltinModule('node:fs');

function mnemonicFromSecretsFile(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(`Cannot read -s ${path}: ${(error as NodeJS.ErrnoException).code ?? errorMessage(error)}`);
  }
  const { secrets } = parseSecretsEnv(text);
  const name = MNEMONIC_NAMES.find((n) => secrets[n]);
  if (!name) throw new UsageError(`${path} has neither ${MNEMONIC_NAMES.join(' nor ')}`);
  return secrets[name]!;
}

async function mnemonicFrom(values: Values, io: CliIo): Promise<string> {
  const fromEnvironment = MNEMONIC_NAMES.map((name) => io.env[name]).find((value) => value);
  const source =
    values.mnemonic ??
    (values.secrets === undefined ? undefined : mnemonicFromSecretsFile(values.secrets)) ??
    fromEnvironment ??
    (await io.readStdin());
  const mnemonic = source?.trim().split(/\s+/).join(' ');
  if (!mnemonic)
    throw new UsageError(
      `No mnemonic: pass --mnemonic or -s <secrets.env>, set ${MNEMONIC_NAMES.join(' or ')}, or pipe it to stdin`,
    );
  if (!isValidMnemonic(mnemonic)) throw new UsageError('The mnemonic is not a valid BIP-39 mnemonic');
  return mnemonic;
}

/** An address option: what is wrong with it named, a mistyped checksum above all (it would derive another wallet). */
function addressOption(values: Values, name: 'sponsor' | 'node-address'): string {
  const value = values[name];
  if (typeof value !== 'string') throw new UsageError(`Missing --${name}`);
  try {
    return getAddress(value);
  } catch (error) {
    if (error instanceof InvalidAddressError && error.reason === 'bad address checksum')
      throw new UsageError(
        `--${name} ${value}: its mixed-case EIP-55 checksum does not match, so it is probably mistyped (check it, or give it all in lowercase)`,
      );
    throw new UsageError(`--${name} must be an address: 0x followed by 40 hex digits`);
  }
}

function required(values: Values, name: keyof Values, check: (v: string) => boolean, what: string): string {
  const value = values[name];
  if (typeof value !== 'string') throw new UsageError(`Missing --${name}`);
  if (!check(value)) throw new UsageError(`--${name} must be ${what}`);
  return value;
}

async function derive(what: string | undefined, positionals: string[], values: Values, io: CliIo): Promise<string> {
  switch (what) {
    case 'endpoint-id': {
      if (positionals.length !== 2) throw new UsageError('endpoint-id takes <oisTitle> <endpointName>');
      return deriveEndpointId(positionals[0]!, positionals[1]!);
    }
    case 'template-id': {
      const endpointId = required(values, 'endpoint-id', isBytes32, '0x + 64 hex characters');
      const parameters = required(values, 'parameters', (v) => HEX.test(v), 'a 0x-prefixed hex string of even length');
      if (values.v1) return deriveTemplateIdV1(endpointId, parameters);
      const nodeAddress = addressOption(values, 'node-address');
      return deriveTemplateIdV0(nodeAddress, endpointId, parameters);
    }
    case 'node-address':
      return deriveNodeAddress(await mnemonicFrom(values, io));
    case 'xpub':
      return deriveXpub(await mnemonicFrom(values, io));
    case 'sponsor-wallet': {
      const sponsor = addressOption(values, 'sponsor');
      const protocolId = values['protocol-id'] ?? '1';
      if (!/^\d+$/.test(protocolId)) throw new UsageError('--protocol-id must be a non-negative integer');
      if (values.xpub !== undefined) {
        try {
          return deriveSponsorWalletAddressFromXpub(values.xpub, sponsor, protocolId);
        } catch {
          throw new UsageError('--xpub is not a valid extended public key');
        }
      }
      return deriveSponsorWallet(await mnemonicFrom(values, io), sponsor, protocolId).address;
    }
    default:
      throw new UsageError(what ? `Unknown derivation: ${what}` : 'Missing what to derive');
  }
}

export async function runDerive(argv: string[], io: CliIo = processIo): Promise<number> {
  const parsed = parseCommandArgs(
    argv,
    {
      'node-address': { type: 'string' },
      'endpoint-id': { type: 'string' },
      parameters: { type: 'string' },
      v1: { type: 'boolean' },
      mnemonic: { type: 'string' },
      secrets: { type: 'string', short: 's' },
      xpub: { type: 'string' },
      sponsor: { type: 'string' },
      'protocol-id': { type: 'string' },
    },
    USAGE,
    { allowPositionals: true, io },
  );
  if ('exitCode' in parsed) return parsed.exitCode;
  const { values, positionals } = parsed;
  const [what, ...rest] = positionals;
  try {
    io.stdout(`${await derive(what, rest, values, io)}\n`);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) return usageError(io, error.message, USAGE);
    io.stderr(`Error: ${errorMessage(error)}\n`);
    return 2;
  }
}

export const deriveCommand: Subcommand = {
  run: (argv) => runDerive(argv),
};
