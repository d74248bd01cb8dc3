// config.json as zod 4 schemas: the single source of truth for validation, the inferred types the engine
// uses, and the JSON Schema (`oracle-node schema`, later the CRD). Rules: spec oracle-node-config.md and
// airnode-facts §10. Reference names (airnodeWalletMnemonic, AirnodeRrp, AirnodeRrpDryRun) are accepted
// as aliases and normalised to the canonical names (nodeWalletMnemonic, NodeRrp, NodeRrpDryRun) in the output.
import { z } from 'zod';
// The ethers-free derivations: validating a config loads neither ethers nor its wordlists.
import {
  BYTES32_PATTERN,
  deriveEndpointId,
  deriveTemplateIdV0FromCheckedHex,
  isBytes32,
} from '../protocol/direct-ids.js';
import { deriveNodeAddress, isValidMnemonic } from '../protocol/node-key.js';
import { apiCredentialsSchema, SECRET_REF } from './api-credentials.js';
import { oisSchema, RELAY_SCHEME_TYPES } from './ois.js';
import { PUBLIC_DEPLOYMENTS } from './references.js';

/** The port the gateway server listens on when nothing says otherwise (cloudProvider.gatewayServerPort). */
export const DEFAULT_GATEWAY_SERVER_PORT = 3000;

/** Base paths of the gateways on the gateway server (the reference's, also reported by the heartbeat). */
export const GATEWAY_BASE_PATHS = {
  httpGateway: '/http-data',
  httpSignedDataGateway: '/http-signed-data',
  oevGateway: '/sign-oev',
} as const;

export const SUPPORTED_NODE_VERSIONS = ['0.15.0'] as const;

const EVEN_HEX = /^0x([0-9a-fA-F]{2})*$/;

export const evmAddressSchema = z
  .string()
  .regex(/^0x[a-fA-F0-9]{40}$/, 'Expected an EVM address: 0x followed by 40 hex characters')
  .describe('EVM address (0x + 40 hex characters)');
export const bytes32Schema = z
  .string()
  .regex(BYTES32_PATTERN, 'Expected 0x followed by 64 hex characters')
  .describe('32-byte identifier (0x + 64 hex characters)');
export const chainIdSchema = z
  .string()
  .regex(/^\d+$/, 'Chain id must be a string of digits')
  .describe('Chain id; for EVM chains the EIP-155 chain id, as a string of digits');
const chainTypeSchema = z.literal('evm').describe('Chain type; only evm is supported');
const absoluteUrl = z.string().refine((value) => URL.canParse(value), 'Invalid URL: expected an absolute URL');

// ---------- chains ----------

export const providerSchema = z
  .strictObject({
    url: absoluteUrl.describe('Chain provider URL; give it through ' + SECRET_REF + ' from secrets.env'),
  })
  .describe('A chain provider');

export const UNITS = ['wei', 'kwei', 'mwei', 'gwei', 'szabo', 'finney', 'ether'] as const;

export const amountSchema = z
  .strictObject({
    value: z.number().lte(Number.MAX_SAFE_INTEGER).describe('Amount in `unit`'),
    unit: z.enum(UNITS).describe('Unit: wei, kwei, mwei, gwei, szabo, finney or ether'),
  })
  .describe('An amount {value, unit}');

const hasAtMostTwoDecimals = (value: number) => Math.abs(value * 100 - Math.round(value * 100)) < 1e-9;
const multiplierSchema = z
  .number()
  .positive()
  .refine(hasAtMostTwoDecimals, 'recommendedGasPriceMultiplier must have at most two decimals')
  .describe('Multiplier of the provider-reported gas price; positive, at most two decimals');

const latestBlockPercentileGasPriceSchema = z
  .strictObject({
    gasPriceStrategy: z
      .literal('latestBlockPercentileGasPrice')
      .describe('Strategy name: latestBlockPercentileGasPrice'),
    percentile: z.int().describe('Percentile of the gas prices of a block'),
    minTransactionCount: z.int().describe('Minimum transactions in a block for it to be used'),
    pastToCompareInBlocks: z.int().describe('How many blocks back the reference block is'),
    maxDeviationMultiplier: z
      .number()
      .describe('Maximum deviation of the latest percentile against the reference percentile (spike protection)'),
  })
  .describe('Percentile of the gas prices in the latest block');
const providerRecommendedGasPriceSchema = z
  .strictObject({
    gasPriceStrategy: z.literal('providerRecommendedGasPrice').describe('Strategy name: providerRecommendedGasPrice'),
    recommendedGasPriceMultiplier: multiplierSchema,
  })
  .describe('Provider-reported gas price times a multiplier');
const sanitizedProviderRecommendedGasPriceSchema = z
  .strictObject({
    gasPriceStrategy: z
      .literal('sanitizedProviderRecommendedGasPrice')
      .describe('Strategy name: sanitizedProviderRecommendedGasPrice'),
    recommendedGasPriceMultiplier: multiplierSchema,
    baseFeeMultiplierThreshold: z.number().positive().describe('Decides whether the parent estimate is sanitized'),
    baseFeeMultiplier: z.number().positive().describe('Sanitized price = base fee x baseFeeMultiplier + priorityFee'),
    priorityFee: amountSchema,
  })
  .describe('providerRecommendedGasPrice, sanitized against the base fee');
const providerRecommendedEip1559GasPriceSchema = z
  .strictObject({
    gasPriceStrategy: z
      .literal('providerRecommendedEip1559GasPrice')
      .describe('Strategy name: providerRecommendedEip1559GasPrice'),
    baseFeeMultiplier: z.int().default(2).describe('Max fee = base fee x baseFeeMultiplier + priorityFee; default 2'),
    priorityFee: amountSchema.default({ value: 3.12, unit: 'gwei' }).describe('Priority fee; default 3.12 gwei'),
  })
  .describe('EIP-1559 fees from the provider');
const constantGasPriceSchema = z
  .strictObject({
    gasPriceStrategy: z.literal('constantGasPrice').describe('Strategy name: constantGasPrice'),
    gasPrice: amountSchema.describe('The constant gas price'),
  })
  .describe('A constant gas price; must be the last strategy');

export const GAS_PRICE_STRATEGIES = [
  'latestBlockPercentileGasPrice',
  'providerRecommendedGasPrice',
  'sanitizedProviderRecommendedGasPrice',
  'providerRecommendedEip1559GasPrice',
  'constantGasPrice',
] as const;

export const gasPriceStrategySchema = z
  .discriminatedUnion(
    'gasPriceStrategy',
    [
      latestBlockPercentileGasPriceSchema,
      providerRecommendedGasPriceSchema,
      sanitizedProviderRecommendedGasPriceSchema,
      providerRecommendedEip1559GasPriceSchema,
      constantGasPriceSchema,
    ],
    { error: `Invalid gas price strategy: "gasPriceStrategy" must be one of ${GAS_PRICE_STRATEGIES.join(', ')}` },
  )
  .describe('A gas price strategy, named by gasPriceStrategy');

export const gasPriceOracleSchema = z
  .array(gasPriceStrategySchema)
  .min(1, 'gasPriceOracle must list at least one strategy (ending with constantGasPrice)')
  .superRefine((strategies, ctx) => {
    if (strategies.length > 0 && strategies[strategies.length - 1]?.gasPriceStrategy !== 'constantGasPrice') {
      ctx.addIssue({
        code: 'custom',
        message: 'ConstantGasPrice strategy must be set as the last strategy in the array.',
        path: [],
      });
    }
  })
  .describe('Gas price strategies tried in order; the last must be constantGasPrice');

export const chainOptionsSchema = z
  .strictObject({
    fulfillmentGasLimit: z
      .int()
      .optional()
      .describe('Gas limit for fulfilments, paid by the requester; omitted: estimated (needs NodeRrpDryRun)'),
    withdrawalRemainder: amountSchema
      .optional()
      .describe('Amount kept back when withdrawing to the sponsor; default 0'),
    gasPriceOracle: gasPriceOracleSchema,
  })
  .describe('Chain options');

const rrpContractsShape = {
  NodeRrp: evmAddressSchema.optional().describe('NodeRrpV0 address; defaults to the public deployment of the chain'),
  NodeRrpDryRun: evmAddressSchema
    .optional()
    .describe('NodeRrpV0DryRun address (gas estimation); needed only without fulfillmentGasLimit'),
  AirnodeRrp: evmAddressSchema.optional().describe('Alias of NodeRrp (reference name)'),
  AirnodeRrpDryRun: evmAddressSchema.optional().describe('Alias of NodeRrpDryRun (reference name)'),
};
// Rules that are one predicate with a fixed path are written as refine, not superRefine: the generated parsers call
// a refine's predicate directly, a superRefine through a context object built per call (thousands of contract and
// authorizer objects in a large config). The issues are the same.
const notBoth = (canonical: string, alias: string) => ({
  message: `Use either "${canonical}" or its alias "${alias}", not both`,
  path: [alias],
});

export const rrpContractsSchema = z
  .strictObject(rrpContractsShape)
  .refine((c) => c.NodeRrp === undefined || c.AirnodeRrp === undefined, notBoth('NodeRrp', 'AirnodeRrp'))
  .refine(
    (c) => c.NodeRrpDryRun === undefined || c.AirnodeRrpDryRun === undefined,
    notBoth('NodeRrpDryRun', 'AirnodeRrpDryRun'),
  )
  .describe('Protocol contract addresses; may be omitted where a public deployment exists');

type RawContracts = z.output<typeof rrpContractsSchema> | undefined;
const rrpOf = (c: RawContracts) => c?.NodeRrp ?? c?.AirnodeRrp;
const dryRunOf = (c: RawContracts) => c?.NodeRrpDryRun ?? c?.AirnodeRrpDryRun;

const noDeployment = (contract: string, chainId: string) =>
  `${contract} contract address must be specified for chain ID '${chainId}' as there is no public deployment for this chain`;

const providerShape = providerSchema.describe('Provider of the chain the authorizer contract lives on');

const crossChainRequesterAuthorizerSchema = z
  .strictObject({
    requesterEndpointAuthorizers: z
      .array(evmAddressSchema)
      .min(1, 'requesterEndpointAuthorizers must list at least one address')
      .describe('RequesterAuthorizer contract addresses on the other chain'),
    chainType: chainTypeSchema,
    chainId: chainIdSchema,
    contracts: rrpContractsSchema.optional(),
    chainProvider: providerShape,
  })
  .refine((value) => Boolean(rrpOf(value.contracts) || PUBLIC_DEPLOYMENTS['NodeRrp']?.[value.chainId]), {
    error: (issue) => noDeployment('NodeRrp', (issue.input as { chainId: string }).chainId),
    path: ['contracts'],
  })
  .transform(({ contracts, ...rest }) => ({
    ...rest,
    contracts: { NodeRrp: rrpOf(contracts) ?? PUBLIC_DEPLOYMENTS['NodeRrp']?.[rest.chainId] ?? '' },
  }))
  .describe('Authorizers of another chain consulted for requests on this chain');

const requesterAuthorizerWithErc721Schema = z
  .object({
    erc721s: z.array(evmAddressSchema).min(1, 'erc721s must list at least one address').describe('ERC721 contracts'),
    RequesterAuthorizerWithErc721: evmAddressSchema
      .optional()
      .describe('RequesterAuthorizerWithErc721 address; defaults to the public deployment of the chain'),
  })
  .describe('ERC721-based requester authorizer');

const crossChainRequesterAuthorizerWithErc721Schema = z
  .object({
    erc721s: z.array(evmAddressSchema).min(1, 'erc721s must list at least one address').describe('ERC721 contracts'),
    chainType: chainTypeSchema,
    chainId: chainIdSchema,
    contracts: z
      .strictObject({
        RequesterAuthorizerWithErc721: evmAddressSchema.describe('RequesterAuthorizerWithErc721 address'),
      })
      .optional()
      .describe('Contract addresses on the other chain; default: the public deployment'),
    chainProvider: providerShape,
  })
  .superRefine((value, ctx) => {
    if (!value.contracts && !PUBLIC_DEPLOYMENTS['RequesterAuthorizerWithErc721']?.[value.chainId]) {
      ctx.addIssue({
        code: 'custom',
        message: noDeployment('RequesterAuthorizerWithErc721', value.chainId),
        path: ['contracts'],
      });
    }
  })
  .transform((value) => ({
    ...value,
    contracts: value.contracts ?? {
      RequesterAuthorizerWithErc721: PUBLIC_DEPLOYMENTS['RequesterAuthorizerWithErc721']?.[value.chainId] ?? '',
    },
  }))
  .describe('ERC721-based requester authorizer of another chain');

export const chainAuthorizersSchema = z
  .object({
    requesterEndpointAuthorizers: z
      .array(evmAddressSchema)
      .describe('RequesterAuthorizer contract addresses on this chain (may be empty)'),
    crossChainRequesterAuthorizers: z.array(crossChainRequesterAuthorizerSchema).describe('Cross-chain authorizers'),
    requesterAuthorizersWithErc721: z.array(requesterAuthorizerWithErc721Schema).describe('ERC721 authorizers'),
    crossChainRequesterAuthorizersWithErc721: z
      .array(crossChainRequesterAuthorizerWithErc721Schema)
      .describe('Cross-chain ERC721 authorizers'),
  })
  .describe('On-chain authorizer contracts by scheme (each list may be empty)');

export const chainAuthorizationsSchema = z
  .object({
    requesterEndpointAuthorizations: z
      .record(z.string(), z.array(evmAddressSchema))
      .describe('endpointId -> requester addresses allowed off-chain'),
  })
  .describe('Off-chain authorizations; take precedence over authorizers');

export const chainSchema = z
  .strictObject({
    authorizers: chainAuthorizersSchema,
    authorizations: chainAuthorizationsSchema,
    contracts: rrpContractsSchema.optional(),
    id: chainIdSchema,
    type: chainTypeSchema,
    providers: z
      .record(z.string(), providerSchema)
      .refine((providers) => Object.keys(providers).length > 0, 'At least one provider is required')
      .describe('Named providers, one or more'),
    options: chainOptionsSchema,
    maxConcurrency: z.int().positive().describe('Maximum concurrent handler calls per invocation (>= providers)'),
    blockHistoryLimit: z.int().positive().default(300).describe('Past blocks searched for requests; default 300'),
    minConfirmations: z
      .int()
      .nonnegative()
      .default(0)
      .describe('Blocks that must have elapsed for a request to be valid; default 0'),
  })
  .superRefine((chain, ctx) => {
    const providerCount = Object.keys(chain.providers).length;
    if (chain.maxConcurrency < providerCount) {
      ctx.addIssue({
        code: 'custom',
        message: `Concurrency limit can't be lower than the number of providers for given chain (${providerCount})`,
        path: ['maxConcurrency'],
      });
    }
    if (!rrpOf(chain.contracts) && !PUBLIC_DEPLOYMENTS['NodeRrp']?.[chain.id]) {
      ctx.addIssue({ code: 'custom', message: noDeployment('NodeRrp', chain.id), path: ['contracts'] });
    }
    if (
      !chain.options.fulfillmentGasLimit &&
      !dryRunOf(chain.contracts) &&
      !PUBLIC_DEPLOYMENTS['NodeRrpDryRun']?.[chain.id]
    ) {
      ctx.addIssue({
        code: 'custom',
        message: `When 'fulfillmentGasLimit' is not specified, ${noDeployment('NodeRrpDryRun', chain.id)}`,
        path: ['contracts'],
      });
    }
    chain.authorizers.requesterAuthorizersWithErc721.forEach((authorizer, index) => {
      if (
        !authorizer.RequesterAuthorizerWithErc721 &&
        !PUBLIC_DEPLOYMENTS['RequesterAuthorizerWithErc721']?.[chain.id]
      ) {
        ctx.addIssue({
          code: 'custom',
          message: noDeployment('RequesterAuthorizerWithErc721', chain.id),
          path: ['authorizers', 'requesterAuthorizersWithErc721', index],
        });
      }
    });
  })
  .transform(({ contracts, ...chain }) => {
    const dryRun = chain.options.fulfillmentGasLimit
      ? dryRunOf(contracts)
      : (dryRunOf(contracts) ?? PUBLIC_DEPLOYMENTS['NodeRrpDryRun']?.[chain.id]);
    const erc721Default = PUBLIC_DEPLOYMENTS['RequesterAuthorizerWithErc721']?.[chain.id] ?? '';
    return {
      ...chain,
      authorizers: {
        ...chain.authorizers,
        requesterAuthorizersWithErc721: chain.authorizers.requesterAuthorizersWithErc721.map((a) => ({
          ...a,
          RequesterAuthorizerWithErc721: a.RequesterAuthorizerWithErc721 ?? erc721Default,
        })),
      },
      contracts: {
        NodeRrp: rrpOf(contracts) ?? PUBLIC_DEPLOYMENTS['NodeRrp']?.[chain.id] ?? '',
        ...(dryRun ? { NodeRrpDryRun: dryRun } : {}),
      } as { NodeRrp: string; NodeRrpDryRun?: string },
    };
  })
  .describe('A blockchain served by the node and its settings');

// ---------- nodeSettings ----------

const corsOriginsSchema = z.array(z.string()).describe("Allowed browser origins: [] disables CORS, ['*'] allows all");

function gatewaySchema(what: string) {
  return z
    .discriminatedUnion(
      'enabled',
      [
        z.strictObject({
          enabled: z.literal(true).describe(`Whether the ${what} is enabled`),
          maxConcurrency: z
            .int()
            .positive()
            .describe('Maximum calls one gateway process (one replica) serves at once; beyond it 429 (> 0)'),
          corsOrigins: corsOriginsSchema,
        }),
        z.strictObject({ enabled: z.literal(false).describe(`Whether the ${what} is enabled`) }),
      ],
      { error: '"enabled" must be true or false' },
    )
    .describe(`The ${what}: {enabled: false} or {enabled: true, maxConcurrency, corsOrigins}`);
}

export const heartbeatSchema = z
  .discriminatedUnion(
    'enabled',
    [
      z.strictObject({
        enabled: z.literal(true).describe('Whether heartbeats are sent'),
        url: z.string().describe('URL called at the end of each cycle'),
        apiKey: z
          .string()
          .min(30)
          .max(120)
          .describe('Key authenticating against the heartbeat URL (30-120 characters)'),
      }),
      z.strictObject({ enabled: z.literal(false).describe('Whether heartbeats are sent') }),
    ],
    { error: '"enabled" must be true or false' },
  )
  .describe('Heartbeat: {enabled: false} or {enabled: true, url, apiKey}');

export const cloudProviderSchema = z
  .discriminatedUnion(
    'type',
    [
      z.strictObject({
        type: z.literal('local').describe('local: run as a container (Kubernetes)'),
        gatewayServerPort: z
          .int()
          .min(1)
          .max(65535)
          .default(DEFAULT_GATEWAY_SERVER_PORT)
          .describe('Port of the gateway inside the container; default 3000'),
      }),
      z.strictObject({
        type: z.literal('aws').describe('aws: serverless deployment'),
        region: z.string().describe('Provider region'),
        disableConcurrencyReservations: z.boolean().describe('Disables concurrency reservations of spawned functions'),
      }),
      z.strictObject({
        type: z.literal('gcp').describe('gcp: serverless deployment'),
        region: z.string().describe('Provider region (a region, not a zone)'),
        projectId: z.string().describe('Cloud project id'),
        disableConcurrencyReservations: z.boolean().describe('Disables concurrency reservations of spawned functions'),
      }),
    ],
    { error: 'cloudProvider "type" must be one of local, aws, gcp' },
  )
  .describe('Where the node runs: local, aws or gcp');

const mnemonicSchema = z
  .string()
  .refine((m) => isValidMnemonic(m), 'Node wallet mnemonic is not a valid BIP-39 mnemonic')
  .describe('Mnemonic of the BIP-44 wallet the node address is derived from; give it through ' + SECRET_REF);

export const nodeSettingsSchema = z
  .strictObject({
    cloudProvider: cloudProviderSchema,
    nodeWalletMnemonic: mnemonicSchema.optional(),
    airnodeWalletMnemonic: mnemonicSchema.optional().describe('Alias of nodeWalletMnemonic (reference name)'),
    heartbeat: heartbeatSchema,
    httpGateway: gatewaySchema('HTTP gateway'),
    httpSignedDataGateway: gatewaySchema('HTTP signed-data gateway'),
    oevGateway: gatewaySchema('OEV gateway'),
    logFormat: z.enum(['json', 'plain']).describe('Log format: json or plain'),
    logLevel: z.enum(['DEBUG', 'INFO', 'WARN', 'ERROR']).describe('Highest log verbosity: DEBUG, INFO, WARN or ERROR'),
    nodeVersion: z
      .string()
      .refine((v) => (SUPPORTED_NODE_VERSIONS as readonly string[]).includes(v), {
        message: `The "nodeVersion" must be ${SUPPORTED_NODE_VERSIONS.join(' or ')}`,
      })
      .describe('Config format version (#.#.#); 0.15.0 is supported'),
    stage: z
      .string()
      .regex(/^[a-z0-9-]{1,16}$/, 'stage must be 1-16 characters of a-z, 0-9 and hyphen')
      .describe('Deployment label: at most 16 characters of a-z, 0-9, hyphen'),
  })
  .superRefine((settings, ctx) => {
    if (settings.nodeWalletMnemonic === undefined && settings.airnodeWalletMnemonic === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'Required: "nodeWalletMnemonic" (or its alias "airnodeWalletMnemonic")',
        path: ['nodeWalletMnemonic'],
      });
    } else if (settings.nodeWalletMnemonic !== undefined && settings.airnodeWalletMnemonic !== undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'Use either "nodeWalletMnemonic" or its alias "airnodeWalletMnemonic", not both',
        path: ['airnodeWalletMnemonic'],
      });
    }
  })
  .transform(({ nodeWalletMnemonic, airnodeWalletMnemonic, ...settings }) => ({
    ...settings,
    nodeWalletMnemonic: (nodeWalletMnemonic ?? airnodeWalletMnemonic) as string,
  }))
  .describe('General deployment parameters');

// ---------- triggers, templates, credentials ----------

const triggerShape = {
  endpointId: z.string().describe('keccak256(abi.encode(oisTitle, endpointName))'),
  oisTitle: z.string().describe('Title of the OIS holding the endpoint'),
  endpointName: z.string().describe('Name of the endpoint in that OIS'),
};
export const triggerSchema = z.strictObject(triggerShape).describe('Maps an endpointId to an OIS endpoint');
export const rrpTriggerSchema = z
  .strictObject({
    ...triggerShape,
    cacheResponses: z.boolean().describe('Cache API responses by requestId (for non-idempotent operations)'),
  })
  .describe('Maps an endpointId to an OIS endpoint for the request-response protocol');

export const triggersSchema = z
  .strictObject({
    rrp: z.array(rrpTriggerSchema).describe('Endpoints served through NodeRrpV0'),
    http: z.array(triggerSchema).describe('Endpoints served through the HTTP gateway'),
    httpSignedData: z.array(triggerSchema).describe('Endpoints served through the HTTP signed-data gateway'),
  })
  .describe('Which endpoints are reachable through which surface');

export const templateSchema = z
  .strictObject({
    templateId: bytes32Schema.describe('keccak256(abi.encodePacked(nodeAddress, endpointId, encodedParameters))'),
    endpointId: bytes32Schema.describe('Identifier of the target endpoint'),
    encodedParameters: z
      .string()
      .regex(EVEN_HEX, 'encodedParameters must be a 0x-prefixed hex string of even length')
      .describe('Encoded request parameters (0x-prefixed, even-length hex)'),
  })
  .describe('A locally known request template');

export { apiCredentialsSchema } from './api-credentials.js';

// ---------- config ----------

type ConfigShape = {
  nodeSettings: { nodeWalletMnemonic?: string; airnodeWalletMnemonic?: string };
  ois: z.output<typeof oisSchema>[];
  triggers: z.output<typeof triggersSchema>;
  templates: z.output<typeof templateSchema>[];
  apiCredentials: z.output<typeof apiCredentialsSchema>[];
};

// Deriving the address runs PBKDF2 (2048 rounds); validating the same config again should not pay it again.
const nodeAddressCache = new Map<string, string>();
function cachedNodeAddress(mnemonic: string): string {
  let address = nodeAddressCache.get(mnemonic);
  if (address === undefined) {
    address = deriveNodeAddress(mnemonic);
    if (nodeAddressCache.size >= 8) nodeAddressCache.clear();
    nodeAddressCache.set(mnemonic, address);
  }
  return address;
}

const CROSS_CHECKED_SECTIONS = new Set<PropertyKey>(['ois', 'triggers', 'templates', 'apiCredentials']);
/** An aborting issue here leaves data the cross-section rules cannot read safely. */
const blocksCrossChecks = (path: readonly PropertyKey[]) =>
  path.length === 0 || CROSS_CHECKED_SECTIONS.has(path[0]!) || (path[0] === 'nodeSettings' && path.length === 1);

const crossChecksApply = (payload: z.core.ParsePayload) =>
  payload.issues.every((issue) => issue.continue === true || !blocksCrossChecks(issue.path ?? []));

/** Rules that span sections; paths are absolute from the config root. */
function checkConfigReferences(config: ConfigShape, ctx: z.RefinementCtx): void {
  const oisByTitle = new Map<string, ConfigShape['ois'][number]>();
  /** The endpoint names of each OIS, so that a trigger's endpoint is found without scanning the list. */
  const endpointNames = new Map<ConfigShape['ois'][number], Set<string>>();
  config.ois.forEach((ois, index) => {
    if (oisByTitle.has(ois.title)) {
      ctx.addIssue({
        code: 'custom',
        message: `OIS titles must be unique, but "${ois.title}" is used multiple times`,
        path: ['ois', index, 'title'],
      });
    } else {
      oisByTitle.set(ois.title, ois);
      endpointNames.set(ois, new Set(ois.endpoints.map((e) => e.name)));
    }
  });

  // The same endpoint is often listed in several trigger lists; derive each endpointId once per validation
  // (keyed by OIS title, then endpoint name).
  const endpointIds = new Map<string, Map<string, string>>();
  for (const section of ['rrp', 'http', 'httpSignedData'] as const) {
    config.triggers[section].forEach((trigger, index) => {
      const ois = oisByTitle.get(trigger.oisTitle);
      if (!ois) {
        ctx.addIssue({
          code: 'custom',
          message: `No matching OIS for trigger with OIS title "${trigger.oisTitle}"`,
          path: ['triggers', section, index, 'oisTitle'],
        });
        return;
      }
      if (!endpointNames.get(ois)!.has(trigger.endpointName)) {
        ctx.addIssue({
          code: 'custom',
          message: `No matching endpoint for trigger with endpoint name "${trigger.endpointName}" in OIS "${trigger.oisTitle}"`,
          path: ['triggers', section, index, 'endpointName'],
        });
        return;
      }
      // The id hashes the UTF-8 bytes of both names; a lone surrogate has none (the reference's ethers throws too).
      const malformed = !trigger.oisTitle.isWellFormed()
        ? 'oisTitle'
        : !trigger.endpointName.isWellFormed()
          ? 'endpointName'
          : undefined;
      if (malformed) {
        ctx.addIssue({
          code: 'custom',
          message: `The ${malformed} contains an unpaired UTF-16 surrogate, so it has no UTF-8 form to derive the endpointId from`,
          path: ['triggers', section, index, malformed],
        });
        return;
      }
      let idsOfOis = endpointIds.get(trigger.oisTitle);
      if (idsOfOis === undefined) {
        idsOfOis = new Map();
        endpointIds.set(trigger.oisTitle, idsOfOis);
      }
      let expected = idsOfOis.get(trigger.endpointName);
      if (expected === undefined) {
        expected = deriveEndpointId(trigger.oisTitle, trigger.endpointName);
        idsOfOis.set(trigger.endpointName, expected);
      }
      if (expected !== trigger.endpointId) {
        ctx.addIssue({
          code: 'custom',
          message: `The endpointId does not match the hash of the oisTitle and endpointName (expected ${expected})`,
          path: ['triggers', section, index, 'endpointId'],
        });
      }
    });
  }

  // nodeSettings may be untransformed here (other errors in it), so read either name.
  const mnemonic = config.nodeSettings.nodeWalletMnemonic ?? config.nodeSettings.airnodeWalletMnemonic;
  if (config.templates.length > 0 && typeof mnemonic === 'string' && isValidMnemonic(mnemonic)) {
    const nodeAddress = cachedNodeAddress(mnemonic);
    config.templates.forEach((template, index) => {
      // Format issues of the fields are continuable in zod, so this runs on unchecked strings too.
      if (!isBytes32(template.endpointId) || !EVEN_HEX.test(template.encodedParameters)) return;
      const expected = deriveTemplateIdV0FromCheckedHex(nodeAddress, template.endpointId, template.encodedParameters);
      if (expected !== template.templateId) {
        ctx.addIssue({
          code: 'custom',
          message: `Template is invalid: templateId does not match the hash of the node address, endpointId and encodedParameters (expected ${expected})`,
          path: ['templates', index, 'templateId'],
        });
      }
    });
  }

  config.apiCredentials.forEach((credential, index) => {
    const ois = oisByTitle.get(credential.oisTitle);
    if (!ois) {
      ctx.addIssue({
        code: 'custom',
        message: `No OIS with title "${credential.oisTitle}" for these credentials`,
        path: ['apiCredentials', index, 'oisTitle'],
      });
    } else if (!Object.hasOwn(ois.apiSpecifications.components.securitySchemes, credential.securitySchemeName)) {
      ctx.addIssue({
        code: 'custom',
        message: `OIS "${credential.oisTitle}" has no security scheme "${credential.securitySchemeName}" in components.securitySchemes`,
        path: ['apiCredentials', index, 'securitySchemeName'],
      });
    }
  });

  const gatewayTriggers = [
    ['http', 'an HTTP gateway'],
    ['httpSignedData', 'an HTTP signed data gateway'],
  ] as const;
  config.ois.forEach((ois, oisIndex) => {
    const schemes = ois.apiSpecifications.components.securitySchemes;
    for (const name of Object.keys(ois.apiSpecifications.security)) {
      const scheme = Object.hasOwn(schemes, name) ? schemes[name] : undefined;
      if (!scheme) continue;
      const schemePath = ['ois', oisIndex, 'apiSpecifications', 'components', 'securitySchemes', name];
      if (scheme.type === 'apiKey' || scheme.type === 'http') {
        const found = config.apiCredentials.some((c) => c.oisTitle === ois.title && c.securitySchemeName === name);
        if (!found) {
          ctx.addIssue({
            code: 'custom',
            message: `The security scheme "${name}" is enabled but no credentials are provided in "apiCredentials" (oisTitle "${ois.title}", securitySchemeName "${name}")`,
            path: ['ois', oisIndex, 'apiSpecifications', 'security', name],
          });
        }
      }
      if ((RELAY_SCHEME_TYPES as readonly string[]).includes(scheme.type)) {
        for (const [section, label] of gatewayTriggers) {
          if (config.triggers[section].length > 0) {
            ctx.addIssue({
              code: 'custom',
              message: `Relayed metadata authentication can't be used with ${label} (triggers.${section} is not empty)`,
              path: [...schemePath, 'type'],
            });
          }
        }
      }
    }
  });
}

/**
 * A chain listed twice would be served twice: each cycle would read its requests through both entries, count them
 * twice and race their fulfilments on the same sponsor wallets. Its providers belong in one entry.
 */
function eachChainOnce(chains: readonly { type: string; id: string }[], ctx: z.RefinementCtx): void {
  const first = new Map<string, number>();
  chains.forEach((chain, index) => {
    const key = `${chain.type}:${chain.id}`;
    const earlier = first.get(key);
    if (earlier === undefined) first.set(key, index);
    else
      ctx.addIssue({
        code: 'custom',
        message: `Chain ${chain.id} is already listed at chains[${earlier}]: list each chain once, with all its providers in that entry`,
        path: [index, 'id'],
      });
  });
}

/**
 * The config object, its sections each passed through `section` (the identity for configSchema, a generated parser
 * for fastConfig): one definition, so the two cannot drift apart.
 */
function configObject(section: <S extends z.ZodType>(schema: S) => S) {
  return (
    z
      .strictObject({
        chains: z
          .array(section(chainSchema))
          .superRefine(eachChainOnce)
          .describe('Blockchains served and their settings'),
        // One object, parsed once: generating its parser would cost more than it saves.
        nodeSettings: nodeSettingsSchema,
        triggers: section(triggersSchema),
        templates: z.array(section(templateSchema)).describe('Locally known request templates (may be empty)'),
        ois: z.array(section(oisSchema)).describe('API specifications and node endpoints'),
        apiCredentials: z
          .array(section(apiCredentialsSchema))
          .describe('Credentials for security schemes (empty if no scheme is used)'),
      })
      // Runs even when unrelated sections (chains, nodeSettings) have errors, so one run reports everything.
      .superRefine((config, ctx) => checkConfigReferences(config as unknown as ConfigShape, ctx), {
        when: crossChecksApply,
      })
      .describe('config.json: one deployment of an oracle node')
  );
}

export const configSchema = configObject((schema) => schema);

/** `schema` with a parser generated by zod's compiler as its fast path; where zod cannot compile it, `schema`. */
function withGeneratedParser<S extends z.ZodType>(schema: S): S {
  try {
    return z.withParser(schema, z.core.compileFn(schema));
  } catch {
    return schema;
  }
}

let fastConfigSchema: typeof configSchema | undefined;

/**
 * configSchema, parsed faster: the same object and cross-section rules (`when` included), whose sections (all but
 * nodeSettings) run parsers that zod's compiler generated from their schemas. A generated parser handles what passes
 * every rule of its schema; for anything else it hands the same input and context to the section's own parse, so
 * errors are exactly configSchema's. Arrays get a parser per element: a parser for a whole section of chains or OIS
 * is one function too large for V8 to optimise, while one per chain or OIS is called often enough to be. Built on
 * first use (about 20 ms of code generation, repaid by a config of a few hundred objects); validate uses it,
 * configSchema stays what the JSON Schema and CRD are generated from.
 */
export function fastConfig(): typeof configSchema {
  fastConfigSchema ??= configObject(withGeneratedParser);
  return fastConfigSchema;
}

export type Config = z.output<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;
export type Chain = z.output<typeof chainSchema>;
export type ChainOptions = z.output<typeof chainOptionsSchema>;
export type ChainAuthorizers = z.output<typeof chainAuthorizersSchema>;
export type ChainAuthorizations = z.output<typeof chainAuthorizationsSchema>;
export type Provider = z.output<typeof providerSchema>;
export type Amount = z.output<typeof amountSchema>;
export type GasPriceStrategy = z.output<typeof gasPriceStrategySchema>;
export type NodeSettings = z.output<typeof nodeSettingsSchema>;
export type CloudProvider = z.output<typeof cloudProviderSchema>;
export type Heartbeat = z.output<typeof heartbeatSchema>;
export type Gateway = NodeSettings['httpGateway'];
export type Triggers = z.output<typeof triggersSchema>;
export type Trigger = z.output<typeof triggerSchema>;
export type RrpTrigger = z.output<typeof rrpTriggerSchema>;
export type Template = z.output<typeof templateSchema>;
export type ApiCredentials = z.output<typeof apiCredentialsSchema>;
