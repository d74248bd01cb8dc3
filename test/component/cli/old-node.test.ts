// The built binary on a real old Node.js: every entry (oracle-node, kubectl-oracle_node) and every subcommand ends
// with the one line that names the version needed, never a stack trace. A faked process.versions on a current
// Node.js (test/unit/cli/day-two.test.ts) cannot catch an import an old Node.js fails to link, such as
// `registerHooks` from node:module, because linking happens before any code runs: this needs the old Node.js
// itself. The system node of a development machine is one (Node.js 20); OLD_NODE names another.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { subcommands } from '../../../src/cli/commands.js';
import { MINIMUM_NODE_VERSION, unsupportedNode } from '../../../src/cli/node-version.js';
import { repoRoot } from '../../support/binary.js';

const OLD_NODE = process.env['OLD_NODE'] ?? '/usr/bin/node';

/** The version of `node`, or undefined when it does not run. */
function versionOf(node: string): string | undefined {
  const result = spawnSync(node, ['--version'], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim().replace(/^v/, '') : undefined;
}

describe('oracle-node on a Node.js older than the minimum (the built binary)', function () {
  this.timeout(180_000);
  let dist: string;
  let oldVersion: string;

  before(function () {
    const version = versionOf(OLD_NODE);
    if (!version || !unsupportedNode(version)) {
      // Nothing to run the binary on: no Node.js older than the minimum at OLD_NODE.
      console.log(`      skipped: ${OLD_NODE} is not a Node.js older than ${MINIMUM_NODE_VERSION} (set OLD_NODE)`);
      this.skip();
    }
    oldVersion = version;
    // Inside the repository, so the built modules resolve node_modules as dist/ does.
    mkdirSync(join(repoRoot, '.cache'), { recursive: true });
    dist = mkdtempSync(join(repoRoot, '.cache', 'old-node-dist-'));
    execFileSync(
      process.execPath,
      [join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', dist],
      { cwd: repoRoot, stdio: 'inherit' },
    );
  });

  after(() => {
    if (dist) rmSync(dist, { recursive: true, force: true });
  });

  const invocations = [
    [],
    ['--version'],
    ['--help'],
    ...Object.keys(subcommands).map((name) => [name]),
    ['validate', '-c', 'config.json', '-s', 'secrets.env'],
    ['coordinator', '--help'],
  ];

  for (const entry of ['index.js', 'kubectl-plugin.js']) {
    it(`${entry}: one line naming the version needed, exit 1, for ${invocations.length} invocations`, () => {
      for (const args of invocations) {
        const result = spawnSync(OLD_NODE, [join(dist, 'cli', entry), ...args], { encoding: 'utf8', cwd: dist });
        const label = `${entry} ${args.join(' ')}`;
        expect(result.stderr, label).to.equal(
          `oracle-node needs Node.js ${MINIMUM_NODE_VERSION} or newer; this is Node.js ${oldVersion}\n`,
        );
        expect(result.stdout, label).to.equal('');
        expect(result.status, label).to.equal(1);
      }
    });
  }
});
