// The AirnodeFeed CustomResourceDefinition: names, printer columns, and the OpenAPI of spec and status generated from
// the API's zod schemas (feed/api.ts). Written beside OracleNode's by scripts/generate-crd.ts.
import { type CustomResourceDefinition, namespacedCrd } from '../crd.js';
import { FEED_KIND, FEED_PLURAL, FEED_SHORT_NAME, FEED_SINGULAR, feedSpecOpenApi, feedStatusOpenApi } from './api.js';

export function buildFeedCrd(): CustomResourceDefinition {
  return namespacedCrd({
    kind: FEED_KIND,
    plural: FEED_PLURAL,
    singular: FEED_SINGULAR,
    shortName: FEED_SHORT_NAME,
    description:
      'An Airnode feed (@api3/airnode-feed 3.x config.json): the operator runs it as a Deployment of the ' +
      'engine image (`oracle-node feed`) that fetches, signs and pushes to the Signed APIs.',
    columns: [
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
    ],
    spec: feedSpecOpenApi(),
    status: feedStatusOpenApi(),
  });
}
