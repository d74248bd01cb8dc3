// libsecp256k1 for the node key's signatures and public keys: the native library where the `secp256k1` package
// publishes a build for the platform (linux-x64 glibc and musl, darwin-arm64, win32-x64: its prebuilt N-API addon,
// no compiler and no install script needed), and the same C library compiled to WebAssembly (tiny-secp256k1) on every
// other platform. Both sign with RFC 6979 nonces and low s, so the bytes are the same; the native one signs in about a
// third of the time and needs no WebAssembly compile (docs/benchmarks.md, "Signing (secp256k1)").
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type * as TinySecp256k1 from 'tiny-secp256k1';

export type Secp256k1Backend = 'native' | 'webassembly';

export type Secp256k1 = {
  readonly backend: Secp256k1Backend;
  /** The 64-byte r ‖ s (low s) of a 32-byte digest and its recovery id (0 or 1; 2 and 3 never occur in practice). */
  signRecoverable(digest: Uint8Array, privateKey: Uint8Array): { signature: Uint8Array; recoveryId: number };
  /** The public key of a private key (33 or 65 bytes), or undefined where the key is not a valid scalar. */
  publicKey(privateKey: Uint8Array, compressed: boolean): Uint8Array | undefined;
};

/** The slice of the `secp256k1` package's API used here (its bindings entry, which never loads its JavaScript fallback). */
type NativeBindings = {
  ecdsaSign(digest: Uint8Array, privateKey: Uint8Array): { signature: Uint8Array; recid: number };
  publicKeyCreate(privateKey: Uint8Array, compressed: boolean): Uint8Array;
  privateKeyVerify(privateKey: Uint8Array): boolean;
  contextRandomize(seed: Uint8Array): void;
};

const require = createRequire(import.meta.url);

function nativeSecp256k1(): Secp256k1 | undefined {
  let bindings: NativeBindings;
  try {
    // Throws where no build matches the platform (node-gyp-build looks for build/Release, then prebuilds/).
    bindings = require('secp256k1/bindings') as NativeBindings;
  } catch {
    return undefined;
  }
  // Blinds the multiplications by the generator against timing and power side channels (libsecp256k1's advice for a
  // signing context; tiny-secp256k1 randomises its own). Signatures do not change: their nonces are RFC 6979's.
  bindings.contextRandomize(randomBytes(32));
  return {
    backend: 'native',
    signRecoverable(digest, privateKey) {
      const { signature, recid } = bindings.ecdsaSign(digest, privateKey);
      return { signature, recoveryId: recid };
    },
    publicKey(privateKey, compressed) {
      return bindings.privateKeyVerify(privateKey) ? bindings.publicKeyCreate(privateKey, compressed) : undefined;
    },
  };
}

function webAssemblySecp256k1(): Secp256k1 {
  const tiny = require('tiny-secp256k1') as typeof TinySecp256k1;
  return {
    backend: 'webassembly',
    signRecoverable: (digest, privateKey) => tiny.signRecoverable(digest, privateKey),
    publicKey: (privateKey, compressed) =>
      tiny.isPrivate(privateKey) ? (tiny.pointFromScalar(privateKey, compressed) ?? undefined) : undefined,
  };
}

/** A backend by name, for tests and benchmarks; undefined where the native library has no build for the platform. */
export function loadSecp256k1(backend: Secp256k1Backend): Secp256k1 | undefined {
  return backend === 'native' ? nativeSecp256k1() : webAssemblySecp256k1();
}

let chosen: Secp256k1 | undefined;

/**
 * The native library where it loads, else the WebAssembly one. Loaded at the first call, not at import: the HTTP-only
 * gateway, `validate` and the operator never sign.
 */
export function secp256k1(): Secp256k1 {
  chosen ??= nativeSecp256k1() ?? webAssemblySecp256k1();
  return chosen;
}
