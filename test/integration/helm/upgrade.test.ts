// The CRD upgrades with the chart. A release of the chart whose CRD lacks one spec field (the previous release, as
// a platform team has it installed) serves an OracleNode; `helm upgrade` to the current chart updates the CRD, so the
// field is stored instead of pruned, and the node and its running workloads are untouched. `helm uninstall` then
// leaves the CRD (crds.keep), the OracleNode and its workloads in place.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PatchStrategy, type V1CronJob } from '@kubernetes/client-node';
import { expect } from 'chai';
import { API_VERSION, KIND, type OracleNode } from '../../../src/operator/resource.js';
import { condition, type RunningOperator, read, readNode, sampleDocs, startOperator } from '../operator/support.js';
import { apply, objects, uniqueName, useNamespace, waitFor } from '../support/cluster.js';
import { adoptCrd, CRD_NAME, chartDir, helm, kubectl, requireBinaries } from './support.js';

const NEW_FIELD = 'ttlSecondsAfterFinished'; // spec.worker.ttlSecondsAfterFinished

/** A copy of the chart as the previous release: version 0.0.1, its CRD without spec.worker.ttlSecondsAfterFinished. */
function previousChart(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ono-previous-chart-'));
  const chart = join(dir, 'oracle-node-operator');
  cpSync(chartDir, chart, { recursive: true });
  const crdPath = join(chart, 'templates/crd-oraclenodes.yaml');
  const lines = readFileSync(crdPath, 'utf8').split('\n');
  const at = lines.findIndex((l) => l.trim() === `${NEW_FIELD}:`);
  if (at < 0) throw new Error(`the chart's CRD has no ${NEW_FIELD}: pick another field for this test`);
  const indent = lines[at]!.search(/\S/);
  let end = at + 1;
  while (end < lines.length && lines[end]!.search(/\S/) > indent) end++;
  lines.splice(at, end - at);
  writeFileSync(crdPath, lines.join('\n'));
  const chartYaml = join(chart, 'Chart.yaml');
  writeFileSync(chartYaml, readFileSync(chartYaml, 'utf8').replace(/^version: .*$/m, 'version: 0.0.1'));
  return chart;
}

describe('Helm chart upgrade: the CRD is upgraded, nothing is pruned, uninstall keeps the CRD', function () {
  this.timeout(300_000);
  const ns = useNamespace('helm-upgrade');
  const release = uniqueName('ono-up');
  let previous = '';
  let operator: RunningOperator | undefined;

  before(() => {
    requireBinaries();
    previous = previousChart();
  });
  after(async () => {
    await operator?.stop();
    rmSync(join(previous, '..'), { recursive: true, force: true });
  });

  const ttlOf = async (name: string) =>
    ((await readNode(ns.name, name))?.spec.worker as { ttlSecondsAfterFinished?: number } | undefined)?.[NEW_FIELD];
  const crdHasField = async () => {
    const json = await kubectl(undefined, 'get', 'crd', CRD_NAME, '-o', 'json');
    const spec = JSON.parse(json).spec.versions[0].schema.openAPIV3Schema.properties.spec;
    return NEW_FIELD in (spec.properties.worker.properties ?? {});
  };
  // A merge patch, as kubectl edit, client-side apply and most GitOps tools write: the API server drops a field its
  // schema does not declare without an error (server-side apply would refuse it instead).
  const setTtl = (node: OracleNode, seconds: number) =>
    objects.patch(
      {
        apiVersion: API_VERSION,
        kind: KIND,
        metadata: { name: node.metadata.name, namespace: ns.name },
        spec: { worker: { [NEW_FIELD]: seconds } },
      } as unknown as OracleNode,
      undefined,
      undefined,
      undefined,
      undefined,
      PatchStrategy.MergePatch,
    );
  const ready = (name: string) =>
    waitFor(async () => condition(await readNode(ns.name, name), 'Ready')?.status === 'True', 120_000, {
      description: `OracleNode ${name} Ready`,
    });

  let node: OracleNode;
  let cronJobUid = '';
  let nodeUid = '';

  it('the previous release serves OracleNodes, and its CRD prunes the field it does not know', async () => {
    await adoptCrd(release, ns.name); // a CRD left by other suites or releases: this release takes it over
    await helm('install', release, previous, '--namespace', ns.name, '--wait', '--timeout', '180s');
    expect(await crdHasField()).to.equal(false);

    // The workloads come from the operator (in this process, as the chart's pods are kwok's stand-ins).
    operator = startOperator(ns.name);
    const sample = sampleDocs('minimal', ns.name);
    node = sample.node;
    await apply(sample.secret);
    await apply(node);
    await ready(node.metadata.name);
    const cronJob = await read<V1CronJob>('batch/v1', 'CronJob', ns.name, `${node.metadata.name}-dev-coordinator`);
    cronJobUid = cronJob?.metadata?.uid ?? '';
    nodeUid = (await readNode(ns.name, node.metadata.name))?.metadata.uid ?? '';
    expect(cronJobUid).to.not.equal('');

    await setTtl(node, 120);
    expect(await ttlOf(node.metadata.name), 'pruned by the previous CRD').to.equal(undefined);
  });

  it('helm upgrade to the current chart updates the CRD: the new field is stored, the node keeps running', async () => {
    await helm('upgrade', release, chartDir, '--namespace', ns.name, '--wait', '--timeout', '180s');
    expect(await crdHasField()).to.equal(true);
    const crd = JSON.parse(await kubectl(undefined, 'get', 'crd', CRD_NAME, '-o', 'json'));
    expect(crd.metadata.annotations?.['helm.sh/resource-policy']).to.equal('keep');

    await setTtl(node, 120);
    expect(await ttlOf(node.metadata.name), 'stored by the upgraded CRD').to.equal(120);

    // The same objects, not re-created: a CRD deleted and re-created would have taken every OracleNode with it.
    const live = await readNode(ns.name, node.metadata.name);
    expect(live?.metadata.uid).to.equal(nodeUid);
    const cronJob = await read<V1CronJob>('batch/v1', 'CronJob', ns.name, `${node.metadata.name}-dev-coordinator`);
    expect(cronJob?.metadata?.uid).to.equal(cronJobUid);
    expect(cronJob?.metadata?.deletionTimestamp).to.equal(undefined);
    await ready(node.metadata.name);
  });

  it('helm uninstall leaves the CRD, the OracleNode and its workloads', async () => {
    await helm('uninstall', release, '--namespace', ns.name, '--wait', '--timeout', '120s');
    // --wait returns once what Helm deletes is gone: a deleted CRD would be absent or terminating by now, and its
    // OracleNodes with it. The CRD is there, so is the node, so garbage collection leaves the CronJob alone.
    const crd = JSON.parse(await kubectl(undefined, 'get', 'crd', CRD_NAME, '-o', 'json'));
    expect(crd.metadata.deletionTimestamp).to.equal(undefined);
    const live = await readNode(ns.name, node.metadata.name);
    expect(live?.metadata.uid).to.equal(nodeUid);
    expect(live?.metadata.deletionTimestamp).to.equal(undefined);
    const cronJob = await read<V1CronJob>('batch/v1', 'CronJob', ns.name, `${node.metadata.name}-dev-coordinator`);
    expect(cronJob?.metadata?.uid).to.equal(cronJobUid);
    expect(await ttlOf(node.metadata.name)).to.equal(120);
  });
});
