// src/operator/permissions.ts is the one list of the API calls the operator makes, and the chart's rules are generated
// from it: it must cover what the controller watches and what it grants to its workloads, and nothing the code
// never calls.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { RULES_TEMPLATE, renderRulesTemplate } from '../../../scripts/generate-chart-rbac.js';
import { coordinatorRules } from '../../../src/operator/builders/rbac.js';
import { WATCHES } from '../../../src/operator/controller.js';
import { feedRules } from '../../../src/operator/feed/builders.js';
import { FEED_WATCHES } from '../../../src/operator/feed/controller.js';
import {
  grantedVerbs,
  leaderElectionPermissions,
  managedPermissions,
  toRules,
} from '../../../src/operator/permissions.js';
import { repoRoot } from '../../support/binary.js';

const managed = grantedVerbs(toRules(managedPermissions()));
const verbsOf = (resource: string) => [...(managed.get(resource) ?? [])].sort();

describe('operator permissions (the source of the chart RBAC)', () => {
  it('lists and watches every kind the controller watches', () => {
    const watched = [
      WATCHES.primary,
      ...WATCHES.owned.map((o) => o.kind),
      ...(WATCHES.referenced ?? []).map((r) => r.kind),
    ];
    for (const kind of watched)
      expect(verbsOf(`${kind.group}/${kind.plural}`), kind.plural).to.include.members(['list', 'watch']);
  });

  it("holds everything it grants to a coordinator's Role (Kubernetes refuses an escalating Role)", () => {
    const names = { cache: 'n-cache', cycle: 'n-cycle', coordinatorLease: 'n-coordinator' };
    for (const [resource, verbs] of grantedVerbs(coordinatorRules(names)))
      expect(verbsOf(resource), resource).to.include.members([...verbs]);
  });

  it("holds everything it grants to a feed's Role, and watches the feed's children", () => {
    for (const [resource, verbs] of grantedVerbs(feedRules({ report: 'f-feed-report' })))
      expect(verbsOf(resource), resource).to.include.members([...verbs]);
    for (const kind of FEED_WATCHES.owned.map((o) => o.kind))
      expect(verbsOf(`${kind.group}/${kind.plural}`), kind.plural).to.include.members(['list', 'watch']);
  });

  it('grants none of the verbs the code never calls', () => {
    expect(verbsOf('oracle-node.io/oraclenodes')).to.deep.equal(['list', 'watch']);
    expect(verbsOf('oracle-node.io/oraclenodes/status')).to.deep.equal(['patch']);
    // get: the user's Secret, read live; create/patch/delete: the gateway's derived node key (no update).
    expect(verbsOf('/secrets')).to.deep.equal(['create', 'delete', 'get', 'list', 'patch', 'watch']);
    expect(verbsOf('/pods')).to.deep.equal(['get', 'list']);
    expect(verbsOf('/events')).to.deep.equal(['create', 'patch']);
    // Only to grant a coordinator its hand-over Lease (the operator's own leader election is in the release namespace).
    expect(verbsOf('coordination.k8s.io/leases')).to.deep.equal(['create', 'get', 'update']);
    expect(managed.has('events.k8s.io/events')).to.equal(false);
    // get: a child the cache does not hold is read before it is created, so nothing is applied over another's object.
    for (const resource of ['apps/deployments', '/services', 'batch/cronjobs'])
      expect(verbsOf(resource), resource).to.deep.equal(['create', 'delete', 'get', 'list', 'patch', 'watch']);
    const leases = grantedVerbs(toRules(leaderElectionPermissions()));
    expect([...leases.keys()]).to.deep.equal(['coordination.k8s.io/leases']);
    expect([...leases.get('coordination.k8s.io/leases')!].sort()).to.deep.equal(['create', 'get', 'update']);
  });

  it("names the call behind every permission, and the chart's rules template is generated from them", () => {
    for (const permission of [...managedPermissions(), ...leaderElectionPermissions()])
      expect(permission.why, permission.resource).to.have.length.greaterThan(10);
    expect(readFileSync(join(repoRoot, RULES_TEMPLATE), 'utf8')).to.equal(renderRulesTemplate());
  });
});
