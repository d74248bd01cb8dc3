// scripts/checkov.ts without checkov: how it reads checkov's report and docs/security.md, and which objects it scans.
// `make lint` (scripts/checkov.sh) runs the real scanner over them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import {
  type CheckovReport,
  childManifests,
  documentedSkips,
  SECURITY_DOC,
  scanProblems,
} from '../../../scripts/checkov.js';
import { SCANNER_CHECKS } from '../../../src/operator/builders/index.js';
import { repoRoot } from '../../support/binary.js';

const check = (id: string, result: string, reason?: string) => ({
  check_id: id,
  check_name: `the ${id} check`,
  file_path: '/children.yaml',
  resource: 'Deployment.ns.name',
  check_result: { result, ...(reason === undefined ? {} : { suppress_comment: reason }) },
});

const report = (results: CheckovReport['results']): CheckovReport => ({ check_type: 'kubernetes', results });

describe('scripts/checkov.ts', () => {
  it('passes a scan whose every skip has a reason that docs/security.md lists', () => {
    const scan = report({
      passed_checks: [check('CKV_K8S_20', 'PASSED')],
      skipped_checks: [check('CKV_K8S_11', 'SKIPPED', 'throttling')],
    });
    expect(scanProblems(scan, new Set(['CKV_K8S_11']))).to.deep.equal([]);
    expect(scanProblems([scan], new Set(['CKV_K8S_11']))).to.deep.equal([]);
  });

  it('fails on a failed check, an unreadable file, a skip without a reason or not listed, and a listed one unused', () => {
    const problems = scanProblems(
      report({
        passed_checks: [check('CKV_K8S_20', 'PASSED')],
        failed_checks: [check('CKV_K8S_43', 'FAILED')],
        skipped_checks: [
          check('CKV_K8S_11', 'SKIPPED', 'No comment provided'),
          check('CKV_K8S_15', 'SKIPPED', 'a reason'),
        ],
        parsing_errors: ['/broken.yaml'],
      }),
      new Set(['CKV_K8S_11', 'CKV_K8S_38']),
    );
    expect(problems).to.deep.equal([
      '/broken.yaml: checkov could not parse it',
      'children.yaml Deployment.ns.name: CKV_K8S_43 failed (the CKV_K8S_43 check)',
      'children.yaml Deployment.ns.name: CKV_K8S_11 is skipped without a reason',
      `children.yaml Deployment.ns.name: CKV_K8S_15 is skipped but ${SECURITY_DOC} does not list it`,
      `${SECURITY_DOC} lists CKV_K8S_38, which no scanned object skips any more`,
    ]);
  });

  it('fails a scan that ran no check (nothing scanned, or checkov read nothing)', () => {
    expect(scanProblems(report({}), new Set())).to.deep.equal(['checkov ran no check: nothing was scanned']);
  });

  it("reads the checks listed in docs/security.md's section: every one the operator and the chart skip", () => {
    const listed = documentedSkips(readFileSync(join(repoRoot, SECURITY_DOC), 'utf8'));
    expect([...listed]).to.have.members([...Object.values(SCANNER_CHECKS), 'CKV_K8S_155']);
    expect([...documentedSkips('# Doc\n\n## Other\n\nCKV_K8S_1\n')]).to.deep.equal([]);
  });

  it('scans the workloads of an OracleNode with every gateway on and of an AirnodeFeed, never in the default namespace', async () => {
    const manifests = await childManifests();
    const objects = manifests.flatMap((m) => m.objects) as { kind: string; metadata: { namespace?: string } }[];
    const kinds = objects.map((o) => o.kind);
    expect(kinds.filter((k) => k === 'CronJob')).to.have.length(2);
    expect(kinds.filter((k) => k === 'Job')).to.have.length(4);
    // Per OracleNode the gateway, per AirnodeFeed its pod.
    expect(kinds.filter((k) => k === 'Deployment')).to.have.length(4);
    for (const object of objects)
      expect(object.metadata.namespace, object.kind).to.be.a('string').and.not.equal('default');
  });
});
