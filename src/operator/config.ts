// The operator's view of the config model (src/config/): full validation with the Secret's values as secrets,
// path-addressed issues, and the JSON Schema the CRD is generated from.
import { type Config, configJsonSchema, SECRET_NAME_PATTERN, validateConfig } from '../config/index.js';

export type ConfigIssue = { path: string; message: string };
export type ConfigValidation =
  | { ok: true; config: NodeConfig; errors: ConfigIssue[]; warnings: ConfigIssue[] }
  | { ok: false; config?: undefined; errors: ConfigIssue[]; warnings: ConfigIssue[] };

/** The validated config (canonical names, defaults applied, `${NAME}` resolved). */
export type NodeConfig = Config;

export type ConfigValidator = (rawConfig: unknown, secrets: Record<string, string>) => ConfigValidation;

/** A placeholder missing from the Secret; the model says "secrets.env", the operator's users have a Secret. */
const MISSING_SECRET = /^Secret "([^"]+)" is not (defined in secrets\.env|a key of the Secret)/;

export function isMissingSecretIssue(issue: ConfigIssue): boolean {
  return MISSING_SECRET.test(issue.message);
}

/** An issue as the operator's users read it: a missing placeholder is a key missing from their Secret. */
export function inSecretTerms(issue: ConfigIssue): ConfigIssue {
  return isMissingSecretIssue(issue)
    ? {
        path: issue.path,
        message: issue.message.replace('is not defined in secrets.env', 'is not a key of the Secret'),
      }
    : issue;
}

/**
 * Validates spec.config with the Secret's keys as the secrets. Keys that cannot be placeholders (e.g. `tls.crt`)
 * are not secrets of the config and are left out rather than reported.
 */
export const validateNodeConfig: ConfigValidator = (rawConfig, secrets) => {
  const usable = Object.fromEntries(
    Object.entries(secrets).filter(([name, value]) => SECRET_NAME_PATTERN.test(name) && value !== ''),
  );
  const result = validateConfig(rawConfig, usable);
  const errors = result.errors.map(inSecretTerms);
  if (!result.ok || !result.config) return { ok: false, errors, warnings: result.warnings };
  return { ok: true, config: result.config, errors: [], warnings: result.warnings };
};

export function loadConfigJsonSchema(): Record<string, unknown> {
  return configJsonSchema();
}

export function formatIssues(issues: ConfigIssue[], limit = 10): string {
  const shown = issues.slice(0, limit).map((issue) => (issue.path ? `${issue.path}: ${issue.message}` : issue.message));
  if (issues.length > limit) shown.push(`... and ${issues.length - limit} more`);
  return shown.join('; ');
}

export const GATEWAYS = ['httpGateway', 'httpSignedDataGateway', 'oevGateway'] as const;

export function enabledGateways(config: NodeConfig): string[] {
  return GATEWAYS.filter((gateway) => config.nodeSettings[gateway]?.enabled === true);
}

export function gatewayServerPort(config: NodeConfig): number | undefined {
  const provider = config.nodeSettings.cloudProvider;
  return provider.type === 'local' ? provider.gatewayServerPort : undefined;
}
