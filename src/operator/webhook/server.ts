// The admission webhook's HTTPS server: AdmissionReview v1 in, AdmissionReview v1 out, on its own port. The TLS
// certificate is swapped in place (setSecureContext) when it is renewed, so rotation needs no restart. A request
// that cannot be read gets a 400 with a JSON reason; a failure of ours answers "allowed: false" with the reason
// rather than crashing, and the API server's failurePolicy decides what happens when we cannot answer at all.
import type { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { type Histogram, Histogram as PromHistogram, type Registry } from '../../observability/index.js';
import { type FeedAdmission, feedDenialMessage } from '../feed/admission.js';
import { FEED_KIND } from '../feed/api.js';
import { GROUP, KIND } from '../resource.js';
import {
  type AdmissionDecision,
  type AdmissionLookups,
  denialMessage,
  type OracleNodeAdmission,
  reviewOracleNode,
} from './review.js';

export const VALIDATE_PATH = '/validate-oraclenode';
/** The API server sends at most ~3 MiB objects, twice (object and oldObject) on update. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

export type ServingCertificate = { certPem: string; keyPem: string };

type AdmissionReview = {
  apiVersion?: string;
  kind?: string;
  request?: {
    uid?: string;
    kind?: { group?: string; kind?: string };
    operation?: OracleNodeAdmission['operation'];
    namespace?: string;
    object?: OracleNodeAdmission['object'];
    oldObject?: OracleNodeAdmission['oldObject'];
  };
};

export type WebhookServerOptions = {
  port: number;
  host?: string;
  certificate: ServingCertificate;
  lookups?: AdmissionLookups;
  logger: Logger;
  registry?: Registry;
  /** The AirnodeFeed review (feed/admission.ts with the feed's validator); without it feeds are allowed. */
  reviewFeed?: (request: FeedAdmission) => Promise<AdmissionDecision>;
};

export class WebhookServer {
  private server: https.Server | undefined;
  private readonly duration: Histogram<'operation' | 'allowed'> | undefined;
  private servedCertificate: string;

  constructor(private readonly options: WebhookServerOptions) {
    this.servedCertificate = options.certificate.certPem;
    this.duration = options.registry
      ? new PromHistogram({
          name: 'oracle_node_webhook_admission_duration_seconds',
          help: 'Time to answer one OracleNode admission review, by operation and outcome',
          labelNames: ['operation', 'allowed'],
          buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
          registers: [options.registry],
        })
      : undefined;
  }

  async start(): Promise<number> {
    const { certificate } = this.options;
    const server = https.createServer(
      { cert: certificate.certPem, key: certificate.keyPem, minVersion: 'TLSv1.2' },
      (req, res) => this.handle(req, res),
    );
    server.keepAliveTimeout = 65_000;
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, this.options.host ?? '0.0.0.0', () => {
        server.off('error', reject);
        resolve();
      });
    });
    return (server.address() as AddressInfo).port;
  }

  /** Serves a renewed certificate from the next TLS handshake on; connections already open keep theirs. */
  useCertificate(certificate: ServingCertificate): void {
    if (certificate.certPem === this.servedCertificate) return;
    this.server?.setSecureContext({ cert: certificate.certPem, key: certificate.keyPem, minVersion: 'TLSv1.2' });
    this.servedCertificate = certificate.certPem;
    this.options.logger.info('webhook serving a renewed certificate');
  }

  get certificatePem(): string {
    return this.servedCertificate;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  private handle(req: IncomingMessage, res: ServerResponse): undefined {
    const reply = (status: number, body: unknown): undefined => {
      const text = JSON.stringify(body);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
      return undefined;
    };
    const url = req.url?.split('?')[0];
    if (url === '/healthz') return reply(200, { status: 'ok' });
    if (url !== VALIDATE_PATH) return reply(404, { error: `not found: use POST ${VALIDATE_PATH}` });
    if (req.method !== 'POST') return reply(405, { error: 'method not allowed: use POST' });
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reply(413, { error: 'admission review larger than 8 MiB' });
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => void this.answer(res, chunks, reply));
  }

  /** Decides one AdmissionReview (the AirnodeFeed review is asynchronous: the feed's validator). */
  private async answer(
    res: ServerResponse,
    chunks: Buffer[],
    reply: (code: number, body: unknown) => void,
  ): Promise<void> {
    if (res.headersSent) return;
    let review: AdmissionReview;
    try {
      review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as AdmissionReview;
    } catch {
      return reply(400, { error: 'the body is not JSON' });
    }
    const request = review?.request;
    if (!request?.uid || !request.operation) return reply(400, { error: 'not an AdmissionReview with a request' });
    const started = process.hrtime.bigint();
    let response: Record<string, unknown>;
    try {
      const isFeed = request.kind?.kind === FEED_KIND;
      const reviewFeed = this.options.reviewFeed;
      const decision = isFeed
        ? reviewFeed
          ? await reviewFeed({
              operation: request.operation,
              object: request.object as FeedAdmission['object'],
              oldObject: request.oldObject as FeedAdmission['oldObject'],
            })
          : { allowed: true, errors: [], warnings: [] }
        : reviewOracleNode(
            { operation: request.operation, object: request.object, oldObject: request.oldObject },
            this.options.lookups,
          );
      response = { uid: request.uid, allowed: decision.allowed };
      if (decision.warnings.length > 0) response.warnings = decision.warnings;
      if (!decision.allowed) {
        response.status = {
          code: 422,
          reason: 'Invalid',
          message: isFeed ? feedDenialMessage(decision.errors) : denialMessage(decision.errors),
          // kubectl prints an Invalid status as `The OracleNode "<name>" is invalid:` and one line per cause.
          details: {
            group: GROUP,
            kind: isFeed ? FEED_KIND : KIND,
            ...(request.object?.metadata?.name ? { name: request.object.metadata.name } : {}),
            causes: decision.errors.map((issue) => ({ field: issue.path, message: issue.message })),
          },
        };
      }
      this.options.logger.debug(
        {
          operation: request.operation,
          namespace: request.namespace,
          name: request.object?.metadata?.name,
          allowed: decision.allowed,
          errors: decision.errors.length,
          warnings: decision.warnings.length,
        },
        'admission review',
      );
    } catch (error) {
      // A bug of ours: a structured refusal without the object in it.
      const reason = error instanceof Error ? error.name : 'Error';
      this.options.logger.error({ err: reason }, 'admission review failed');
      response = {
        uid: request.uid,
        allowed: false,
        status: { code: 500, message: `webhook internal error (${reason})` },
      };
    }
    this.duration?.observe(
      { operation: request.operation, allowed: String(response.allowed) },
      Number(process.hrtime.bigint() - started) / 1e9,
    );
    reply(200, { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response });
  }
}
