import { expect } from 'chai';
import type { OracleNode } from '../../../../src/operator/resource.js';
import { denialMessage, reviewOracleNode } from '../../../../src/operator/webhook/review.js';
import { loadSample } from '../fake-kube.js';

const minimal = () => loadSample('minimal').node as OracleNode;
type Settings = Record<string, unknown>;
const settingsOf = (node: OracleNode) => node.spec.config.nodeSettings as Settings;

describe('webhook review', () => {
  it('admits the samples, with no Secret value needed', () => {
    for (const sample of ['minimal', 'full-multi-chain', 'gateways-only'] as const) {
      const decision = reviewOracleNode({ operation: 'CREATE', object: loadSample(sample).node });
      expect(decision.errors, sample).to.deep.equal([]);
      expect(decision.allowed).to.equal(true);
    }
  });

  it('refuses a spec.secretRef named like the Secret the operator writes the node key into', () => {
    const node = minimal();
    node.spec.secretRef = { name: 'minimal-signing-key' };
    const decision = reviewOracleNode({ operation: 'CREATE', object: node });
    expect(decision.allowed).to.equal(false);
    expect(decision.errors).to.deep.include({
      path: 'spec.secretRef.name',
      message:
        'minimal-signing-key is the name of the Secret the operator writes the node key into; name your Secret otherwise',
    });
    node.spec.secretRef = { name: 'minimal-secrets' };
    node.spec.gateway = { callers: { secretRef: { name: 'minimal-signing-key' } } };
    const callers = reviewOracleNode({ operation: 'CREATE', object: node });
    expect(callers.errors.map((issue) => issue.path)).to.deep.equal(['spec.gateway.callers.secretRef.name']);
  });

  it('refuses a node whose children another OracleNode of the namespace names too, and says which', () => {
    const nodeNamed = (name: string, stage: string, status?: OracleNode['status']) => {
      const node = minimal();
      node.metadata = { ...node.metadata, name, namespace: 'default' };
      settingsOf(node).stage = stage;
      if (status) node.status = status;
      return node;
    };
    const a = nodeNamed('a', 'b-c');
    const decision = reviewOracleNode(
      { operation: 'CREATE', object: nodeNamed('a-b', 'c') },
      { oracleNodes: () => [a, nodeNamed('a-b', 'old')] },
    );
    expect(decision.allowed).to.equal(false);
    expect(decision.errors).to.have.length(1);
    expect(decision.errors[0]!.path).to.equal('metadata.name');
    expect(decision.errors[0]!.message)
      .to.contain('OracleNode a names ConfigMap/a-b-c-config')
      .and.contain('CronJob/a-b-c-coordinator');
    // A stage still being rolled out of counts (status).
    const rolling = nodeNamed('x', 'new', { stage: 'new', previousStage: 'y-z' });
    const meets = reviewOracleNode(
      { operation: 'CREATE', object: nodeNamed('x-y', 'z') },
      { oracleNodes: () => [rolling] },
    );
    expect(meets.errors[0]!.message).to.contain('OracleNode x names ConfigMap/x-y-z-config');
    // Names that only look alike are free: a-b with stage c-d beside a with stage b, whose gateway is a-b-gateway
    // as a Deployment, never as a Service.
    const free = reviewOracleNode(
      { operation: 'CREATE', object: nodeNamed('a-b', 'c-d') },
      { oracleNodes: () => [nodeNamed('a', 'b')] },
    );
    expect(free.errors).to.deep.equal([]);
  });

  it('refuses a bad config with every error and its path, in the ConfigValid words', () => {
    const node = minimal();
    const chain = (node.spec.config.chains as Record<string, unknown>[])[0]!;
    (chain.options as Settings).gasPriceOracle = [
      { gasPriceStrategy: 'constantGasPrice', gasPrice: { value: 10, unit: 'gwei' } },
      {
        gasPriceStrategy: 'latestBlockPercentileGasPrice',
        percentile: 60,
        minTransactionCount: 20,
        pastToCompareInBlocks: 20,
        maxDeviationMultiplier: 2,
      },
    ];
    chain.maxConcurrency = 0;
    const decision = reviewOracleNode({ operation: 'CREATE', object: node });
    expect(decision.allowed).to.equal(false);
    const paths = decision.errors.map((issue) => issue.path);
    expect(paths).to.include('chains[0].options.gasPriceOracle');
    expect(paths).to.include('chains[0].maxConcurrency');
    expect(denialMessage(decision.errors)).to.match(/^OracleNode config is invalid \(\d+ errors\): chains\[0\]/);
  });

  it('refuses what can never work, as validate does: a chain listed twice, a _type that never encodes', () => {
    const node = minimal();
    const chains = node.spec.config.chains as unknown[];
    chains.push(structuredClone(chains[0]));
    const ois = node.spec.config.ois as { endpoints: { reservedParameters: { name: string; fixed?: string }[] }[] }[];
    ois[0]!.endpoints[0]!.reservedParameters.find((p) => p.name === '_type')!.fixed = 'integer';
    const decision = reviewOracleNode({ operation: 'CREATE', object: node });
    expect(decision.allowed).to.equal(false);
    expect(decision.errors.map((issue) => issue.path)).to.include.members([
      'chains[1].id',
      `ois[0].endpoints[0].reservedParameters[${ois[0]!.endpoints[0]!.reservedParameters.findIndex((p) => p.name === '_type')}].fixed`,
    ]);
  });

  // biome-ignore lint/suspicious/noTemplateCurlyInString: config placeholders, not templates
  it('checks ${NAME} references for syntax only', () => {
    const node = minimal();
    // biome-ignore lint/suspicious/noTemplateCurlyInString: config placeholders, not templates
    settingsOf(node).nodeWalletMnemonic = '${not valid}';
    const decision = reviewOracleNode({ operation: 'CREATE', object: node });
    expect(decision.allowed).to.equal(false);
    expect(decision.errors[0]!.path).to.equal('nodeSettings.nodeWalletMnemonic');
    expect(decision.errors[0]!.message).to.contain('is not a valid secret reference');
  });

  it('warns about several servers and a Secret that does not exist yet', () => {
    const node = minimal();
    const ois = (node.spec.config.ois as { apiSpecifications: { servers: unknown[] } }[])[0]!;
    ois.apiSpecifications.servers.push({ url: 'http://backup.example:5000' });
    node.metadata.namespace = 'team-a';
    const decision = reviewOracleNode({ operation: 'CREATE', object: node }, { secretExists: () => false });
    expect(decision.allowed).to.equal(true);
    expect(decision.warnings).to.have.length(2);
    expect(decision.warnings[0]).to.match(/^ois\[0\]\.apiSpecifications\.servers: 2 servers are listed/);
    expect(decision.warnings[1]).to.match(/^spec\.secretRef\.name: Secret team-a\/minimal-secrets does not exist yet/);
    // Unknown (cache not synced): no warning rather than a wrong one.
    expect(
      reviewOracleNode({ operation: 'CREATE', object: node }, { secretExists: () => undefined }).warnings,
    ).to.have.length(1);
  });

  it('references without a Secret to resolve them are an error', () => {
    const node = minimal();
    delete node.spec.secretRef;
    const decision = reviewOracleNode({ operation: 'CREATE', object: node });
    expect(decision.errors.map((issue) => issue.path)).to.deep.equal(['spec.secretRef']);
  });

  describe('update guards', () => {
    it('the node wallet changes only together with the stage', () => {
      const old = minimal();
      const node = minimal();
      // biome-ignore lint/suspicious/noTemplateCurlyInString: config placeholders, not templates
      settingsOf(node).nodeWalletMnemonic = '${OTHER_MNEMONIC}';
      const refused = reviewOracleNode({ operation: 'UPDATE', object: node, oldObject: old });
      expect(refused.allowed).to.equal(false);
      expect(refused.errors.map((issue) => issue.path)).to.deep.equal(['nodeSettings.nodeWalletMnemonic']);
      settingsOf(node).stage = 'prod';
      expect(reviewOracleNode({ operation: 'UPDATE', object: node, oldObject: old }).allowed).to.equal(true);
    });

    it('the Secret behind a wallet reference changes only together with the stage', () => {
      const old = minimal();
      const node = minimal();
      node.spec.secretRef = { name: 'other-secrets' };
      const refused = reviewOracleNode({ operation: 'UPDATE', object: node, oldObject: old });
      expect(refused.errors.map((issue) => issue.path)).to.deep.equal(['spec.secretRef.name']);
      settingsOf(node).stage = 'prod';
      expect(reviewOracleNode({ operation: 'UPDATE', object: node, oldObject: old }).allowed).to.equal(true);
    });

    it('an update that leaves the spec alone (status, labels) is admitted at once', () => {
      const old = minimal();
      (old.spec.config.chains as Record<string, unknown>[])[0]!.maxConcurrency = 0; // admitted before a rule
      const node = structuredClone(old);
      node.metadata.labels = { team: 'a' };
      expect(reviewOracleNode({ operation: 'UPDATE', object: node, oldObject: old }).allowed).to.equal(true);
    });

    it('other edits are free', () => {
      const old = minimal();
      const node = minimal();
      (node.spec.config.chains as Record<string, unknown>[])[0]!.maxConcurrency = 20;
      expect(reviewOracleNode({ operation: 'UPDATE', object: node, oldObject: old }).allowed).to.equal(true);
    });
  });
});
