// Where the keys go in the pods the operator builds: a gateway never gets the mnemonic, only the node key derived
// from it (in the operator's own Secret), and spec.secretRef.as Files hands each workload its keys as a read-only
// volume instead of variables.
import type { V1CronJob, V1Deployment, V1PodSpec, V1Secret, V1Volume } from '@kubernetes/client-node';
import { expect } from 'chai';
import { secretScopes } from '../../../../src/config/index.js';
import { ENV, SECRETS_DIR } from '../../../../src/contract/pods.js';
import {
  type BuildInput,
  buildChildren,
  buildWorkerTemplate,
  type Child,
  childNames,
  secretHashesOf,
} from '../../../../src/operator/builders/index.js';
import { ANNOTATIONS, type OracleNode } from '../../../../src/operator/resource.js';
import { deriveNodeAddress, walletFromPrivateKey } from '../../../../src/protocol/wallet.js';
import { loadSample } from '../fake-kube.js';
import { inputFor } from './build-input.js';

const MNEMONIC_KEY = 'NODE_WALLET_MNEMONIC';
const GATEWAYS = ['httpGateway', 'httpSignedDataGateway', 'oevGateway'] as const;
const MNEMONIC = 'test test test test test test test test test test test junk';
const ROTATED_MNEMONIC = 'legal winner thank year wave sausage worth useful legal winner thank yellow';

/** The full sample with only one gateway on. */
function onlyGateway(gateway: (typeof GATEWAYS)[number], edit?: (node: OracleNode) => void): BuildInput {
  return inputFor('full-multi-chain', (node) => {
    const settings = node.spec.config['nodeSettings'] as Record<string, unknown>;
    for (const other of GATEWAYS) if (other !== gateway) settings[other] = { enabled: false };
    edit?.(node);
  });
}

const filesMode = (node: OracleNode) => {
  node.spec.secretRef = { name: node.spec.secretRef!.name, as: 'Files' };
};

const gatewayPod = (children: { object: Child }[]): V1PodSpec =>
  (children.find((c) => c.object.kind === 'Deployment')!.object as V1Deployment).spec!.template.spec!;
const coordinatorPod = (children: { object: Child }[]): V1PodSpec =>
  (children.find((c) => c.object.kind === 'CronJob')!.object as V1CronJob).spec!.jobTemplate.spec!.template.spec!;
const signingKeySecret = (children: { object: Child }[]) =>
  children.find((c) => c.object.kind === 'Secret')?.object as (V1Secret & Child) | undefined;

/** Every Secret key a pod spec reads, as `secret/key`, by any route (variables, volumes, projections). */
function secretReferences(pod: V1PodSpec): string[] {
  const refs: string[] = [];
  for (const container of pod.containers) {
    expect(container.envFrom ?? [], 'envFrom').to.deep.equal([]);
    for (const variable of container.env ?? []) {
      const ref = variable.valueFrom?.secretKeyRef;
      if (ref) refs.push(`${ref.name}/${ref.key}`);
    }
  }
  for (const volume of pod.volumes ?? []) {
    if (volume.secret)
      refs.push(...(volume.secret.items ?? [{ key: '*' }]).map((i) => `${volume.secret!.secretName}/${i.key}`));
    for (const source of volume.projected?.sources ?? [])
      if (source.secret)
        refs.push(...(source.secret.items ?? [{ key: '*' }]).map((i) => `${source.secret!.name}/${i.key}`));
  }
  return refs.sort();
}

describe('operator builders: where the keys go', () => {
  describe('the gateway gets the node key, never the mnemonic', () => {
    for (const gateway of GATEWAYS) {
      it(`${gateway} on: the gateway pod template reads no mnemonic, by variable or volume, in either secretRef.as`, () => {
        for (const edit of [undefined, filesMode]) {
          const children = buildChildren(onlyGateway(gateway, edit));
          const pod = gatewayPod(children);
          const refs = secretReferences(pod);
          expect(
            refs.filter((ref) => ref.endsWith(`/${MNEMONIC_KEY}`)),
            `${gateway}: ${refs}`,
          ).to.deep.equal([]);
          expect(JSON.stringify(pod)).not.to.include(MNEMONIC);
          const signs = gateway !== 'httpGateway';
          expect(refs.includes('full-signing-key/ORACLE_NODE_SIGNING_KEY'), `${gateway}: ${refs}`).to.equal(signs);
          // The derived key is a child only while a gateway signs with it.
          expect(signingKeySecret(children) !== undefined).to.equal(signs);
          // The coordinator still holds the mnemonic: it signs for the sponsor wallets.
          expect(secretReferences(coordinatorPod(children))).to.include(`full-secrets/${MNEMONIC_KEY}`);
        }
      });
    }

    it("the node key's Secret: the mnemonic's m/44'/60'/0'/0/0 key, owned by the node, labelled, one for all stages", () => {
      const input = inputFor('full-multi-chain');
      const secret = signingKeySecret(buildChildren(input))!;
      expect(secret.metadata.name).to.equal(childNames('full', 'prod-a').signingKey).and.equal('full-signing-key');
      expect(Object.keys(secret.data!)).to.deep.equal([ENV.signingKey]);
      const key = Buffer.from(secret.data![ENV.signingKey]!, 'base64').toString('utf8');
      expect(walletFromPrivateKey(key)!.address).to.equal(deriveNodeAddress(MNEMONIC));
      expect(secret.metadata.labels).to.include({
        'app.kubernetes.io/managed-by': 'oracle-node-operator',
        'app.kubernetes.io/component': 'signing-key',
        'oracle-node.io/name': 'full',
      });
      expect(secret.metadata.labels).not.to.have.property('oracle-node.io/stage');
      expect(secret.metadata.ownerReferences).to.deep.equal([
        {
          apiVersion: 'oracle-node.io/v1alpha1',
          kind: 'OracleNode',
          name: 'full',
          uid: 'uid-full-multi-chain',
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
      // Nothing but the Secret's data carries the key: no annotation, no other child.
      const others = buildChildren(input).filter((c) => c.object !== secret);
      expect(JSON.stringify(others)).not.to.include(key.slice(2));
      expect(JSON.stringify(secret.metadata)).not.to.include(key.slice(2));
    });

    it('a rotated mnemonic changes the node key Secret and rolls the gateway and the coordinator, not the workers', () => {
      const { node, secret } = loadSample('full-multi-chain');
      const data = (secret as { data: Record<string, string> }).data;
      const build = (mnemonic: string) => {
        const secretData = { ...data, [MNEMONIC_KEY]: Buffer.from(mnemonic).toString('base64') };
        const input = inputFor('full-multi-chain', undefined, 'unused', { [MNEMONIC_KEY]: mnemonic });
        const children = buildChildren({ ...input, secretHashes: secretHashesOf(node.spec.config, secretData) });
        const annotation = (pod: { metadata?: { annotations?: Record<string, string> } }) =>
          pod.metadata!.annotations![ANNOTATIONS.secretHash];
        return {
          key: signingKeySecret(children)!.data![ENV.signingKey],
          gateway: annotation(
            (children.find((c) => c.object.kind === 'Deployment')!.object as V1Deployment).spec!.template,
          ),
          coordinator: annotation(
            (children.find((c) => c.object.kind === 'CronJob')!.object as V1CronJob).spec!.jobTemplate.spec!.template,
          ),
          worker: annotation(buildWorkerTemplate(input).template),
        };
      };
      const before = build(MNEMONIC);
      const after = build(ROTATED_MNEMONIC);
      expect(after.key).not.to.equal(before.key);
      expect(after.gateway).not.to.equal(before.gateway);
      expect(after.coordinator).not.to.equal(before.coordinator);
      expect(after.worker).to.equal(before.worker);
      // The same mnemonic builds the same templates: nothing rolls on a resync.
      expect(build(MNEMONIC)).to.deep.equal(before);
    });
  });

  describe('spec.secretRef.as Files: the keys as a read-only volume', () => {
    const secretsVolume = (pod: V1PodSpec): V1Volume | undefined => pod.volumes?.find((v) => v.name === 'secrets');

    it('no secretKeyRef variable; each pod a 0400 volume with exactly the keys of its scope, mounted read-only', () => {
      const input = inputFor('full-multi-chain', filesMode);
      const children = buildChildren(input);
      const scopes = secretScopes(input.rawConfig);
      const pods = {
        coordinator: coordinatorPod(children),
        gateway: gatewayPod(children),
        worker: buildWorkerTemplate(input).template.spec!,
      };
      for (const [workload, pod] of Object.entries(pods) as [keyof typeof pods, V1PodSpec][]) {
        const container = pod.containers[0]!;
        expect(
          container.env!.filter((v) => v.valueFrom?.secretKeyRef),
          workload,
        ).to.deep.equal([]);
        const volume = secretsVolume(pod)!;
        expect(volume.projected!.defaultMode, workload).to.equal(0o400);
        const [userKeys, ...rest] = volume.projected!.sources!;
        expect(userKeys!.secret!.name).to.equal('full-secrets');
        expect(userKeys!.secret!.items, workload).to.deep.equal(scopes[workload].map((key) => ({ key, path: key })));
        // Only the gateway reads the derived node key, as a file of the same directory.
        expect(
          rest.map((source) => source.secret),
          workload,
        ).to.deep.equal(
          workload === 'gateway'
            ? [{ name: 'full-signing-key', items: [{ key: ENV.signingKey, path: ENV.signingKey }] }]
            : [],
        );
        expect(container.volumeMounts).to.deep.include({ name: 'secrets', mountPath: SECRETS_DIR, readOnly: true });
        expect(container.env).to.deep.include({ name: ENV.secretsDir, value: SECRETS_DIR });
      }
      expect(scopes.gateway).not.to.include(MNEMONIC_KEY);
    });

    it('a workload without keys gets no volume (an empty item list would project the whole Secret)', () => {
      // minimal: the worker references no key; gateways-only: the signing gateway holds only the node key.
      const minimal = inputFor('minimal', filesMode);
      const worker = buildWorkerTemplate(minimal).template.spec!;
      expect(secretsVolume(worker)).to.equal(undefined);
      expect(worker.containers[0]!.env!.map((v) => v.name)).not.to.include(ENV.secretsDir);
      expect(worker.containers[0]!.volumeMounts!.map((m) => m.name)).to.deep.equal(['config', 'tmp', 'shards']);
      expect(secretsVolume(coordinatorPod(buildChildren(minimal)))).not.to.equal(undefined);
      const gateway = gatewayPod(buildChildren(inputFor('gateways-only', filesMode)));
      expect(secretsVolume(gateway)!.projected!.sources).to.deep.equal([
        { secret: { name: 'gateways-signing-key', items: [{ key: ENV.signingKey, path: ENV.signingKey }] } },
      ]);
    });

    it('rotation rolls the same workloads as with variables: the pod templates carry the same secret hashes', () => {
      const { node, secret } = loadSample('full-multi-chain');
      const secretHashes = secretHashesOf(node.spec.config, (secret as { data: Record<string, string> }).data);
      const hashes = (edit?: (node: OracleNode) => void) => {
        const input = { ...inputFor('full-multi-chain', edit), secretHashes };
        const children = buildChildren(input);
        return [
          (children.find((c) => c.object.kind === 'Deployment')!.object as V1Deployment).spec!.template,
          (children.find((c) => c.object.kind === 'CronJob')!.object as V1CronJob).spec!.jobTemplate.spec!.template,
          buildWorkerTemplate(input).template,
        ].map((template) => template.metadata!.annotations![ANNOTATIONS.secretHash]);
      };
      expect(hashes(filesMode)).to.deep.equal(hashes());
    });
  });
});
