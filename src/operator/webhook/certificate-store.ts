// The webhook's certificates in one Secret of the operator's namespace: `ca.crt` (the CA bundle: the current CA
// first, then a previous one while it is still valid), `ca.key`, `tls.crt`, `tls.key`. Every replica runs the same
// loop: read the Secret, and when something is missing or due for renewal, write the new set with the
// resourceVersion it read (create when absent). Only one replica's write can win; the others get 409, read the
// winner's Secret and serve that, so replicas starting together converge on one CA without a lock.
//
// Renewal is well before expiry and needs no restart: the server swaps its TLS context in place. A new CA is
// added to the bundle first and signs serving certificates only once it has been published for `caOverlapMs`, so
// an API server holding the old bundle never sees a certificate it cannot verify.
import { createPrivateKey as createPrivateKeyFrom, type X509Certificate } from 'node:crypto';
import type { Logger } from 'pino';
import { LABELS } from '../../contract/pods.js';
import { collectionPath, isConflict, isNotFound, objectPath, type RestClient } from '../../kube/index.js';
import { KINDS, MANAGED_BY } from '../resource.js';
import {
  alternativeNames,
  canonicalIp,
  createCertificateAuthority,
  issueServingCertificate,
  type KeyPairPem,
  parseCertificate,
  splitPemBundle,
} from './certificates.js';

const DAY = 86_400_000;

export type CertificatePolicy = {
  caValidityMs: number;
  caRenewBeforeMs: number;
  servingValidityMs: number;
  servingRenewBeforeMs: number;
  /** How long a new CA sits in the published bundle before it signs the serving certificate. */
  caOverlapMs: number;
};

/** CA one year (renewed 90 days before expiry), serving certificate 90 days (renewed 30 days before). */
export const DEFAULT_CERTIFICATE_POLICY: CertificatePolicy = {
  caValidityMs: 365 * DAY,
  caRenewBeforeMs: 90 * DAY,
  servingValidityMs: 90 * DAY,
  servingRenewBeforeMs: 30 * DAY,
  caOverlapMs: 5 * 60_000,
};

/** Certificates are valid from a minute in the past: the API server's clock may be a little behind ours. */
const BACKDATE_MS = 60_000;

export type ServingNames = { dnsNames: string[]; ipAddresses: string[] };

export type CertificateSet = {
  /** PEM bundle the API server trusts (current CA first). */
  caBundle: string;
  caKeyPem: string;
  certPem: string;
  keyPem: string;
};

export const SECRET_KEYS = { caBundle: 'ca.crt', caKey: 'ca.key', cert: 'tls.crt', key: 'tls.key' } as const;

export type CertificatePlan = { set: CertificateSet; changed: boolean; reasons: string[] };

const remaining = (certificate: X509Certificate, now: Date) => Date.parse(certificate.validTo) - now.getTime();

function sameNames(certificate: X509Certificate, names: ServingNames): boolean {
  const actual = alternativeNames(certificate);
  const wantedDns = [...names.dnsNames].sort();
  const wantedIps = names.ipAddresses.map(canonicalIp).sort();
  return (
    JSON.stringify([...actual.dnsNames].sort()) === JSON.stringify(wantedDns) &&
    JSON.stringify([...actual.ipAddresses].sort()) === JSON.stringify(wantedIps)
  );
}

/**
 * What the Secret should hold now, from what it holds (any field may be missing or garbage). Pure apart from key
 * generation: the same input and clock give the same decisions.
 */
export function planCertificates(
  current: Partial<CertificateSet>,
  names: ServingNames,
  policy: CertificatePolicy,
  now: Date,
): CertificatePlan {
  const reasons: string[] = [];
  const notBefore = new Date(now.getTime() - BACKDATE_MS);
  const bundle = splitPemBundle(current.caBundle ?? '')
    .map((pem) => ({ pem, certificate: parseCertificate(pem) }))
    .filter((entry): entry is { pem: string; certificate: X509Certificate } => entry.certificate !== undefined)
    .filter((entry) => remaining(entry.certificate, now) > 0);
  let ca: KeyPairPem | undefined;
  let caCertificate = bundle[0]?.certificate;
  const caKeyMatches =
    caCertificate !== undefined && current.caKeyPem !== undefined && keyMatches(caCertificate, current.caKeyPem);
  if (!caCertificate || !caKeyMatches) {
    reasons.push(caCertificate ? 'the CA key does not match the CA' : 'no valid CA');
  } else if (remaining(caCertificate, now) < policy.caRenewBeforeMs) {
    reasons.push('the CA is due for renewal');
  } else {
    ca = { certPem: bundle[0]!.pem, keyPem: current.caKeyPem! };
  }
  let caBundle = bundle.map((entry) => entry.pem);
  let caIsNew = false;
  if (!ca) {
    ca = createCertificateAuthority({
      commonName: 'oracle-node-operator-webhook-ca',
      notBefore,
      notAfter: new Date(now.getTime() + policy.caValidityMs),
    });
    caCertificate = parseCertificate(ca.certPem)!;
    // The previous CAs stay trusted while they are valid: serving certificates they signed are still in use.
    caBundle = [ca.certPem, ...caBundle];
    caIsNew = true;
  }
  caBundle = caBundle.slice(0, 3);

  const serving = parseCertificate(current.certPem);
  const signer = serving ? bundle.find((entry) => serving.verify(entry.certificate.publicKey)) : undefined;
  const caAgeMs = now.getTime() - (Date.parse(caCertificate!.validFrom) + BACKDATE_MS);
  let reissue: string | undefined;
  if (!serving || !current.keyPem || !keyMatches(serving, current.keyPem)) reissue = 'no valid serving certificate';
  else if (!sameNames(serving, names)) reissue = 'the serving names changed';
  else if (remaining(serving, now) < policy.servingRenewBeforeMs)
    reissue = 'the serving certificate is due for renewal';
  else if (!signer) reissue = 'the serving certificate is not signed by a trusted CA';
  else if (
    !caIsNew &&
    signer.certificate.fingerprint256 !== caCertificate!.fingerprint256 &&
    caAgeMs >= policy.caOverlapMs
  )
    reissue = 'the new CA has been published long enough to sign';
  let certPem = current.certPem ?? '';
  let keyPem = current.keyPem ?? '';
  if (reissue) {
    reasons.push(reissue);
    const caNotAfter = Date.parse(caCertificate!.validTo);
    const issued = issueServingCertificate(ca, {
      commonName: names.dnsNames[0] ?? names.ipAddresses[0] ?? 'oracle-node-operator-webhook',
      notBefore,
      notAfter: new Date(Math.min(now.getTime() + policy.servingValidityMs, caNotAfter)),
      dnsNames: names.dnsNames,
      ipAddresses: names.ipAddresses,
    });
    certPem = issued.certPem;
    keyPem = issued.keyPem;
  }
  const set = { caBundle: caBundle.join(''), caKeyPem: ca.keyPem, certPem, keyPem };
  const changed =
    set.caBundle !== current.caBundle ||
    set.caKeyPem !== current.caKeyPem ||
    set.certPem !== current.certPem ||
    set.keyPem !== current.keyPem;
  return { set, changed, reasons };
}

function keyMatches(certificate: X509Certificate, keyPem: string): boolean {
  try {
    return certificate.checkPrivateKey(createPrivateKeyFrom(keyPem));
  } catch {
    return false;
  }
}

/** When the serving certificate must be renewed next (for the next check's timing). */
export function nextRenewal(set: CertificateSet, policy: CertificatePolicy): Date | undefined {
  const serving = parseCertificate(set.certPem);
  return serving ? new Date(Date.parse(serving.validTo) - policy.servingRenewBeforeMs) : undefined;
}

type SecretObject = {
  apiVersion: 'v1';
  kind: 'Secret';
  type?: string;
  metadata: { name: string; namespace: string; resourceVersion?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
};

const decode = (value: string | undefined) => (value ? Buffer.from(value, 'base64').toString('utf8') : undefined);
const encode = (value: string) => Buffer.from(value, 'utf8').toString('base64');

export type CertificateSource = 'self' | 'external';

export type CertificateStoreOptions = {
  rest: RestClient;
  namespace: string;
  secretName: string;
  names: ServingNames;
  /** self: the operator issues and rotates; external: cert-manager (or anyone) writes the Secret, we only read. */
  source: CertificateSource;
  policy?: CertificatePolicy;
  logger: Logger;
  now?: () => Date;
};

/** Reads, and in `self` mode keeps current, the certificate Secret. Never logs a key. */
export class CertificateStore {
  private readonly policy: CertificatePolicy;

  constructor(private readonly options: CertificateStoreOptions) {
    this.policy = options.policy ?? DEFAULT_CERTIFICATE_POLICY;
  }

  get certificatePolicy(): CertificatePolicy {
    return this.policy;
  }

  private async read(): Promise<SecretObject | undefined> {
    try {
      return await this.options.rest.request<SecretObject>({
        method: 'GET',
        path: objectPath(KINDS.secret, { namespace: this.options.namespace, name: this.options.secretName }),
      });
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** The certificates to serve now, after writing renewals (self mode). Throws when there are none yet. */
  async sync(): Promise<CertificateSet> {
    const { namespace, secretName } = this.options;
    for (let attempt = 0; attempt < 5; attempt++) {
      const secret = await this.read();
      const current: Partial<CertificateSet> = {
        caBundle: decode(secret?.data?.[SECRET_KEYS.caBundle]),
        caKeyPem: decode(secret?.data?.[SECRET_KEYS.caKey]),
        certPem: decode(secret?.data?.[SECRET_KEYS.cert]),
        keyPem: decode(secret?.data?.[SECRET_KEYS.key]),
      };
      if (this.options.source === 'external') {
        if (!current.caBundle || !current.certPem || !current.keyPem)
          throw new Error(`Secret ${namespace}/${secretName} has no ca.crt, tls.crt and tls.key yet`);
        return { caBundle: current.caBundle, caKeyPem: '', certPem: current.certPem, keyPem: current.keyPem };
      }
      const plan = planCertificates(
        current,
        this.options.names,
        this.policy,
        (this.options.now ?? (() => new Date()))(),
      );
      if (!plan.changed) return plan.set;
      const body: SecretObject = {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'kubernetes.io/tls',
        metadata: {
          name: secretName,
          namespace,
          labels: { [LABELS.managedBy]: MANAGED_BY, [LABELS.component]: 'webhook' },
          ...(secret?.metadata.resourceVersion ? { resourceVersion: secret.metadata.resourceVersion } : {}),
        },
        data: {
          [SECRET_KEYS.caBundle]: encode(plan.set.caBundle),
          [SECRET_KEYS.caKey]: encode(plan.set.caKeyPem),
          [SECRET_KEYS.cert]: encode(plan.set.certPem),
          [SECRET_KEYS.key]: encode(plan.set.keyPem),
        },
      };
      try {
        if (secret) {
          // The resourceVersion makes this a compare-and-swap: a replica that wrote first wins.
          await this.options.rest.request({
            method: 'PUT',
            path: objectPath(KINDS.secret, { namespace, name: secretName }),
            body,
            retry: false,
          });
        } else {
          await this.options.rest.request({
            method: 'POST',
            path: collectionPath(KINDS.secret, namespace),
            body,
            retry: false,
          });
        }
        this.options.logger.info(
          { secret: `${namespace}/${secretName}`, reasons: plan.reasons },
          'webhook certificates written',
        );
        return plan.set;
      } catch (error) {
        // 409: another replica wrote first (AlreadyExists on create, Conflict on update): read theirs.
        if (!isConflict(error)) throw error;
        this.options.logger.debug({ attempt }, 'certificate Secret written by another replica; reading it');
      }
    }
    throw new Error(`Secret ${namespace}/${secretName}: too many concurrent writers`);
  }
}
