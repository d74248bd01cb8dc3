// The config model: zod schemas (single source of truth), inferred types, secrets and validation.
// Parsed output uses the canonical names: nodeSettings.nodeWalletMnemonic and chains[].contracts.{NodeRrp,
// NodeRrpDryRun}; the reference names (airnodeWalletMnemonic, AirnodeRrp, AirnodeRrpDryRun) are input aliases.

export { toIssues } from './issues.js';
export { configJsonSchema, oisJsonSchema } from './json-schema.js';
export * from './ois.js';
export { formatPath, type PathSegment } from './paths.js';
export { PUBLIC_DEPLOYMENTS } from './references.js';
export * from './schema.js';
export {
  type SecretScopes,
  scopedSecretsFromEnvironment,
  secretScopes,
  WITHHELD_MNEMONIC,
  WITHHELD_SECRET,
  type Workload,
  withheldStandIns,
} from './secret-scopes.js';
export { secretValuesOf, urlCredentials } from './secret-values.js';
export {
  checkSecretsRecord,
  type Interpolation,
  interpolateSecrets,
  makeRedactor,
  type ParsedSecrets,
  parseSecretsEnv,
  referencedSecretNames,
  SECRET_NAME_PATTERN,
  secretsFromEnvironment,
} from './secrets.js';
export {
  describeJsonError,
  type Issue,
  MAX_CONFIG_BYTES,
  MAX_NESTING_DEPTH,
  type SecretsInput,
  type ValidationResult,
  validateConfig,
  validateOis,
} from './validate.js';
