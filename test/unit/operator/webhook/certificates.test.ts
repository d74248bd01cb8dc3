import { X509Certificate } from 'node:crypto';
import { expect } from 'chai';
import {
  type CertificatePolicy,
  DEFAULT_CERTIFICATE_POLICY,
  planCertificates,
} from '../../../../src/operator/webhook/certificate-store.js';
import {
  alternativeNames,
  createCertificateAuthority,
  issueServingCertificate,
  splitPemBundle,
} from '../../../../src/operator/webhook/certificates.js';

const DAY = 86_400_000;
const names = { dnsNames: ['webhook.system.svc', 'webhook.system.svc.cluster.local'], ipAddresses: ['127.0.0.1'] };
const start = new Date('2026-01-01T00:00:00Z');
const at = (days: number) => new Date(start.getTime() + days * DAY);

describe('webhook certificates', () => {
  it('issues a CA and a serving certificate that verify (X.509 v3, SANs, serverAuth)', () => {
    const ca = createCertificateAuthority({ commonName: 'test-ca', notBefore: start, notAfter: at(10) });
    const serving = issueServingCertificate(ca, { commonName: 'webhook', notBefore: start, notAfter: at(5), ...names });
    const caCert = new X509Certificate(ca.certPem);
    const cert = new X509Certificate(serving.certPem);
    expect(caCert.ca).to.equal(true);
    expect(cert.ca).to.equal(false);
    expect(cert.checkIssued(caCert)).to.equal(true);
    expect(cert.verify(caCert.publicKey)).to.equal(true);
    expect(alternativeNames(cert)).to.deep.equal(names);
    expect(cert.keyUsage).to.include('1.3.6.1.5.5.7.3.1');
  });

  it('a first plan creates everything; the same Secret again changes nothing', () => {
    const first = planCertificates({}, names, DEFAULT_CERTIFICATE_POLICY, start);
    expect(first.changed).to.equal(true);
    expect(splitPemBundle(first.set.caBundle)).to.have.length(1);
    const again = planCertificates(first.set, names, DEFAULT_CERTIFICATE_POLICY, at(1));
    expect(again.changed).to.equal(false);
  });

  it('renews the serving certificate before it expires, under the same CA', () => {
    const first = planCertificates({}, names, DEFAULT_CERTIFICATE_POLICY, start).set;
    expect(planCertificates(first, names, DEFAULT_CERTIFICATE_POLICY, at(59)).changed).to.equal(false);
    const renewed = planCertificates(first, names, DEFAULT_CERTIFICATE_POLICY, at(61));
    expect(renewed.changed).to.equal(true);
    expect(renewed.set.caBundle).to.equal(first.caBundle);
    expect(renewed.set.certPem).to.not.equal(first.certPem);
    expect(renewed.reasons).to.include('the serving certificate is due for renewal');
  });

  it('reissues when the serving names change, or the key does not match', () => {
    const first = planCertificates({}, names, DEFAULT_CERTIFICATE_POLICY, start).set;
    const moved = planCertificates(
      first,
      { dnsNames: ['other.svc'], ipAddresses: [] },
      DEFAULT_CERTIFICATE_POLICY,
      at(1),
    );
    expect(moved.reasons).to.include('the serving names changed');
    const other = planCertificates({}, names, DEFAULT_CERTIFICATE_POLICY, start).set;
    const mismatched = planCertificates({ ...first, keyPem: other.keyPem }, names, DEFAULT_CERTIFICATE_POLICY, at(1));
    expect(mismatched.reasons).to.include('no valid serving certificate');
  });

  it('rotates the CA in two steps: published beside the old one first, signing only after the overlap', () => {
    const policy: CertificatePolicy = { ...DEFAULT_CERTIFICATE_POLICY, caOverlapMs: DAY };
    const first = planCertificates({}, names, policy, start).set;
    // The serving certificate renewed on day 270 is still valid on day 280, when the CA (365 days) is due.
    const renewedServing = planCertificates(first, names, policy, at(270)).set;
    const step1 = planCertificates(renewedServing, names, policy, at(280));
    expect(step1.reasons).to.include('the CA is due for renewal');
    const bundle = splitPemBundle(step1.set.caBundle);
    expect(bundle).to.have.length(2);
    expect(bundle[1]).to.equal(splitPemBundle(first.caBundle)[0]);
    expect(step1.set.certPem, 'the old CA still signs the served certificate').to.equal(renewedServing.certPem);
    const step2 = planCertificates(step1.set, names, policy, at(282));
    expect(step2.reasons).to.include('the new CA has been published long enough to sign');
    const served = new X509Certificate(step2.set.certPem);
    expect(served.verify(new X509Certificate(bundle[0]!).publicKey)).to.equal(true);
  });

  it('drops garbage and starts over', () => {
    const plan = planCertificates(
      { caBundle: 'not a pem', caKeyPem: 'x', certPem: 'y', keyPem: 'z' },
      names,
      DEFAULT_CERTIFICATE_POLICY,
      start,
    );
    expect(plan.changed).to.equal(true);
    expect(new X509Certificate(plan.set.certPem).verify(new X509Certificate(plan.set.caBundle).publicKey)).to.equal(
      true,
    );
  });
});
