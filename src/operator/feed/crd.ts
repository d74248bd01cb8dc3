// The AirnodeFeed CustomResourceDefinition: names, printer columns, and the OpenAPI of spec and status generated from
// the API's zod schemas (feed/api.ts). Written beside OracleNode's by scripts/generate-crd.ts.
import type { CustomResourceDefinition } from '../crd.js';
import { GROUP, VERSION } from '../resource.js';
import { FEED_KIND, FEED_PLURAL, FEED_SHORT_NAME, FEED_SINGULAR, feedSpecOpenApi, feedStatusOpenApi } from './api.js';

export function buildFeedCrd(): CustomResourceDefinition {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${FEED_PLURAL}.${GROUP}` },
    spec: {
      group: GROUP,
      names: {
        kind: FEED_KIND,
        listKind: `${FEED_KIND}List`,
        plural: FEED_PLURAL,
        singular: FEED_SINGULAR,
        shortNames: [FEED_SHORT_NAME],
        categories: ['oracle-node'],
      },
      scope: 'Namespaced',
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            {
              name: 'Ready',
              type: 'string',
              jsonPath: '.status.conditions[?(@.type=="Ready")].status',
              description: 'Whether the feed runs its current spec.',
            },
            {
              name: 'Reason',
              type: 'string',
              jsonPath: '.status.notReadyReason',
              description: 'Why the feed is not Ready (empty when Ready).',
            },
            { name: 'Stage', type: 'string', jsonPath: '.status.stage', description: 'nodeSettings.stage running.' },
            { name: 'Templates', type: 'integer', jsonPath: '.status.templates', description: 'Templates fed.' },
            { name: 'Airnode', type: 'string', jsonPath: '.status.airnode', description: 'The node address.' },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              description:
                'An Airnode feed (@api3/airnode-feed 3.x config.json): the operator runs it as a Deployment of the ' +
                'engine image (`oracle-node feed`) that fetches, signs and pushes to the Signed APIs.',
              type: 'object',
              required: ['spec'],
              properties: {
                apiVersion: { description: 'APIVersion of this representation of the object.', type: 'string' },
                kind: { description: `Kind of the object: ${FEED_KIND}.`, type: 'string' },
                metadata: { type: 'object' },
                spec: feedSpecOpenApi(),
                status: feedStatusOpenApi(),
              },
            },
          },
        },
      ],
    },
  };
}
