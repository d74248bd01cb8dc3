import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { SigningKey } from 'ethers';
import fc from 'fast-check';
import { loadSecp256k1, type Secp256k1, secp256k1 } from '../../../src/protocol/secp256k1.js';
import { recordLoadedModules } from '../../support/loaded-packages.js';

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const hex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString('hex')}`;
const scalarBytes = (value: bigint) => Buffer.from(value.toString(16).padStart(64, '0'), 'hex');

/** A valid private key (1 <= k < n), its edges included. */
const privateKey = fc
  .oneof(fc.bigInt({ min: 1n, max: N - 1n }), fc.constantFrom(1n, 2n, N - 1n, N - 2n, 2n ** 128n, 2n ** 255n))
  .map(scalarBytes);
const digest = fc.uint8Array({ minLength: 32, maxLength: 32 });

// The `secp256k1` package publishes its native build for these; everywhere else the WebAssembly one answers.
const PREBUILT = ['linux-x64', 'darwin-arm64', 'win32-x64'].includes(`${process.platform}-${process.arch}`);

describe('secp256k1 (libsecp256k1, native or WebAssembly)', () => {
  const native = loadSecp256k1('native');
  const webAssembly = loadSecp256k1('webassembly')!;
  const backends = [native, webAssembly].filter((backend): backend is Secp256k1 => backend !== undefined);

  it('signs and derives with the native library where the platform has a build', function () {
    // The reason to skip: no build of the native library is published for this platform (the WebAssembly one serves).
    if (!PREBUILT) this.skip();
    expect(native?.backend).to.equal('native');
    expect(secp256k1().backend).to.equal('native');
  });

  it('gives ethers’ signature (r, s low, recovery) for any key and digest, on every backend', () => {
    fc.assert(
      fc.property(privateKey, digest, (key, message) => {
        const expected = new SigningKey(hex(key)).sign(message);
        for (const backend of backends) {
          const { signature, recoveryId } = backend.signRecoverable(message, key);
          expect(hex(signature.subarray(0, 32)), backend.backend).to.equal(expected.r);
          expect(hex(signature.subarray(32, 64)), backend.backend).to.equal(expected.s);
          expect(recoveryId + 27, backend.backend).to.equal(expected.v);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('gives ethers’ public keys, compressed and not, on every backend', () => {
    fc.assert(
      fc.property(privateKey, (key) => {
        for (const backend of backends) {
          expect(hex(backend.publicKey(key, true)!), backend.backend).to.equal(SigningKey.computePublicKey(key, true));
          expect(hex(backend.publicKey(key, false)!), backend.backend).to.equal(
            SigningKey.computePublicKey(key, false),
          );
        }
      }),
      { numRuns: 200 },
    );
  });

  it('has no public key for what is not a scalar of the curve (0, n and above), and refuses to sign with it', () => {
    for (const backend of backends) {
      for (const invalid of [0n, N, N + 1n, 2n ** 256n - 1n]) {
        expect(backend.publicKey(scalarBytes(invalid), true), `${backend.backend} ${invalid}`).to.equal(undefined);
        expect(() => backend.signRecoverable(new Uint8Array(32), scalarBytes(invalid))).to.throw();
      }
    }
  });

  it('is the native library in a process that signs a feed value: no WebAssembly of its own', function () {
    // The reason to skip: no build of the native library is published for this platform (the WebAssembly one serves).
    if (!PREBUILT) this.skip();
    this.timeout(60_000);
    const recorder = recordLoadedModules();
    try {
      const signing = fileURLToPath(new URL('../../../src/feed/signing.ts', import.meta.url));
      const script = `const { feedSigner, signTemplateData } = await import(${JSON.stringify(signing)});
signTemplateData(feedSigner('test test test test test test test test test test test junk'), '0x${'11'.repeat(32)}', '0x${'22'.repeat(32)}', '1700000000', '0x${'00'.repeat(32)}');`;
      const result = spawnSync(
        process.execPath,
        ['--import', 'tsx', ...recorder.nodeArgs, '--input-type=module', '-e', script],
        { encoding: 'utf8', timeout: 60_000 },
      );
      expect(result.status, result.stderr).to.equal(0);
      const required = recorder.requiredFiles();
      expect(required.some((file) => /\/node_modules\/secp256k1\/(prebuilds|build)\/.+\.node$/.test(file))).to.equal(
        true,
      );
      expect(required.some((file) => file.includes('/node_modules/tiny-secp256k1/'))).to.equal(false);
    } finally {
      recorder.remove();
    }
  });
});
