// The policy scanner's skips on the objects the operator creates (docs/security.md, "Policy scanners"): each only
// while the pod fails its check, with a reason, beside a platform's own. scripts/checkov.ts runs checkov itself.
import type { V1CronJob, V1Deployment, V1PodSpec } from '@kubernetes/client-node';
import { expect } from 'chai';
import { buildWindowWorkerJob, buildWorkerJob } from '../../../../src/contract/shard.js';
import {
  type BuildInput,
  buildChildren,
  buildWorkerTemplate,
  type Child,
  SCANNER_CHECKS,
  scannerSkips,
} from '../../../../src/operator/builders/index.js';
import type { OracleNode } from '../../../../src/operator/resource.js';
import { inputFor } from './build-input.js';

const PINNED = `registry.example/oracle-node@sha256:${'a'.repeat(64)}`;
const { cpuLimit, digest, pullPolicy, secretsAsEnv, apiToken, networkPolicy } = SCANNER_CHECKS;

/** The checks an object's annotations skip, each with its reason: `checkov.io/skipN: <check>=<reason>`. */
function skipped(annotations: Record<string, string> | undefined): Record<string, string> {
  const skips: Record<string, string> = {};
  for (const [key, value] of Object.entries(annotations ?? {})) {
    if (!key.startsWith('checkov.io/skip')) continue;
    // checkov splits the value at every '=': a reason holding one would crash its parser.
    const parts = value.split('=');
    expect(parts, `${key}: ${value}`).to.have.length(2);
    expect(parts[1]!.trim(), `${key}: a reason`).not.to.equal('');
    skips[parts[0]!] = parts[1]!;
  }
  return skips;
}

const objects = (input: BuildInput) => {
  const children = buildChildren(input);
  const find = <T>(kind: string) => children.find((c) => c.object.kind === kind)!.object as T & Child;
  const template = buildWorkerTemplate(input);
  return {
    coordinator: find<V1CronJob>('CronJob'),
    gateway: find<V1Deployment>('Deployment'),
    template,
    perPoll: buildWorkerJob(template, { name: 'w-c1', shardCount: 1, concurrency: 1, chainId: '1' }),
    window: buildWindowWorkerJob(template, {
      name: 'w-w1',
      parallelism: 1,
      activeDeadlineSeconds: 60,
      coordinatorUrl: 'http://10.0.0.1:8090',
      credential: 'c',
    }),
  };
};

const hardened = (node: OracleNode) => {
  node.spec.image = PINNED;
  node.spec.resources = { ...node.spec.resources, limits: { ...node.spec.resources?.limits, cpu: '1' } };
  node.spec.secretRef = { name: node.spec.secretRef!.name, as: 'Files' };
};

describe('operator builders: policy scanner skips', () => {
  it('skips on each object exactly the checks its pod fails with the defaults, the token only where the pod calls the API', () => {
    const built = objects(inputFor('full-multi-chain'));
    const pod = [cpuLimit, digest, pullPolicy, secretsAsEnv, networkPolicy];
    expect(Object.keys(skipped(built.coordinator.metadata.annotations))).to.have.members([...pod, apiToken]);
    expect(Object.keys(skipped(built.gateway.metadata.annotations))).to.have.members(pod);
    expect(Object.keys(skipped(built.template.annotations))).to.have.members(pod);
    // Both Jobs the coordinator makes from the template carry them (beside the per-poll Job's chain id).
    expect(skipped(built.perPoll.metadata!.annotations)).to.deep.equal(skipped(built.template.annotations));
    expect(built.perPoll.metadata!.annotations).to.include({ 'oracle-node.io/chain-id': '1' });
    expect(skipped(built.window.metadata!.annotations)).to.deep.equal(skipped(built.template.annotations));
  });

  it('drops the skip of every check a setting satisfies: an image pinned by digest, a CPU limit, the keys as files', () => {
    const built = objects(inputFor('full-multi-chain', hardened));
    expect(Object.keys(skipped(built.coordinator.metadata.annotations))).to.have.members([apiToken, networkPolicy]);
    expect(Object.keys(skipped(built.gateway.metadata.annotations))).to.have.members([networkPolicy]);
    expect(Object.keys(skipped(built.template.annotations))).to.have.members([networkPolicy]);
  });

  it('keeps the pull policy skip off an image pinned by digest and off pullPolicy Always', () => {
    const always = objects(inputFor('full-multi-chain', (node) => (node.spec.imagePullPolicy = 'Always')));
    expect(Object.keys(skipped(always.gateway.metadata.annotations)))
      .to.include(digest)
      .and.not.include(pullPolicy);
  });

  it("numbers its skips after a platform's own from spec.inheritedMetadata and never replaces them", () => {
    const built = objects(
      inputFor('full-multi-chain', (node) => {
        node.spec.inheritedMetadata = { annotations: { 'checkov.io/skip1': 'CKV_K8S_29=the platform says so' } };
      }),
    );
    const annotations = built.gateway.metadata.annotations!;
    expect(annotations['checkov.io/skip1']).to.equal('CKV_K8S_29=the platform says so');
    expect(Object.keys(skipped(annotations))).to.have.members([
      'CKV_K8S_29',
      cpuLimit,
      digest,
      pullPolicy,
      secretsAsEnv,
      networkPolicy,
    ]);
  });

  it('never skips the token check of a pod that mounts a token without saying which calls need it', () => {
    const pod: V1PodSpec = {
      containers: [{ name: 'x', image: PINNED, resources: { limits: { cpu: '1' } } }],
      automountServiceAccountToken: true,
    };
    expect(Object.keys(skipped(scannerSkips(pod, { secretsAsEnv: 'n/a' })))).to.deep.equal([networkPolicy]);
    expect(Object.keys(skipped(scannerSkips(pod, { secretsAsEnv: 'n/a', apiToken: 'it calls the API' })))).to.include(
      apiToken,
    );
  });
});
