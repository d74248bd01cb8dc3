// The webhook's own certificate authority and serving certificate: ECDSA P-256 keys from node:crypto and X.509
// certificates DER-encoded here (node:crypto parses certificates but cannot issue them, and a few DER helpers are
// smaller than a dependency). Pure functions of their inputs and the clock: the Secret and the rotation policy live
// in certificate-store.ts.
import {
  createHash,
  createPrivateKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
  sign,
  X509Certificate,
} from 'node:crypto';
import { isIP } from 'node:net';

// ---------------------------------------------------------------------------------------------------------------
// DER

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v >>= 8) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

const tlv = (tag: number, ...content: Buffer[]): Buffer => {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), length(body.length), body]);
};
const sequence = (...items: Buffer[]) => tlv(0x30, ...items);
const set = (...items: Buffer[]) => tlv(0x31, ...items);
const explicit = (n: number, item: Buffer) => tlv(0xa0 + n, item);
const octetString = (content: Buffer) => tlv(0x04, content);
const bitString = (content: Buffer) => tlv(0x03, Buffer.from([0]), content);
const utf8 = (text: string) => tlv(0x0c, Buffer.from(text, 'utf8'));
const boolean = (value: boolean) => tlv(0x01, Buffer.from([value ? 0xff : 0]));

/** A positive INTEGER from big-endian bytes (leading zero added when the top bit is set). */
function unsignedInteger(bytes: Buffer): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const trimmed = bytes.subarray(start);
  return tlv(0x02, (trimmed[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed);
}

function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const bytes: number[] = [40 * parts[0]! + parts[1]!];
  for (const part of parts.slice(2)) {
    const chunk: number[] = [part & 0x7f];
    for (let v = part >>> 7; v > 0; v >>>= 7) chunk.unshift((v & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** UTCTime until 2049, GeneralizedTime after (RFC 5280 4.1.2.5). */
function time(date: Date): Buffer {
  const iso = date.toISOString().replace(/[-:T]/g, '').slice(0, 14); // YYYYMMDDHHMMSS
  return date.getUTCFullYear() < 2050
    ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`, 'ascii'))
    : tlv(0x18, Buffer.from(`${iso}Z`, 'ascii'));
}

const OID = {
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  authorityKeyIdentifier: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
};

const name = (commonName: string) =>
  sequence(
    set(sequence(oid(OID.organization), utf8('oracle-node-operator'))),
    set(sequence(oid(OID.commonName), utf8(commonName))),
  );

const extension = (id: string, critical: boolean, value: Buffer) =>
  sequence(oid(id), ...(critical ? [boolean(true)] : []), octetString(value));

/** keyUsage bits, most significant first: digitalSignature(0) ... keyCertSign(5), cRLSign(6). */
function keyUsage(bits: number[]): Buffer {
  let value = 0;
  for (const bit of bits) value |= 0x80 >> bit;
  const unused = value === 0 ? 0 : Math.min(...bits.map((bit) => 7 - bit));
  return tlv(0x03, Buffer.from([unused, value]));
}

function subjectAltNames(dnsNames: string[], ipAddresses: string[]): Buffer {
  const entries = dnsNames.map((dns) => tlv(0x82, Buffer.from(dns, 'ascii')));
  for (const ip of ipAddresses) {
    const bytes =
      isIP(ip) === 4
        ? Buffer.from(ip.split('.').map(Number))
        : Buffer.from(expandIpv6(ip).flatMap((group) => [group >> 8, group & 0xff]));
    entries.push(tlv(0x87, bytes));
  }
  return sequence(...entries);
}

/** An IP address as X509Certificate prints it in subjectAltName (IPv6 in full, lower-case, no zero compression). */
export function canonicalIp(ip: string): string {
  return isIP(ip) === 6
    ? expandIpv6(ip.toLowerCase())
        .map((group) => group.toString(16))
        .join(':')
    : ip;
}

function expandIpv6(ip: string): number[] {
  const [head = '', tail = ''] = ip.split('::');
  const parse = (part: string) => (part ? part.split(':').map((group) => Number.parseInt(group, 16)) : []);
  const left = parse(head);
  const right = ip.includes('::') ? parse(tail) : [];
  return [...left, ...new Array(8 - left.length - right.length).fill(0), ...right];
}

const keyId = (publicKey: KeyObject) =>
  createHash('sha1')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest();

// ---------------------------------------------------------------------------------------------------------------
// certificates

export type KeyPairPem = { certPem: string; keyPem: string };

export type CertificateRequest = {
  commonName: string;
  notBefore: Date;
  notAfter: Date;
  /** A CA (keyCertSign) or a TLS server certificate (serverAuth, with subjectAltNames). */
  isCa: boolean;
  dnsNames?: string[];
  ipAddresses?: string[];
};

function toPem(label: string, der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

function certificateDer(
  request: CertificateRequest,
  subjectKey: KeyObject,
  issuer: { commonName: string; key: KeyObject; publicKey: KeyObject },
): Buffer {
  const extensions = [
    extension(OID.basicConstraints, true, sequence(...(request.isCa ? [boolean(true)] : []))),
    extension(OID.keyUsage, true, request.isCa ? keyUsage([0, 5, 6]) : keyUsage([0])),
    extension(OID.subjectKeyIdentifier, false, octetString(keyId(subjectKey))),
    extension(OID.authorityKeyIdentifier, false, sequence(tlv(0x80, keyId(issuer.publicKey)))),
  ];
  if (!request.isCa) {
    extensions.push(extension(OID.extKeyUsage, false, sequence(oid(OID.serverAuth))));
    extensions.push(
      extension(OID.subjectAltName, false, subjectAltNames(request.dnsNames ?? [], request.ipAddresses ?? [])),
    );
  }
  const algorithm = sequence(oid(OID.ecdsaWithSha256));
  const serial = randomBytes(16);
  serial[0] = serial[0]! & 0x7f;
  const tbs = sequence(
    explicit(0, tlv(0x02, Buffer.from([2]))), // v3
    unsignedInteger(serial),
    algorithm,
    name(issuer.commonName),
    sequence(time(request.notBefore), time(request.notAfter)),
    name(request.commonName),
    subjectKey.export({ type: 'spki', format: 'der' }),
    explicit(3, sequence(...extensions)),
  );
  const signature = sign('sha256', tbs, { key: issuer.key, dsaEncoding: 'der' });
  return sequence(tbs, algorithm, bitString(signature));
}

function newKeyPair(): { privateKey: KeyObject; publicKey: KeyObject } {
  return generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
}

/** A self-signed CA. */
export function createCertificateAuthority(request: Omit<CertificateRequest, 'isCa'>): KeyPairPem {
  const { privateKey, publicKey } = newKeyPair();
  const der = certificateDer({ ...request, isCa: true }, publicKey, {
    commonName: request.commonName,
    key: privateKey,
    publicKey,
  });
  return { certPem: toPem('CERTIFICATE', der), keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
}

/** A TLS server certificate signed by `ca`. */
export function issueServingCertificate(ca: KeyPairPem, request: Omit<CertificateRequest, 'isCa'>): KeyPairPem {
  const { privateKey, publicKey } = newKeyPair();
  const caCert = new X509Certificate(ca.certPem);
  const der = certificateDer({ ...request, isCa: false }, publicKey, {
    commonName: commonNameOf(caCert),
    key: createPrivateKey(ca.keyPem),
    publicKey: caCert.publicKey,
  });
  return { certPem: toPem('CERTIFICATE', der), keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
}

function commonNameOf(certificate: X509Certificate): string {
  return /CN=([^\n]+)/.exec(certificate.subject)?.[1] ?? 'oracle-node-operator';
}

/** The PEM blocks of a bundle, in order. */
export function splitPemBundle(bundle: string): string[] {
  return bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g) ?? [];
}

/** Parses a PEM certificate; undefined when it is not one. */
export function parseCertificate(pem: string | undefined): X509Certificate | undefined {
  if (!pem) return undefined;
  try {
    return new X509Certificate(pem);
  } catch {
    return undefined;
  }
}

/** The subjectAltNames of a certificate as the names the request asked for. */
export function alternativeNames(certificate: X509Certificate): { dnsNames: string[]; ipAddresses: string[] } {
  const dnsNames: string[] = [];
  const ipAddresses: string[] = [];
  for (const entry of (certificate.subjectAltName ?? '').split(', ')) {
    if (entry.startsWith('DNS:')) dnsNames.push(entry.slice(4));
    else if (entry.startsWith('IP Address:')) ipAddresses.push(entry.slice(11).toLowerCase());
  }
  return { dnsNames, ipAddresses };
}
