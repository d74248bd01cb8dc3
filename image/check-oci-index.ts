// Reads a multi-arch OCI image layout back, as a registry or a container runtime would, without running anything:
// index.json -> the image index -> one manifest per platform -> its config and layers. Every blob must be present
// with the digest and size its descriptor names, each config must say the architecture its index entry claims,
// and the Node.js binary in the image must be an ELF for that CPU (so an arm64 image holds an arm64 node).
//   node --import tsx image/check-oci-index.ts <unpacked layout dir> <arch>...     (make image-check)
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';

type Descriptor = {
  mediaType: string;
  digest: string;
  size: number;
  platform?: { architecture: string; os: string };
  annotations?: Record<string, string>;
};
type Index = { schemaVersion: number; mediaType?: string; manifests: Descriptor[] };
type Manifest = { mediaType: string; config: Descriptor; layers: Descriptor[] };
type Config = { architecture: string; os: string; rootfs: { diff_ids: string[] } };

const INDEX = 'application/vnd.oci.image.index.v1+json';
const MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
/** ELF e_machine of each architecture this project builds. */
export const ELF_MACHINE: Record<string, number> = { amd64: 0x3e, arm64: 0xb7 };

export type ImageSummary = { architecture: string; manifest: string; layers: number; nodeMachine: number };

/** Reads one tar entry's content from an uncompressed tar (ustar/pax; small layers only need this much). */
export function tarEntry(tar: Buffer, wanted: string): Buffer | undefined {
  let offset = 0;
  let longName: string | undefined;
  while (offset + 512 <= tar.length) {
    const header = tar.subarray(offset, offset + 512);
    if (header.every((b) => b === 0)) return undefined;
    const field = (start: number, length: number) =>
      header
        .subarray(start, start + length)
        .toString('utf8')
        .replace(/\0.*$/s, '');
    const size = Number.parseInt(field(124, 12).trim() || '0', 8);
    const type = field(156, 1);
    const prefix = field(345, 155);
    const name = longName ?? (prefix ? `${prefix}/${field(0, 100)}` : field(0, 100));
    longName = undefined;
    const body = tar.subarray(offset + 512, offset + 512 + size);
    if (type === 'x') {
      const path = /\d+ path=([^\n]*)\n/.exec(body.toString('utf8'));
      if (path) longName = path[1];
    } else if (name.replace(/^\.\//, '') === wanted && (type === '0' || type === '')) return Buffer.from(body);
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  return undefined;
}

export function checkLayout(dir: string, expected: string[]): ImageSummary[] {
  const problems: string[] = [];
  const blob = (d: Descriptor, what: string): Buffer | undefined => {
    const [algorithm, hex] = d.digest.split(':');
    const path = join(dir, 'blobs', algorithm ?? '', hex ?? '');
    if (!existsSync(path)) {
      problems.push(`${what}: blob ${d.digest} is missing`);
      return undefined;
    }
    if (statSync(path).size !== d.size)
      problems.push(`${what}: blob ${d.digest} has ${statSync(path).size} bytes, not ${d.size}`);
    const content = readFileSync(path);
    const actual = `sha256:${createHash('sha256').update(content).digest('hex')}`;
    if (actual !== d.digest) problems.push(`${what}: blob ${d.digest} hashes to ${actual}`);
    return content;
  };

  const top = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8')) as Index;
  const entry = top.manifests.find((m) => m.mediaType === INDEX);
  if (!entry) throw new Error('index.json names no image index: not a multi-arch layout');
  const indexBlob = blob(entry, 'image index');
  if (!indexBlob) throw new Error(problems.join('\n'));
  const index = JSON.parse(indexBlob.toString('utf8')) as Index;
  const summaries: ImageSummary[] = [];
  const architectures = index.manifests.map((m) => m.platform?.architecture ?? '?');
  if ([...architectures].sort().join(',') !== [...expected].sort().join(','))
    problems.push(`the index lists ${architectures.join(', ')}, expected ${expected.join(', ')}`);

  for (const descriptor of index.manifests) {
    const arch = descriptor.platform?.architecture ?? '?';
    if (descriptor.mediaType !== MANIFEST) problems.push(`${arch}: ${descriptor.mediaType} is not an image manifest`);
    if (descriptor.platform?.os !== 'linux') problems.push(`${arch}: os is ${descriptor.platform?.os}, not linux`);
    const manifestBlob = blob(descriptor, `${arch} manifest`);
    if (!manifestBlob) continue;
    const manifest = JSON.parse(manifestBlob.toString('utf8')) as Manifest;
    const configBlob = blob(manifest.config, `${arch} config`);
    if (!configBlob) continue;
    const config = JSON.parse(configBlob.toString('utf8')) as Config;
    if (config.architecture !== arch) problems.push(`${arch}: the config says architecture ${config.architecture}`);
    if (config.os !== 'linux') problems.push(`${arch}: the config says os ${config.os}`);
    if (config.rootfs.diff_ids.length !== manifest.layers.length)
      problems.push(`${arch}: ${manifest.layers.length} layers but ${config.rootfs.diff_ids.length} diff_ids`);
    let nodeMachine = -1;
    manifest.layers.forEach((layer, i) => {
      const compressed = blob(layer, `${arch} layer ${i}`);
      if (!compressed) return;
      const tar = gunzipSync(compressed);
      const diffId = `sha256:${createHash('sha256').update(tar).digest('hex')}`;
      if (diffId !== config.rootfs.diff_ids[i])
        problems.push(`${arch} layer ${i}: diff_id ${diffId} is not the config's`);
      const node = tarEntry(tar, 'usr/local/bin/node');
      if (node) nodeMachine = node.readUInt16LE(18);
    });
    if (nodeMachine !== ELF_MACHINE[arch])
      problems.push(
        `${arch}: usr/local/bin/node is ELF machine 0x${nodeMachine.toString(16)}, not 0x${ELF_MACHINE[arch]?.toString(16)}`,
      );
    summaries.push({ architecture: arch, manifest: descriptor.digest, layers: manifest.layers.length, nodeMachine });
  }
  if (problems.length > 0) throw new Error(problems.join('\n'));
  return summaries;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [dir, ...archs] = process.argv.slice(2);
  if (!dir || archs.length === 0) {
    console.error('usage: check-oci-index.ts <layout dir> <arch>...');
    process.exit(2);
  }
  try {
    for (const s of checkLayout(dir, archs))
      console.log(
        `image: linux/${s.architecture} ${s.manifest}: ${s.layers} layers present, node is ELF 0x${s.nodeMachine.toString(16)}`,
      );
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
}
