import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { checkLayers } from '../../../scripts/check-layers.js';

describe('the layering check (make lint)', () => {
  let root: string;
  const write = (path: string, text: string) => {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'layers-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('accepts downward imports, packages and imports inside a folder', () => {
    write('config/schema.ts', "import { z } from 'zod';\nimport { deriveEndpointId } from '../protocol/ids.js';\n");
    write(
      'operator/builders/worker.ts',
      "import {\n  LABELS,\n} from '../../contract/pods.js';\nimport { x } from '../status.js';\n",
    );
    write('node/cli.ts', "const k = await import('./kubernetes/index.js');\n");
    expect(checkLayers(root)).to.deep.equal([]);
  });

  it('holds a sub-folder to its own rule inside its folder: the operator API imports nothing of the controller', () => {
    write(
      'operator/api/v1alpha1.ts',
      "import { KIND } from '../resource.js';\nimport { toStructural } from './structural.js';\n",
    );
    write('operator/api/structural.ts', "import { z } from 'zod';\n");
    write('operator/api/bad.ts', "import { x } from '../reconcile/status.js';\n");
    expect(checkLayers(root)).to.deep.equal([
      {
        file: 'operator/api/bad.ts',
        line: 1,
        message:
          'src/operator/api may import of its folder only src/operator/api/, src/operator/resource.ts (../reconcile/status.js)',
      },
    ]);
  });

  it('lets callers into src/kube only through its index.ts or api.ts, and of the node only its Kubernetes edge', () => {
    write('kube/index.ts', "export { RestClient } from './rest.js';\n");
    write('cli/status-command.ts', "import { RuntimeClient } from '../kube/api.js';\n");
    write('kube/rest.ts', "import { errorMessage } from '../common/errors.js';\n");
    write('operator/controller.ts', "import type { Reconciler } from '../kube/index.js';\n");
    write('operator/webhook/certificate-store.ts', "import { objectPath } from '../../kube/paths.js';\n");
    write('node/kubernetes/job-executor.ts', "import { RuntimeClient } from '../../kube/index.js';\n");
    write('node/window.ts', "import { RuntimeClient } from '../kube/index.js';\n");
    expect(checkLayers(root)).to.deep.equal([
      {
        file: 'node/window.ts',
        line: 1,
        message: 'of src/node, only src/node/kubernetes/ may import src/kube (../kube/index.js)',
      },
      {
        file: 'operator/webhook/certificate-store.ts',
        line: 1,
        message: 'src/kube is imported only through src/kube/index.ts or src/kube/api.ts (../../kube/paths.js)',
      },
    ]);
  });

  it('lets only the kubeconfig fallback load @kubernetes/client-node at run time; import type is free', () => {
    write('kube/kubeconfig.ts', "const { KubeConfig } = await import('@kubernetes/client-node');\n");
    write(
      'operator/builders/gateway.ts',
      "import type {\n  V1Deployment,\n} from '@kubernetes/client-node';\nexport type { V1Pod } from '@kubernetes/client-node';\n",
    );
    write('cli/logs-command.ts', "// logs\nconst { CoreV1Api } = await import('@kubernetes/client-node');\n");
    write('cli/cycle-command.ts', "import { type V1Job, BatchV1Api } from '@kubernetes/client-node';\n");
    write('cli/status-command.ts', "import {\n  type V1Deployment,\n} from '@kubernetes/client-node';\n");
    const found = checkLayers(root).map((v) => `${v.file}:${v.line}`);
    // An inline `type` import still loads the module under verbatimModuleSyntax: only `import type` is erased.
    expect(found).to.deep.equal(['cli/cycle-command.ts:1', 'cli/logs-command.ts:2', 'cli/status-command.ts:3']);
  });

  it('lets only their loaders load node:http and prom-client at run time (an ES module import of either costs start-up)', () => {
    write('common/node-http.ts', "import type * as Http from 'node:http';\n");
    write('observability/prom-client.ts', "import type * as PromClient from 'prom-client';\n");
    write(
      'observability/http.ts',
      "import type { IncomingMessage } from 'node:http';\nimport { createServer } from 'node:http';\n",
    );
    write('feed/engine.ts', "import { type Agent } from 'node:http';\n");
    write('kube/metrics.ts', "import { Counter } from 'prom-client';\n");
    const found = checkLayers(root).map((v) => `${v.file}:${v.line}`);
    expect(found).to.deep.equal(['feed/engine.ts:1', 'kube/metrics.ts:1', 'observability/http.ts:2']);
  });

  it('keeps the reconcile steps off the controller that calls them and off the webhook', () => {
    write(
      'operator/reconcile/apply.ts',
      "import { needsApply } from '../diff.js';\nimport { x } from './status.js';\n",
    );
    write('operator/reconcile/rollout.ts', "import { createOracleNodeReconciler } from '../controller.js';\n");
    const found = checkLayers(root).map((v) => `${v.file}:${v.line}`);
    expect(found).to.deep.equal(['operator/reconcile/rollout.ts:1']);
  });

  it('refuses an upward or sideways import, on the line it is on, multi-line imports included', () => {
    write('node/kubernetes.ts', "// runs in pods\nimport {\n  a,\n} from '../operator/job-executor.js';\n");
    write('config/schema.ts', "import { deriveEndpointId } from '../chain/ids.js';\n");
    expect(checkLayers(root)).to.deep.equal([
      { file: 'config/schema.ts', line: 1, message: 'src/config may not import src/chain (../chain/ids.js)' },
      {
        file: 'node/kubernetes.ts',
        line: 4,
        message: 'src/node may not import src/operator (../operator/job-executor.js)',
      },
    ]);
  });

  it('refuses a computed module path and a folder missing from the table', () => {
    write('cli/start.ts', "const path = '../gateway/server.js';\nawait import(path);\n");
    write('extras/x.ts', 'export const x = 1;\n');
    const found = checkLayers(root).map((v) => `${v.file}:${v.line}: ${v.message}`);
    expect(found).to.deep.equal([
      'cli/start.ts:2: import(path) loads a computed path',
      'extras/x.ts:1: folder src/extras is not in the layering table',
    ]);
  });

  it('refuses modules that import each other in a circle, through import type and lazy import() too', () => {
    write('cli/commands.ts', "const c = async () => (await import('./completion.js')).completion;\n");
    write('cli/completion.ts', "// the table\nimport type { Table } from './table.js';\n");
    write('cli/table.ts', "import { commands } from './commands.js';\n");
    write('cli/main.ts', "import { commands } from './commands.js';\n");
    write('node/a.ts', "import { a } from './a.js';\n");
    write('node/b.ts', "import { c } from './c.js';\n");
    write('node/c.ts', "import { d } from './d.js';\n");
    const found = checkLayers(root).map((v) => `${v.file}:${v.line}: ${v.message}`);
    expect(found).to.deep.equal([
      'cli/commands.ts:1: import circle: cli/commands.ts -> cli/completion.ts -> cli/table.ts -> cli/commands.ts',
      'node/a.ts:1: import circle: node/a.ts -> node/a.ts',
    ]);
  });

  it("keeps the node's planner and a shard's halves apart: they share only shard-types.ts", () => {
    write(
      'node/cycle-plan.ts',
      "import type { ShardInput } from './shard-types.js';\nimport { x } from './shard-send.js';\n",
    );
    write('node/shard-send.ts', "import type { ShardInput } from './shard-types.js';\n");
    write('node/shard-settle.ts', "import { planChainShards } from './cycle-plan.js';\n");
    const found = checkLayers(root).map((v) => `${v.file}:${v.line}: ${v.message}`);
    expect(found).to.deep.equal([
      'node/cycle-plan.ts:2: src/node/cycle* never imports src/node/shard-send.ts (./shard-send.js)',
      'node/shard-settle.ts:1: src/node/shard* never imports src/node/cycle* (./cycle-plan.js)',
    ]);
  });
});
