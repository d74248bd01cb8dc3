// Reads a rendered PrometheusRule (helm template --show-only templates/prometheusrule.yaml) on stdin and writes its
// rule groups as a Prometheus rule file on stdout, for promtool (make test-alerts).
//   helm template ... | node --import tsx scripts/prometheus-rules.ts > rules.yaml
import { readFileSync } from 'node:fs';
import yaml from 'js-yaml';

const rule = yaml.load(readFileSync(0, 'utf8')) as { kind?: string; spec?: { groups?: unknown[] } } | undefined;
if (rule?.kind !== 'PrometheusRule' || !Array.isArray(rule.spec?.groups)) {
  console.error('prometheus-rules: stdin is not a PrometheusRule with spec.groups');
  process.exit(1);
}
process.stdout.write(yaml.dump({ groups: rule.spec.groups }, { lineWidth: -1 }));
