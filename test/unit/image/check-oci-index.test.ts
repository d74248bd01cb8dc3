// The multi-arch image check on small hand-made OCI layouts: a right one passes; a config that claims another
// architecture, a missing layer, and an amd64 node inside an arm64 image are each reported.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { checkLayout, ELF_MACHINE, tarEntry } from '../../../image/check-oci-index.js';

/** A one-file ustar archive (what the check reads: name, size, type, content). */
function tarOf(name: string, content: Buffer): Buffer {
  const header = Buffer.alloc(512);
  header.write(name, 0);
  header.write(`${content.length.toString(8).padStart(11, '0')}\0`, 124);
  header.write('0', 156);
  const padded = Buffer.alloc(Math.ceil(content.length / 512) * 512);
  content.copy(padded);
  return Buffer.concat([header, padded, Buffer.alloc(1024)]);
}

function elf(machine: number): Buffer {
  const b = Buffer.alloc(64);
  b.write('\x7fELF', 0, 'latin1');
  b.writeUInt16LE(machine, 18);
  return b;
}

const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

type Options = { configArch?: Record<string, string>; nodeMachine?: Record<string, number> };

/** Writes a two-platform layout into dir; returns the digest of each platform's layer blob. */
function writeLayout(dir: string, options: Options = {}): Record<string, string> {
  const blobs = join(dir, 'blobs/sha256');
  mkdirSync(blobs, { recursive: true });
  const put = (content: Buffer, mediaType: string) => {
    const digest = sha(content);
    writeFileSync(join(blobs, digest.slice(7)), content);
    return { mediaType, digest, size: content.length };
  };
  const layers: Record<string, string> = {};
  const manifests = ['amd64', 'arm64'].map((arch) => {
    const tar = tarOf('usr/local/bin/node', elf(options.nodeMachine?.[arch] ?? ELF_MACHINE[arch]!));
    const layer = put(gzipSync(tar), 'application/vnd.oci.image.layer.v1.tar+gzip');
    layers[arch] = layer.digest;
    const config = put(
      Buffer.from(
        JSON.stringify({
          architecture: options.configArch?.[arch] ?? arch,
          os: 'linux',
          rootfs: { type: 'layers', diff_ids: [sha(tar)] },
        }),
      ),
      'application/vnd.oci.image.config.v1+json',
    );
    const manifest = put(
      Buffer.from(JSON.stringify({ schemaVersion: 2, config, layers: [layer] })),
      'application/vnd.oci.image.manifest.v1+json',
    );
    return { ...manifest, platform: { architecture: arch, os: 'linux' } };
  });
  const index = put(
    Buffer.from(JSON.stringify({ schemaVersion: 2, manifests })),
    'application/vnd.oci.image.index.v1+json',
  );
  writeFileSync(join(dir, 'index.json'), JSON.stringify({ schemaVersion: 2, manifests: [index] }));
  return layers;
}

describe('image/check-oci-index', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'oci-check-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads a tar entry', () => {
    expect(tarEntry(tarOf('a/b', Buffer.from('hi')), 'a/b')?.toString()).to.equal('hi');
    expect(tarEntry(tarOf('a/b', Buffer.from('hi')), 'a/c')).to.equal(undefined);
  });

  it('passes a layout whose index, manifests, configs and node binaries agree', () => {
    writeLayout(dir);
    const summary = checkLayout(dir, ['amd64', 'arm64']);
    expect(summary.map((s) => [s.architecture, s.nodeMachine])).to.deep.equal([
      ['amd64', 0x3e],
      ['arm64', 0xb7],
    ]);
  });

  it('reports a config that claims another architecture than its index entry', () => {
    writeLayout(dir, { configArch: { arm64: 'amd64' } });
    expect(() => checkLayout(dir, ['amd64', 'arm64'])).to.throw('arm64: the config says architecture amd64');
  });

  it('reports an amd64 node inside the arm64 image', () => {
    writeLayout(dir, { nodeMachine: { arm64: 0x3e } });
    expect(() => checkLayout(dir, ['amd64', 'arm64'])).to.throw('arm64: usr/local/bin/node is ELF machine 0x3e');
  });

  it('reports a missing layer blob and a missing platform', () => {
    const layers = writeLayout(dir);
    unlinkSync(join(dir, 'blobs/sha256', layers['arm64']!.slice(7)));
    expect(() => checkLayout(dir, ['amd64', 'arm64'])).to.throw(/arm64 layer 0: blob sha256:[0-9a-f]+ is missing/);
    expect(() => checkLayout(dir, ['amd64', 'arm64', 'riscv64'])).to.throw('expected amd64, arm64, riscv64');
  });
});
