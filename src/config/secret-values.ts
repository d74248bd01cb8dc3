// Every value of a loaded node that must never be printed: the secrets.env values, and the config's secret
// fields even when written inline (mnemonic, API credentials, heartbeat key, provider and heartbeat URLs, and
// the user name and password inside a URL). A pure list: the processes register it with their log redactor.
import type { Config } from './schema.js';

/** The credentials of a URL (`https://user:pass@host/`), decoded, or nothing. */
export function urlCredentials(url: string): string[] {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [];
  }
  const parts: string[] = [];
  for (const part of [parsed.username, parsed.password]) {
    if (!part) continue;
    parts.push(part);
    try {
      parts.push(decodeURIComponent(part));
    } catch {
      // Malformed escapes: the raw form is registered already.
    }
  }
  return parts;
}

export function secretValuesOf(config: Config | undefined, secrets: Record<string, string> = {}): string[] {
  const values = new Set<string>(Object.values(secrets).filter((value) => typeof value === 'string'));
  if (config) {
    values.add(config.nodeSettings.nodeWalletMnemonic);
    const heartbeat = config.nodeSettings.heartbeat;
    if (heartbeat.enabled) {
      values.add(heartbeat.apiKey);
      for (const part of urlCredentials(heartbeat.url)) values.add(part);
    }
    for (const credential of config.apiCredentials) values.add(credential.securitySchemeValue);
    for (const chain of config.chains) {
      for (const provider of Object.values(chain.providers)) {
        values.add(provider.url);
        for (const part of urlCredentials(provider.url)) values.add(part);
      }
    }
  }
  for (const value of [...values]) for (const part of urlCredentials(value)) values.add(part);
  return [...values].filter((value) => typeof value === 'string' && value !== '');
}
