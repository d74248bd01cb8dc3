// The lint rule that keeps a clone self-contained: every path that leaves the repository is reported, with its line.
// The paths below are data for the rule, hence the marker on each line that names one.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { escapingPaths, scanRepository } from '../../../scripts/check-repo-paths.js';

const paths = (file: string, text: string) => escapingPaths(file, text).map((v) => v.path);

describe('scripts/check-repo-paths', () => {
  it('reports a URL relative to a test file that climbs above the root', () => {
    const text = "const f = new URL('../../../../sibling/fixtures/airnode/', import.meta.url);"; // repo-paths: allow
    expect(escapingPaths('test/unit/chain/protocol.test.ts', `\n${text}`)).to.deep.equal([
      { file: 'test/unit/chain/protocol.test.ts', line: 2, path: '../../../../sibling/fixtures/airnode/' }, // repo-paths: allow
    ]);
  });

  it('accepts a URL that climbs exactly to the root and back in', () => {
    expect(paths('test/unit/chain/protocol.test.ts', "new URL('../../../test/fixtures/airnode/', import.meta.url)")).to
      .be.empty;
    expect(paths('scripts/demo.ts', "new URL('../crds/x.yaml', import.meta.url)")).to.be.empty;
  });

  it('resolves shell, make and CI paths from the root, $HERE from the file and $ROOT from the root', () => {
    expect(paths('.ci/run', 'ls ../sibling')).to.deep.equal(['../sibling']); // repo-paths: allow
    expect(paths('Makefile', '\tcp -r ../sibling/fixtures test/')).to.deep.equal(['../sibling/fixtures']); // repo-paths: allow
    const withDefault = '$' + '{SAMPLE_DIR:-$ROOT/../sibling/node}'; // repo-paths: allow
    expect(paths('image/x.sh', `D="${withDefault}"`)).to.deep.equal([withDefault]);
    expect(paths('test/cluster/build.sh', 'ROOT="$(cd "$HERE/../.." && pwd)"')).to.be.empty;
    expect(paths('test/cluster/build.sh', 'OUT="$HERE/../../../out"')).to.deep.equal(['$HERE/../../../out']); // repo-paths: allow
  });

  it('reports join/resolve calls whose separate arguments climb above the root', () => {
    expect(paths('scripts/x.ts', "join(repoRoot, '..', 'sibling')")).to.have.length(1); // repo-paths: allow
    expect(paths('test/a/b.ts', "join(here, '..', '..')")).to.be.empty;
  });

  it('ignores spreads, ranges, URLs, absolute paths, symlink targets and marked lines', () => {
    const text = [
      'f(...args); for i in {1..3}; do :; done',
      'curl https://example.test/../x',
      'ls /usr/../etc',
      'ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$mnt/usr/local/bin/npm"',
      'cat ../outside # repo-paths: allow',
    ].join('\n');
    expect(paths('image/build.sh', text)).to.be.empty;
  });

  it('scans a tree and finds a deliberate violation in a copied-in file', () => {
    const root = mkdtempSync(join(tmpdir(), 'repo-paths-'));
    try {
      mkdirSync(join(root, 'test/unit'), { recursive: true });
      mkdirSync(join(root, 'node_modules/x'), { recursive: true });
      writeFileSync(join(root, 'test/unit/ok.test.ts'), "new URL('../../src/a.ts', import.meta.url)\n");
      writeFileSync(join(root, 'test/unit/bad.test.ts'), "new URL('../../../sibling/f.json', import.meta.url)\n"); // repo-paths: allow
      writeFileSync(join(root, 'node_modules/x/index.ts'), "new URL('../../../../../../x', import.meta.url)\n"); // repo-paths: allow
      expect(scanRepository(root).map((v) => `${v.file}:${v.line}`)).to.deep.equal(['test/unit/bad.test.ts:1']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
