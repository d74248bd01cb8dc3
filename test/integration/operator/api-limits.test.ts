// spec.apiLimits read back from the real apiserver: the gateway Deployment's pods carry their share of each API's
// budget as --api-rate-limit, redivided when the replicas change; the coordinator's worker template carries the
// workers' share; the CRD's rules refuse a budget with both windows, and a budget for an OIS the config lacks leaves
// the node ConfigValid=False with the last good children in place.
import type { V1CronJob, V1Deployment } from '@kubernetes/client-node';
import { expect } from 'chai';
import { ENV } from '../../../src/contract/pods.js';
import { API_VERSION, KIND, type OracleNode } from '../../../src/operator/resource.js';
import { apply, useNamespace, waitFor } from '../support/cluster.js';
import { condition, installCrd, type RunningOperator, read, readNode, sampleDocs, startOperator } from './support.js';

const TITLE = 'Currency Converter API';
const GATEWAY = 'full-prod-a-gateway';

const budgetArgs = (args: string[] | undefined) =>
  (args ?? []).flatMap((arg, i) => (arg === '--api-rate-limit' ? [args![i + 1]!] : []));

describe('OracleNode spec.apiLimits: divided among the pods (integration)', function () {
  this.timeout(240_000);
  const namespace = useNamespace('onode-api-limits');
  let operator: RunningOperator;
  const ns = () => namespace.name;

  before(async () => {
    await installCrd();
    operator = startOperator(ns());
  });
  after(async () => {
    await operator?.stop();
  });

  const gatewayArgs = async () =>
    budgetArgs(
      (await read<V1Deployment>('apps/v1', 'Deployment', ns(), GATEWAY))?.spec?.template.spec?.containers[0]?.args,
    );
  const workerArgs = async () => {
    const cronJob = await read<V1CronJob>('batch/v1', 'CronJob', ns(), 'full-prod-a-coordinator');
    const variable = cronJob?.spec?.jobTemplate.spec?.template.spec?.containers[0]?.env?.find(
      (env) => env.name === ENV.workerTemplate,
    );
    if (!variable?.value) return undefined;
    const template = JSON.parse(variable.value) as { template: { spec: { containers: { args?: string[] }[] } } };
    return budgetArgs(template.template.spec.containers[0]!.args);
  };
  const withSpec = async (edit: (node: OracleNode) => void) => {
    const live = (await readNode(ns(), 'full'))!;
    const node = { apiVersion: API_VERSION, kind: KIND, metadata: { name: 'full', namespace: ns() }, spec: live.spec };
    edit(node as OracleNode);
    await apply(node as OracleNode);
  };

  it('gives the gateway replicas and the workers equal shares, and redivides when the replicas change', async () => {
    const { node, secret } = sampleDocs('full-multi-chain', ns());
    // Two gateway replicas; chains of maxConcurrency 10 and 4: 2 x (10 + 4 + 10) = 48 worker pods; 50 pods in all.
    node.spec.apiLimits = [{ ois: TITLE, callsPerMinute: 600 }];
    await apply(secret);
    await apply(node);
    // The operator applies its children one after another: the CronJob's worker template may come after the gateway.
    await waitFor(
      async () => ((await gatewayArgs()).length && (await workerArgs())?.length ? true : undefined),
      120_000,
      'the gateway Deployment and the worker template with their budgets',
    );
    expect(await gatewayArgs()).to.deep.equal([`${TITLE}=12/m`]);
    expect(await workerArgs()).to.deep.equal([`${TITLE}=12/m`]);

    // Four replicas: 52 pods, 11 each (572 <= 600).
    await withSpec((edited) => {
      edited.spec.gateway = { ...edited.spec.gateway, replicas: 4 };
    });
    const redivided = async (args: Promise<string[] | undefined>) => (await args)?.[0] === `${TITLE}=11/m`;
    await waitFor(
      async () => ((await redivided(gatewayArgs())) && (await redivided(workerArgs())) ? true : undefined),
      60_000,
      'the gateway args and the worker template redivided for 4 replicas',
    );
    expect(await gatewayArgs()).to.deep.equal([`${TITLE}=11/m`]);
    expect(await workerArgs()).to.deep.equal([`${TITLE}=11/m`]);
  });

  it('the CRD refuses a budget with both windows; a budget for an unknown OIS keeps the last children', async () => {
    const live = (await readNode(ns(), 'full'))!;
    let refused: unknown;
    try {
      await apply({
        apiVersion: API_VERSION,
        kind: KIND,
        metadata: { name: 'full', namespace: ns() },
        spec: { ...live.spec, apiLimits: [{ ois: TITLE, callsPerSecond: 1, callsPerMinute: 60 }] },
      } as OracleNode);
    } catch (error) {
      refused = error;
    }
    expect(String((refused as Error | undefined)?.message)).to.contain(
      'give exactly one of callsPerSecond and callsPerMinute',
    );

    await withSpec((edited) => {
      edited.spec.apiLimits = [{ ois: 'Currency Converter', callsPerMinute: 60 }];
    });
    const node = await waitFor(
      async () => {
        const current = await readNode(ns(), 'full');
        return condition(current, 'ConfigValid')?.status === 'False' ? current : undefined;
      },
      60_000,
      { description: 'ConfigValid=False for the unknown OIS' },
    );
    expect(condition(node, 'ConfigValid')?.message).to.contain(
      "spec.apiLimits[0].ois: the config has no OIS titled 'Currency Converter'",
    );
    expect(await gatewayArgs()).to.deep.equal([`${TITLE}=11/m`]);
  });
});
