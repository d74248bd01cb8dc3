// secp256k1 signing side by side: what the gateways and the feed sign with (libsecp256k1, native where the platform
// has a build of the `secp256k1` package, else compiled to WebAssembly by tiny-secp256k1: src/protocol/secp256k1.ts,
// behind src/protocol/message-signer.ts fastMessageSigner), what the wallets and fulfilments sign with (ethers
// 6 SigningKey, which is @noble/curves underneath), and the other candidates installed here: @noble/curves called
// directly, the same curve with RFC 6979's HMAC-DRBG on node:crypto's native HMAC, and elliptic (ethers 5's,
// canonical low-s). Two kinds of rows: a 32-byte digest signed (the curve alone), and a 32-byte message signed with
// EIP-191 (hash of the prefixed message, then the curve: what the signed-data gateway does per answer).
// Every candidate must give byte-identical signatures (RFC 6979 deterministic nonces, low s, v) on every input
// before it is timed. Interleaved rounds, median signatures per second of CPU time per candidate, one core.
// Writes the "Signing (secp256k1)" section of docs/benchmarks.md.
//   node --import tsx bench/signing.bench.ts [--rounds 5] [--count 2000] [--no-write]
import { createHmac, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { weierstrass } from '@noble/curves/abstract/weierstrass';
import { secp256k1 } from '@noble/curves/secp256k1';
import { sha256 } from '@noble/hashes/sha256';
import { getBytes, keccak256, SigningKey, Wallet } from 'ethers';
import { fastMessageSigner } from '../src/protocol/message-signer.js';
import { loadSecp256k1, type Secp256k1 } from '../src/protocol/secp256k1.js';
import { loadAverage, machine, median, table, writeSection } from './report.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    count: { type: 'string', default: '2000' },
    'no-write': { type: 'boolean', default: false },
  },
});
const ROUNDS = Number(args.rounds);
const COUNT = Number(args.count);

const require = createRequire(import.meta.url);
const { ec: EllipticCurve } = require('elliptic') as {
  ec: new (
    name: string,
  ) => {
    keyFromPrivate(
      hex: string,
      enc: 'hex',
    ): {
      sign(
        digest: string,
        options: { canonical: boolean },
      ): {
        r: { toString(base: number, length: number): string };
        s: { toString(base: number, length: number): string };
        recoveryParam: number | null;
      };
    };
  };
};

const PRIVATE_KEY = `0x${'ab'.repeat(32)}`;
const privateBytes = Buffer.from(PRIVATE_KEY.slice(2), 'hex');
const signingKey = new SigningKey(PRIVATE_KEY);
const wallet = new Wallet(PRIVATE_KEY);
const fastSigner = fastMessageSigner(wallet);
const ellipticKey = new EllipticCurve('secp256k1').keyFromPrivate(PRIVATE_KEY.slice(2), 'hex');
const nativeHmacCurve = weierstrass({
  ...secp256k1.CURVE,
  hash: sha256,
  hmac: (key: Uint8Array, ...messages: Uint8Array[]) => {
    const hmac = createHmac('sha256', key);
    for (const message of messages) hmac.update(message);
    return new Uint8Array(hmac.digest());
  },
  randomBytes: (length?: number) => new Uint8Array(randomBytes(length ?? 32)),
});

const hex64 = (value: bigint) => value.toString(16).padStart(64, '0');
const v = (recovery: number | null | undefined) => (recovery ? '1c' : '1b');

type Candidate = { kind: 'digest' | 'message'; sign: (input: Uint8Array) => string };

/** One libsecp256k1 backend as a candidate; none where the platform has no native build. */
function libsecp256k1Candidate(name: string, backend: Secp256k1['backend']): Record<string, Candidate> {
  const library = loadSecp256k1(backend);
  if (!library) return {};
  return {
    [name]: {
      kind: 'digest',
      sign: (digest) => {
        const { signature, recoveryId } = library.signRecoverable(digest, privateBytes);
        return `0x${Buffer.from(signature).toString('hex')}${v(recoveryId)}`;
      },
    },
  };
}

const ETHERS_DIGEST = 'ethers 6 SigningKey.sign (the wallets and fulfilments)';
const ETHERS_MESSAGE = 'ethers 6 Wallet.signMessageSync';
const candidates: Record<string, Candidate> = {
  [ETHERS_DIGEST]: { kind: 'digest', sign: (digest) => signingKey.sign(digest).serialized },
  ...libsecp256k1Candidate('libsecp256k1 (secp256k1 5.0.2, native; the gateways and the feed)', 'native'),
  ...libsecp256k1Candidate('libsecp256k1 (tiny-secp256k1 2.2.4, WebAssembly; where no native build)', 'webassembly'),
  '@noble/curves secp256k1.sign': {
    kind: 'digest',
    sign: (digest) => {
      const s = secp256k1.sign(digest, privateBytes, { lowS: true });
      return `0x${hex64(s.r)}${hex64(s.s)}${v(s.recovery)}`;
    },
  },
  '@noble/curves, native HMAC-DRBG': {
    kind: 'digest',
    sign: (digest) => {
      const s = nativeHmacCurve.sign(digest, privateBytes, { lowS: true });
      return `0x${hex64(s.r)}${hex64(s.s)}${v(s.recovery)}`;
    },
  },
  'elliptic (canonical)': {
    kind: 'digest',
    sign: (digest) => {
      const s = ellipticKey.sign(Buffer.from(digest).toString('hex'), { canonical: true });
      return `0x${s.r.toString(16, 64)}${s.s.toString(16, 64)}${v(s.recoveryParam)}`;
    },
  },
  [ETHERS_MESSAGE]: { kind: 'message', sign: (message) => wallet.signMessageSync(message) },
  'fastMessageSigner.signMessageSync (keccak.ts + native libsecp256k1; gateways, feed)': {
    kind: 'message',
    sign: (message) => fastSigner.signMessageSync(message),
  },
};

function main(): void {
  // 32-byte inputs: keccak256 digests of distinct texts (the gateways sign a 32-byte hash per answer).
  const inputs = Array.from({ length: COUNT }, (_, i) => getBytes(keccak256(Buffer.from(`message ${i}`))));
  const references = {
    digest: inputs.map(candidates[ETHERS_DIGEST]!.sign),
    message: inputs.map(candidates[ETHERS_MESSAGE]!.sign),
  };
  const identical: Record<string, boolean> = {};
  for (const [name, { kind, sign }] of Object.entries(candidates)) {
    identical[name] = inputs.every((input, i) => sign(input) === references[kind][i]);
  }
  const rates: Record<string, number[]> = Object.fromEntries(Object.keys(candidates).map((name) => [name, []]));
  const loadBefore = loadAverage();
  for (let round = 0; round < ROUNDS; round++) {
    const names = Object.keys(candidates);
    if (round % 2) names.reverse();
    for (const name of names) {
      const { sign } = candidates[name]!;
      // CPU time of this (single-threaded) process, not wall time: on a shared machine the wall clock also counts
      // the time other processes held the core.
      const start = process.cpuUsage();
      for (const input of inputs) sign(input);
      const used = process.cpuUsage(start);
      rates[name]!.push((inputs.length / (used.user + used.system)) * 1e6);
    }
  }
  const loadAfter = loadAverage();
  const baseline = { digest: median(rates[ETHERS_DIGEST]!), message: median(rates[ETHERS_MESSAGE]!) };
  const rows = Object.entries(candidates).map(([name, { kind }]) => {
    const rate = median(rates[name]!);
    return [
      kind === 'digest' ? '32-byte digest' : 'EIP-191, 32-byte message',
      name,
      identical[name] ? 'yes' : '**no**',
      Math.round(rate).toLocaleString('en-US'),
      `${(rate / baseline[kind]).toFixed(2)}x`,
    ];
  });
  for (const row of rows) console.log(row.join(' | '));
  if (args['no-write']) return;
  writeSection('Signing (secp256k1)', [
    `Machine: ${machine()}, shared with other engineers' builds and tests (1-minute load average ${loadBefore.split(' / ')[0]} before, ${loadAfter.split(' / ')[0]} after). ${new Date().toISOString().slice(0, 10)}.`,
    `Command: \`node --import tsx bench/signing.bench.ts --rounds ${ROUNDS} --count ${COUNT}\` (run by \`make bench\`).`,
    '',
    `One core, ${COUNT.toLocaleString('en-US')} distinct 32-byte inputs signed per round by each candidate, ${ROUNDS} interleaved rounds (the order reversing each round); ` +
      'median signatures per second of CPU time (process.cpuUsage, so that time other processes held the core does not count). "32-byte digest": the curve alone (RFC 6979 nonce, scalar multiplication, low s, recovery id). ' +
      '"EIP-191": what the signed-data gateway does per answer, the hash of the prefixed message and then the curve. ' +
      'A candidate counts only if its 65-byte signatures (r, s, v) are byte-identical to ethers 6 on every input.',
    '',
    ...table(
      ['input', 'candidate', 'byte-identical', 'signatures per CPU-second (median)', 'vs ethers 6'],
      [false, false, false, true, true],
      rows,
    ),
    '',
    'The gateways and the feed sign with libsecp256k1 (`src/protocol/secp256k1.ts`): the native library of the `secp256k1` ' +
      'package where it publishes a build for the platform (linux-x64 glibc and musl, darwin-arm64, win32-x64: a prebuilt N-API ' +
      'addon, no compiler, no install script), else the same C library compiled to WebAssembly (tiny-secp256k1), ' +
      'behind `fastMessageSigner` (`src/protocol/message-signer.ts`, loaded when the first signer is made), which hashes ' +
      "the EIP-191 message with keccak.ts's WebAssembly sponge instead of ethers' keccak. The bytes are ethers': the property tests in " +
      '`test/unit/protocol/message-signer.test.ts` and `secp256k1.test.ts` compare them over random keys and messages, and the reference ' +
      "fulfilment vector. @noble/curves directly saves only ethers' wrapping; noble with node's HMAC pays more per " +
      "call than it saves; elliptic is slower. Node's own crypto cannot stand in: it has no secp256k1 signing of a " +
      'prehashed digest with RFC 6979 nonces (nor keccak). The wallets that sign transactions (fulfilments, sponsor ' +
      'wallets) stay on ethers.',
  ]);
}

main();
