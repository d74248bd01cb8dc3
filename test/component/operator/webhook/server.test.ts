// The webhook's HTTPS server on loopback: AdmissionReview in and out, refusals with paths and causes, warnings,
// 400 on what is not a review, and a renewed certificate served from the next handshake without a restart.
import { X509Certificate } from 'node:crypto';
import https from 'node:https';
import type { TLSSocket } from 'node:tls';
import { expect } from 'chai';
import { pino } from 'pino';
import { DEFAULT_CERTIFICATE_POLICY, planCertificates } from '../../../../src/operator/webhook/certificate-store.js';
import { WebhookServer } from '../../../../src/operator/webhook/server.js';
import { loadSample } from '../../../unit/operator/fake-kube.js';

const names = { dnsNames: [], ipAddresses: ['127.0.0.1'] };

function post(
  port: number,
  ca: string,
  body: unknown,
): Promise<{ status: number; json: Record<string, unknown>; certificate: string }> {
  const payload = typeof body === 'string' ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        path: '/validate-oraclenode',
        method: 'POST',
        ca,
        agent: false, // a new TLS handshake per request
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        const peer = (res.socket as TLSSocket).getPeerX509Certificate();
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            json: JSON.parse(Buffer.concat(chunks).toString('utf8')),
            certificate: peer?.fingerprint256 ?? '',
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const review = (object: unknown, operation = 'CREATE') => ({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: { uid: 'uid-1', operation, namespace: 'default', object },
});

describe('webhook server (HTTPS on loopback)', () => {
  const first = planCertificates({}, names, DEFAULT_CERTIFICATE_POLICY, new Date()).set;
  const server = new WebhookServer({
    port: 0,
    host: '127.0.0.1',
    certificate: first,
    logger: pino({ level: 'silent' }),
  });
  let port: number;

  before(async () => {
    port = await server.start();
  });
  after(() => server.close());

  it('admits a valid OracleNode', async () => {
    const { status, json } = await post(port, first.caBundle, review(loadSample('minimal').node));
    expect(status).to.equal(200);
    expect(json).to.deep.include({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' });
    expect(json.response).to.deep.equal({ uid: 'uid-1', allowed: true });
  });

  it('refuses an invalid one with the paths, as message and as causes, and returns warnings', async () => {
    const { node } = loadSample('minimal');
    (node.spec.config.triggers as { rrp: { oisTitle: string }[] }).rrp[0]!.oisTitle = 'Nope';
    (node.spec.config.ois as { apiSpecifications: { servers: unknown[] } }[])[0]!.apiSpecifications.servers.push({
      url: 'http://b:1',
    });
    const { json } = await post(port, first.caBundle, review(node));
    const response = json.response as {
      allowed: boolean;
      warnings: string[];
      status: { code: number; message: string; details: { causes: { field: string }[] } };
    };
    expect(response.allowed).to.equal(false);
    expect(response.status.code).to.equal(422);
    expect(response.status.message).to.contain('triggers.rrp[0].oisTitle: No matching OIS');
    expect(response.status.details.causes.map((cause) => cause.field)).to.deep.equal(['triggers.rrp[0].oisTitle']);
    expect(response.warnings).to.have.length(1);
  });

  it('answers 400 to what is not an AdmissionReview', async () => {
    expect((await post(port, first.caBundle, 'not json')).status).to.equal(400);
    expect((await post(port, first.caBundle, { kind: 'AdmissionReview' })).status).to.equal(400);
  });

  it('serves a renewed certificate from the next handshake, without a restart', async () => {
    const before = await post(port, first.caBundle, review(loadSample('minimal').node));
    expect(before.certificate).to.equal(new X509Certificate(first.certPem).fingerprint256);
    // The same CA renews the serving certificate (its renewal window reached).
    const renewed = planCertificates(
      first,
      names,
      { ...DEFAULT_CERTIFICATE_POLICY, servingRenewBeforeMs: DEFAULT_CERTIFICATE_POLICY.servingValidityMs },
      new Date(),
    ).set;
    expect(renewed.certPem).to.not.equal(first.certPem);
    server.useCertificate(renewed);
    const after = await post(port, first.caBundle, review(loadSample('minimal').node));
    expect(after.certificate).to.equal(new X509Certificate(renewed.certPem).fingerprint256);
    expect((after.json.response as { allowed: boolean }).allowed).to.equal(true);
  });
});
