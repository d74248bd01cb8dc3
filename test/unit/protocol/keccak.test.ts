// The WebAssembly keccak256 against js-sha3: any length (block boundaries, several blocks, memory growth), and
// the js-sha3 answer where WebAssembly is missing (node --jitless).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import fc from 'fast-check';
import jsSha3 from 'js-sha3';
import { keccak256Bytes, keccak256Hex } from '../../../src/protocol/keccak.js';

describe('keccak256Hex', () => {
  it('hashes the empty input and "abc" to the known digests', () => {
    expect(keccak256Hex(new Uint8Array(0))).to.equal(
      'c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470',
    );
    expect(keccak256Hex(Buffer.from('abc'))).to.equal(
      '4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45',
    );
  });

  it('answers as js-sha3 for every length around the 136-byte blocks', () => {
    for (let length = 0; length <= 3 * 136 + 2; length++) {
      const data = Uint8Array.from({ length }, (_, i) => (i * 151 + length) & 0xff);
      expect(keccak256Hex(data), `length ${length}`).to.equal(jsSha3.keccak256(data));
    }
  });

  it('answers as js-sha3 for random inputs, views into larger buffers and inputs beyond its first memory page', () => {
    const input = fc.oneof(
      fc.uint8Array({ maxLength: 1000 }),
      fc.uint8Array({ minLength: 1, maxLength: 400 }).map((bytes) => Buffer.from(bytes).subarray(1)),
      fc.integer({ min: 60_000, max: 200_000 }).map((length) => new Uint8Array(length).fill(length & 0xff)),
    );
    fc.assert(
      fc.property(input, (data) => {
        expect(keccak256Hex(data)).to.equal(jsSha3.keccak256(data));
      }),
      { numRuns: 300 },
    );
  });

  it('gives the same hash as bytes, in a Buffer of its own that later hashes leave alone', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), fc.uint8Array({ maxLength: 600 }), (first, second) => {
        const digest = keccak256Bytes(first);
        const expected = jsSha3.keccak256(first);
        expect(digest.toString('hex')).to.equal(expected);
        expect(keccak256Bytes(second).toString('hex')).to.equal(jsSha3.keccak256(second));
        // The sponge's memory is reused by every hash: the first answer must not be a view into it.
        expect(digest.toString('hex')).to.equal(expected);
      }),
      { numRuns: 200 },
    );
  });

  it('falls back to js-sha3 without WebAssembly (node --jitless)', () => {
    const module = fileURLToPath(new URL('../../../src/protocol/keccak.ts', import.meta.url));
    const script = `import { keccak256Bytes, keccak256Hex } from ${JSON.stringify(module)};
console.log(typeof WebAssembly, keccak256Hex(Buffer.from('abc')), keccak256Bytes(Buffer.from('abc')).toString('hex'));`;
    const result = spawnSync(process.execPath, ['--jitless', '--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(result.stdout.trim(), result.stderr).to.equal(
      'undefined 4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45 4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45',
    );
  });
});
