// What a node's children are named, and whose they are, on the real test control plane: the operator never takes
// over an object it did not create (the user's Secret named like the node key, another node's children named
// alike), the node's gateway Service outlives a stage rollout and is switched only to a Ready gateway, and a
// mnemonic rotated in place is held until a new stage rolls the new identity out.
import type { KubernetesObject, V1Secret, V1Service } from '@kubernetes/client-node';
import { expect } from 'chai';
import { API_VERSION, KIND, type OracleNode } from '../../../src/operator/resource.js';
import { nodeWallet } from '../../../src/protocol/wallet.js';
import { apply, objects, sleep, waitFor } from '../support/cluster.js';
import { condition, read, readNode, sampleDocs, useOperator } from './support.js';

const DEV_ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
const ROTATED_MNEMONIC = 'legal winner thank year wave sausage worth useful legal winner thank yellow';

type Settings = { stage: string };
const settingsOf = (node: OracleNode) => node.spec.config.nodeSettings as Settings;

describe('OracleNode child names and ownership (integration)', function () {
  this.timeout(240_000);
  const suite = useOperator('onode-names');
  const ns = () => suite.namespace;
  const { cronJob, deployment, editNode, nodeWhere, readyNode } = suite;
  const service = (name: string) => read<V1Service>('v1', 'Service', ns(), name);
  const secret = (name: string) => read<V1Secret>('v1', 'Secret', ns(), name);

  const warningEvent = (object: string, reason: string) =>
    waitFor(
      async () => {
        const list = (await objects.list('v1', 'Event', ns())) as {
          items: { reason?: string; type?: string; message?: string; involvedObject?: { name?: string } }[];
        };
        return list.items.find((e) => e.reason === reason && e.type === 'Warning' && e.involvedObject?.name === object);
      },
      30_000,
      { description: `a Warning Event ${reason} on ${object}` },
    );

  it("the user's Secret named <node>-signing-key is never owned, written or deleted: NameConflict, and it outlives the node", async () => {
    const { node, secret: users } = sampleDocs('full-multi-chain', ns());
    node.metadata.name = 'own';
    users.metadata!.name = 'own-signing-key';
    node.spec.secretRef = { name: 'own-signing-key' };
    await apply(users);
    const before = (await secret('own-signing-key'))!;
    await apply(node);
    const stalled = await nodeWhere(
      'own',
      (live) => condition(live, 'ConfigValid')?.reason === 'NameConflict',
      'NameConflict',
    );
    expect(condition(stalled, 'ConfigValid')!.message).to.contain(
      'Secret own-signing-key (no controller: not created by the operator)',
    );
    expect(condition(stalled, 'Stalled')).to.include({ status: 'True', reason: 'NameConflict' });
    const event = await warningEvent('own', 'NameConflict');
    expect(event.message).to.contain('Secret own-signing-key');
    const after = (await secret('own-signing-key'))!;
    expect(after.metadata!.ownerReferences).to.equal(undefined);
    expect(after.metadata!.resourceVersion).to.equal(before.metadata!.resourceVersion);
    expect(Object.keys(after.data ?? {})).to.not.include('ORACLE_NODE_SIGNING_KEY');
    expect(await cronJob('own-prod-a-coordinator')).to.equal(undefined);
    await objects.delete({ apiVersion: API_VERSION, kind: KIND, metadata: { name: 'own', namespace: ns() } });
    await waitFor(async () => (await readNode(ns(), 'own')) === undefined, 60_000, { description: 'the node gone' });
    expect((await secret('own-signing-key'))?.data).to.deep.equal(before.data);
  });

  it("node a with stage b-c and node a-b with stage c: the second is told which objects are the first one's, and nothing of a changes", async () => {
    const { node: a, secret: secretA } = sampleDocs('minimal', ns());
    a.metadata.name = 'a';
    settingsOf(a).stage = 'b-c';
    await apply(secretA);
    await apply(a);
    const readyA = await readyNode('a');
    const ownerOf = async (name: string) => (await cronJob(name))?.metadata?.ownerReferences?.[0]?.uid;
    expect(await ownerOf('a-b-c-coordinator')).to.equal(readyA.metadata.uid);
    const configBefore = (await read<KubernetesObject>('v1', 'ConfigMap', ns(), 'a-b-c-config'))!;

    const { node: ab } = sampleDocs('minimal', ns());
    ab.metadata.name = 'a-b';
    settingsOf(ab).stage = 'c';
    await apply(ab);
    const refused = await nodeWhere(
      'a-b',
      (live) => condition(live, 'ConfigValid')?.reason === 'NameConflict',
      'NameConflict',
    );
    const message = condition(refused, 'ConfigValid')!.message;
    expect(message).to.contain('ConfigMap a-b-c-config (controlled by OracleNode a)');
    expect(message).to.contain('CronJob a-b-c-coordinator (controlled by OracleNode a)');
    expect(condition(refused, 'Ready')).to.include({ status: 'False' });
    await warningEvent('a-b', 'NameConflict');
    // a keeps every child as it was, and a-b created none (its own cache ConfigMap neither: all or nothing).
    expect(await ownerOf('a-b-c-coordinator')).to.equal(readyA.metadata.uid);
    const configAfter = (await read<KubernetesObject>('v1', 'ConfigMap', ns(), 'a-b-c-config'))!;
    expect(configAfter.metadata!.resourceVersion).to.equal(configBefore.metadata!.resourceVersion);
    expect(await read('v1', 'ConfigMap', ns(), 'a-b-cache')).to.equal(undefined);
    expect(condition(await readNode(ns(), 'a'), 'Ready')).to.include({ status: 'True' });
  });

  it('a stage rollout keeps <node>-gateway and its ClusterIP, and switches its selector only once the new gateway is Ready', async () => {
    const { node, secret: nodeSecret } = sampleDocs('gateways-only', ns());
    node.metadata.name = 'gw';
    nodeSecret.metadata!.name = 'gw-secrets';
    node.spec.secretRef = { name: 'gw-secrets' };
    await apply(nodeSecret);
    await apply(node);
    await readyNode('gw');
    const first = (await service('gw-gateway'))!;
    const oldStage = settingsOf(node).stage;
    expect(first.spec!.selector).to.include({ 'oracle-node.io/stage': oldStage });
    expect(first.spec!.clusterIP).to.match(/^\d+\.\d+\.\d+\.\d+$/);
    expect(await service(`gw-${oldStage}-gateway`)).to.equal(undefined);
    expect((await readNode(ns(), 'gw'))!.status!.gatewayUrls!.httpGateway).to.match(
      new RegExp(`^http://gw-gateway\\.${ns()}\\.svc\\.cluster\\.local:`),
    );

    // The new stage's gateway cannot be scheduled: it never becomes Ready, and the Service stays on the old stage.
    await editNode('gw', (live) => {
      settingsOf(live).stage = 'next';
      live.spec.gateway = { ...live.spec.gateway, nodeSelector: { 'oracle-node.test/nowhere': 'true' } };
    });
    await nodeWhere(
      'gw',
      (live) =>
        condition(live, 'Progressing')?.message.includes('waiting for gateway gw-next-gateway to be Ready') ?? false,
      'waiting for the new gateway',
    );
    await sleep(2000);
    const held = (await service('gw-gateway'))!;
    expect(held.spec!.selector).to.include({ 'oracle-node.io/stage': oldStage });
    expect(await deployment(`gw-${oldStage}-gateway`)).to.not.equal(undefined);

    // Schedulable again: once it is Ready the Service selects it, then the old stage goes.
    const violations: string[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        // The Service first, then the Deployment: the switch comes after the gateway is available, so a Deployment
        // read after the Service shows what the operator saw; read together, a correct switch could look early.
        const live = await service('gw-gateway');
        const next = await deployment('gw-next-gateway');
        const selected = live?.spec?.selector?.['oracle-node.io/stage'];
        if (!live) violations.push('the Service was gone');
        else if (live.metadata!.uid !== first.metadata!.uid) violations.push('the Service was re-created');
        if (selected === 'next' && (next?.status?.availableReplicas ?? 0) < (next?.spec?.replicas ?? 1))
          violations.push('the Service selected the new stage before its gateway was available');
        await sleep(100);
      }
    })();
    await editNode('gw', (live) => {
      const { nodeSelector: _nowhere, ...gateway } = live.spec.gateway ?? {};
      live.spec.gateway = gateway;
    });
    const rolled = await nodeWhere(
      'gw',
      (live) => condition(live, 'Ready')?.status === 'True' && live.status?.previousStage === undefined,
      'the rollout done',
    );
    watching = false;
    await watcher;
    expect(violations).to.deep.equal([]);
    expect(rolled.status!.stage).to.equal('next');
    const last = (await service('gw-gateway'))!;
    expect(last.metadata!.uid).to.equal(first.metadata!.uid);
    expect(last.spec!.clusterIP).to.equal(first.spec!.clusterIP);
    expect(last.spec!.selector).to.include({ 'oracle-node.io/stage': 'next' });
    expect(await deployment(`gw-${oldStage}-gateway`)).to.equal(undefined);
  });

  it('a mnemonic rotated without a new stage is Stalled with both addresses and an Event, the coordinator held; with a new stage it rolls', async () => {
    const { node, secret: nodeSecret } = sampleDocs('minimal', ns());
    node.metadata.name = 'rot';
    nodeSecret.metadata!.name = 'rot-secrets';
    node.spec.secretRef = { name: 'rot-secrets' };
    await apply(nodeSecret);
    await apply(node);
    const ready = await readyNode('rot');
    expect(ready.status!.nodeAddress).to.equal(DEV_ADDRESS);
    const stage = settingsOf(node).stage;
    const templateBefore = (await cronJob(`rot-${stage}-coordinator`))!.spec!.jobTemplate;

    (nodeSecret as { stringData: Record<string, string> }).stringData.NODE_WALLET_MNEMONIC = ROTATED_MNEMONIC;
    await apply(nodeSecret);
    const rotatedAddress = nodeWallet(ROTATED_MNEMONIC).address;
    const stalled = await nodeWhere(
      'rot',
      (live) => condition(live, 'ConfigValid')?.reason === 'NodeAddressChanged',
      'NodeAddressChanged',
    );
    expect(condition(stalled, 'ConfigValid')!.message).to.contain(rotatedAddress).and.contain(DEV_ADDRESS);
    expect(condition(stalled, 'Stalled')).to.include({ status: 'True', reason: 'NodeAddressChanged' });
    expect(stalled.status!.nodeAddress).to.equal(DEV_ADDRESS);
    const event = await warningEvent('rot', 'NodeAddressChanged');
    expect(event.message).to.contain(rotatedAddress).and.contain(DEV_ADDRESS);
    const held = await waitFor(
      async () => {
        const live = await cronJob(`rot-${stage}-coordinator`);
        return live?.spec?.suspend === true ? live : undefined;
      },
      30_000,
      { description: 'the coordinator suspended' },
    );
    expect(held.spec!.jobTemplate).to.deep.equal(templateBefore);

    await editNode('rot', (live) => {
      settingsOf(live).stage = 'rotated';
    });
    const rolled = await nodeWhere(
      'rot',
      (live) =>
        condition(live, 'Ready')?.status === 'True' &&
        live.status?.stage === 'rotated' &&
        live.status?.previousStage === undefined,
      'the new stage rolled out',
    );
    expect(rolled.status!.nodeAddress).to.equal(rotatedAddress);
    expect(condition(rolled, 'Stalled')).to.equal(undefined);
    expect((await cronJob('rot-rotated-coordinator'))!.spec!.suspend).to.equal(false);
    expect(await cronJob(`rot-${stage}-coordinator`)).to.equal(undefined);
  });
});
