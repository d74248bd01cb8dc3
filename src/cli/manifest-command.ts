import { readFile } from 'node:fs/promises';
import { errorMessage } from '../common/errors.js';
import { parseSecretsEnv } from '../config/index.js';
import { validateFeedConfig } from '../feed/validate.js';
import { MAX_NAME_AND_STAGE } from '../operator/crd.js';
import { type CliIo, parseCommandArgs, processIo, usageError } from './args.js';
import { invalidText } from './issue-lines.js';
import {
  createSecretCommand,
  DNS_LABEL,
  DNS_SUBDOMAIN,
  loopbackUrlPaths,
  manifestObjects,
  manifestYaml,
  namesKubectlReadsDifferently,
  resumeCommand,
} from './manifest.js';
import type { Subcommand } from './subcommand.js';
import { issueLine, printValidation, reportUnreadable, validateFiles } from './validate-command.js';

const USAGE = `Usage: oracle-node manifest -c <config.json> -s <secrets.env> --name <NAME> [-n <NAMESPACE>]
                            [--secret-name <NAME>] [--omit-secret] [--suspended] [--feed]

Validates config.json with secrets.env as \`oracle-node validate\` does, then prints the Secret and the
OracleNode of this deployment as YAML, for \`kubectl apply -f -\` or a Git repository.
  -c, --config       path of config.json, put under spec.config as written
  -s, --secrets      path of secrets.env; each NAME=value line becomes a key of the Secret
      --name         name of the OracleNode (lowercase a-z, 0-9, '-'; with the stage at most ${MAX_NAME_AND_STAGE} characters)
  -n, --namespace    namespace of both objects (default: none, kubectl's current namespace)
      --secret-name  name of the Secret (default: <name>-secrets)
      --omit-secret  leave the Secret out (a vault, sealed or external secrets provide it): the kubectl
                     command that creates it from secrets.env is printed on stderr instead
      --suspended    the OracleNode's coordinator suspended (spec.coordinator.suspend: true): apply it while the
                     old deployment still serves, stop that one, then resume with the kubectl patch printed
                     on stderr (docs/migrating.md)
      --feed         config.json is an Airnode feed's (@api3/airnode-feed 3.x): validated as \`oracle-node feed\`
                     does, printed as an AirnodeFeed (docs/feeds.md)
Exit codes: 0 printed, 1 invalid config (stdout empty, errors on stderr as validate prints them),
2 usage or I/O error.
`;

type ManifestOptions = {
  config?: string | undefined;
  secrets?: string | undefined;
  name?: string | undefined;
  namespace?: string | undefined;
  'secret-name'?: string | undefined;
  'omit-secret'?: boolean | undefined;
  suspended?: boolean | undefined;
  feed?: boolean | undefined;
  help?: boolean | undefined;
};

/** The reason an option's value cannot name a Kubernetes object, or undefined when it can. */
function nameProblem(values: ManifestOptions): string | undefined {
  if (!values.name) return 'Missing --name <NAME>';
  if (!DNS_LABEL.test(values.name) || values.name.length > 63)
    return `--name ${values.name} is not a valid name: lowercase a-z, 0-9 and '-', starting and ending with a letter or digit`;
  if (values.namespace !== undefined && (!DNS_LABEL.test(values.namespace) || values.namespace.length > 63))
    return `-n ${values.namespace} is not a valid namespace: lowercase a-z, 0-9 and '-', at most 63 characters`;
  const secretName = values['secret-name'];
  if (secretName !== undefined && (!DNS_SUBDOMAIN.test(secretName) || secretName.length > 253))
    return `--secret-name ${secretName} is not a valid Secret name: lowercase a-z, 0-9, '-' and '.'`;
  if (values.suspended && values.feed)
    return '--suspended applies to an OracleNode: an AirnodeFeed has no coordinator to suspend';
  if (values['omit-secret'] && values.secrets === undefined)
    return '--omit-secret needs -s <secrets.env>: the printed command creates the Secret from it';
  return undefined;
}

export async function runManifest(argv: string[], io: CliIo = processIo): Promise<number> {
  const parsed = parseCommandArgs(
    argv,
    {
      config: { type: 'string', short: 'c' },
      secrets: { type: 'string', short: 's' },
      name: { type: 'string' },
      namespace: { type: 'string', short: 'n' },
      'secret-name': { type: 'string' },
      'omit-secret': { type: 'boolean' },
      suspended: { type: 'boolean' },
      feed: { type: 'boolean' },
    },
    USAGE,
    { io },
  );
  if ('exitCode' in parsed) return parsed.exitCode;
  const values: ManifestOptions = parsed.values;
  if (!values.config) return usageError(io, 'Missing -c <config.json>', USAGE);
  const problem = nameProblem(values);
  if (problem) return usageError(io, problem, USAGE);
  const name = values.name!;

  if (values.feed) return feedManifest(io, values as ManifestOptions & { config: string; name: string });

  const checked = await validateFiles(values.config, values.secrets);
  if (!checked.readable) return reportUnreadable(io, false, 2, checked.message);
  const { result } = checked;
  if (!result.ok || !result.config) return printValidation(io, false, values.config, result);
  const stage = result.config.nodeSettings.stage;
  if (name.length + stage.length > MAX_NAME_AND_STAGE) {
    return usageError(
      io,
      `--name ${name} with the stage ${stage} is ${name.length + stage.length} characters; at most ${MAX_NAME_AND_STAGE} fit (children are named <name>-<stage>-coordinator)`,
      USAGE,
    );
  }

  let text = '';
  for (const issue of result.warnings) text += issueLine('warning', issue);
  for (const path of loopbackUrlPaths(result.config)) {
    text += issueLine('warning', {
      path,
      message:
        'a loopback address (localhost, 127.x.x.x): in a pod it is the pod itself, so this cannot work there; use an address the cluster reaches',
    });
  }
  const secretName = values['secret-name'] ?? `${name}-secrets`;
  const secrets = checked.secretsText === undefined ? undefined : parseSecretsEnv(checked.secretsText).secrets;
  const inline = secrets !== undefined && !values['omit-secret'];
  if (secrets !== undefined && !inline) {
    text += `The Secret ${secretName} is not in the manifest; create it before applying, from secrets.env:\n`;
    text += `  ${createSecretCommand(secretName, values.secrets!, values.namespace)}\n`;
    text += `or from your secret store, with the keys: ${Object.keys(secrets).join(', ') || '(none)'}\n`;
    const different = namesKubectlReadsDifferently(checked.secretsText!, secrets);
    if (different.length > 0)
      text += `kubectl --from-env-file reads ${different.join(', ')} differently from secrets.env (it keeps quotes, trailing spaces and comments, and refuses "export"): write those lines as NAME=value\n`;
  }
  if (values.suspended) {
    text += `The coordinator is suspended: once the old deployment is stopped, resume it with:\n  ${resumeCommand(name, values.namespace)}\n`;
  }
  if (text) io.stderr(text);

  const objects = manifestObjects({
    name,
    namespace: values.namespace,
    suspended: values.suspended,
    config: JSON.parse(checked.configText!.replace(/^\uFEFF/, '')),
    ...(secrets === undefined ? {} : { secret: { name: secretName, data: inline ? secrets : undefined } }),
  });
  const header = inline
    ? [`The Secret holds the values of ${values.secrets}: keep this out of Git unless it is encrypted.`]
    : [];
  io.stdout(manifestYaml(objects, header));
  return 0;
}

/**
 * --feed: an Airnode feed's config.json and secrets.env, validated by the feed's own validator (every error with its
 * path, as `oracle-node feed` prints them), printed as the Secret and an AirnodeFeed.
 */
async function feedManifest(io: CliIo, values: ManifestOptions & { config: string; name: string }): Promise<number> {
  let configText: string;
  let secretsText: string | undefined;
  try {
    configText = await readFile(values.config, 'utf8');
    secretsText = values.secrets === undefined ? undefined : await readFile(values.secrets, 'utf8');
  } catch (error) {
    return reportUnreadable(io, false, 2, errorMessage(error));
  }
  let config: unknown;
  try {
    config = JSON.parse(configText.replace(/^\uFEFF/, ''));
  } catch (error) {
    io.stderr(`${values.config} is not JSON: ${errorMessage(error)}\n`);
    return 1;
  }
  const secrets = secretsText === undefined ? undefined : parseSecretsEnv(secretsText).secrets;
  const result = await validateFeedConfig(config, secrets ?? {});
  if (!result.ok) {
    io.stderr(invalidText(values.config, result.errors));
    return 1;
  }
  const secretName = values['secret-name'] ?? `${values.name}-secrets`;
  const inline = secrets !== undefined && !values['omit-secret'];
  if (secrets !== undefined && !inline)
    io.stderr(
      `The Secret ${secretName} is not in the manifest; create it before applying, from secrets.env:\n  ${createSecretCommand(secretName, values.secrets!, values.namespace)}\n`,
    );
  const objects = manifestObjects({
    name: values.name,
    namespace: values.namespace,
    kind: 'AirnodeFeed',
    config,
    ...(secrets === undefined ? {} : { secret: { name: secretName, data: inline ? secrets : undefined } }),
  });
  const header = inline
    ? [`The Secret holds the values of ${values.secrets}: keep this out of Git unless it is encrypted.`]
    : [];
  io.stdout(manifestYaml(objects, header));
  return 0;
}

export const manifestCommand: Subcommand = {
  run: (argv) => runManifest(argv),
};
