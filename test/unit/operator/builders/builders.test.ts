import type { V1CronJob, V1Deployment, V1Role, V1Service, V2HorizontalPodAutoscaler } from '@kubernetes/client-node';
import { expect } from 'chai';
import { REPORT_AFTER_SIGTERM_MS } from '../../../../src/cli/coordinator.js';
import { secretScopes } from '../../../../src/config/index.js';
import { ENV, GATEWAY_METRICS_PORT, readCoordinatorEnvironment } from '../../../../src/contract/pods.js';
import { buildWorkerJob, workerJobName } from '../../../../src/contract/shard.js';
import { HARD_END_MARGIN_MS, SETTLE_AFTER_STOP_MS } from '../../../../src/node/deadline.js';
import {
  COORDINATOR_DEADLINE_SECONDS,
  COORDINATOR_GRACE_SECONDS,
  coordinatorRun,
  HANDOVER_ALLOWANCE_SECONDS,
  MAX_WINDOW_SPAN_SECONDS,
  scheduleMinPeriodSeconds,
} from '../../../../src/operator/builders/coordinator.js';
import {
  type BuildInput,
  buildChildren,
  buildWorkerTemplate,
  type Child,
  hashOf,
  secretHashesOf,
} from '../../../../src/operator/builders/index.js';
import type { OracleNode } from '../../../../src/operator/resource.js';
import { ANNOTATIONS } from '../../../../src/operator/resource.js';
import { loadSample } from '../fake-kube.js';
import { inputFor } from './build-input.js';

const byKind = (children: { object: Child }[], kind: string) =>
  children.filter((c) => c.object.kind === kind).map((c) => c.object);
const one = <T>(children: { object: Child }[], kind: string, name?: string): T =>
  byKind(children, kind).find((o) => !name || o.metadata.name === name) as unknown as T;

describe('operator builders', () => {
  it('a rotated key rolls only the workloads that receive it: each pod template carries the hash of its own keys', () => {
    const { node, secret } = loadSample('full-multi-chain');
    const data = (secret as { data: Record<string, string> }).data;
    const scopes = secretScopes(node.spec.config);
    // Keys the one workload receives and the other does not (in this sample: the heartbeat's, the API key).
    const coordinatorNotGateway = scopes.coordinator.find((key) => !scopes.gateway.includes(key));
    const gatewayNotCoordinator = scopes.gateway.find((key) => !scopes.coordinator.includes(key));
    const templates = (secretData: Record<string, string>) => {
      const children = buildChildren({
        ...inputFor('full-multi-chain'),
        secretHashes: secretHashesOf(node.spec.config, secretData),
      });
      const cronJob = byKind(children, 'CronJob')[0] as V1CronJob;
      const deployment = byKind(children, 'Deployment')[0] as V1Deployment;
      return {
        coordinator: cronJob.spec!.jobTemplate.spec!.template.metadata!.annotations![ANNOTATIONS.secretHash],
        gateway: deployment.spec!.template.metadata!.annotations![ANNOTATIONS.secretHash],
      };
    };
    const rotate = (key: string | undefined) => {
      expect(key, 'a key one workload receives and the other does not').to.be.a('string');
      return { ...data, [key!]: Buffer.from('rotated').toString('base64') };
    };
    const before = templates(data);
    expect(before.coordinator).to.not.equal(before.gateway);
    const coordinatorKeyRotated = templates(rotate(coordinatorNotGateway));
    expect(coordinatorKeyRotated.coordinator).to.not.equal(before.coordinator);
    expect(coordinatorKeyRotated.gateway).to.equal(before.gateway);
    const gatewayKeyRotated = templates(rotate(gatewayNotCoordinator));
    expect(gatewayKeyRotated.gateway).to.not.equal(before.gateway);
    expect(gatewayKeyRotated.coordinator).to.equal(before.coordinator);
    // A key no workload uses rolls nothing.
    expect(templates({ ...data, UNUSED_KEY: Buffer.from('x').toString('base64') })).to.deep.equal(before);
  });

  it('minimal: ConfigMaps, RBAC and the coordinator, no gateway', () => {
    const children = buildChildren(inputFor('minimal'));
    const names = children.map((c) => `${c.object.kind}/${c.object.metadata.name}`);
    expect(names).to.deep.equal([
      'ConfigMap/minimal-dev-config',
      'ConfigMap/minimal-cache',
      'ConfigMap/minimal-cycle',
      'ServiceAccount/minimal-dev-coordinator',
      'ServiceAccount/minimal-dev-worker',
      'Role/minimal-dev-coordinator',
      'RoleBinding/minimal-dev-coordinator',
      'CronJob/minimal-dev-coordinator',
    ]);
  });

  it("full: a gateway Deployment, the node's Service and a PodDisruptionBudget (2 replicas)", () => {
    const children = buildChildren(inputFor('full-multi-chain'));
    expect(byKind(children, 'Deployment')).to.have.length(1);
    expect(byKind(children, 'Service').map((service) => service.metadata.name)).to.deep.equal(['full-gateway']);
    expect(byKind(children, 'PodDisruptionBudget')).to.have.length(1);
    const single = buildChildren(inputFor('gateways-only'));
    expect(byKind(single, 'Deployment')).to.have.length(1);
    expect(byKind(single, 'PodDisruptionBudget')).to.have.length(0);
  });

  it('every child has the labels and a controller owner reference', () => {
    for (const sample of ['minimal', 'full-multi-chain', 'gateways-only'] as const) {
      const input = inputFor(sample);
      for (const { object } of buildChildren(input)) {
        expect(object.metadata.labels, object.metadata.name).to.include({
          'app.kubernetes.io/managed-by': 'oracle-node-operator',
          'oracle-node.io/name': input.node.metadata.name,
        });
        expect(object.metadata.labels['app.kubernetes.io/component'], object.metadata.name).to.be.a('string');
        if (!['cache', 'cycle', 'signing-key'].includes(object.metadata.labels['app.kubernetes.io/component']!))
          expect(object.metadata.labels['oracle-node.io/stage']).to.match(/^[a-z0-9-]+$/);
        const owners = object.metadata.ownerReferences ?? [];
        expect(owners).to.have.length(1);
        expect(owners[0]).to.include({ kind: 'OracleNode', controller: true, uid: `uid-${sample}` });
      }
    }
  });

  it('the ConfigMap keeps the placeholders: no secret value leaves the Secret', () => {
    const input = inputFor('full-multi-chain');
    const configMap = one<{ data: Record<string, string> }>(buildChildren(input), 'ConfigMap', 'full-prod-a-config');
    expect(configMap.data['config.json']).to.contain(`$${'{'}NODE_WALLET_MNEMONIC}`);
    expect(configMap.data['config.json']).not.to.contain('test test test');
    expect(JSON.parse(configMap.data['config.json']!)).to.deep.equal(input.rawConfig);
  });

  it('coordinator CronJob: overlapping windows (Allow) ending before the tick after next, history limits, secrets as env, config mounted', () => {
    const cronJob = one<V1CronJob>(buildChildren(inputFor('minimal')), 'CronJob');
    const spec = cronJob.spec!;
    expect(spec).to.include({ schedule: '* * * * *', concurrencyPolicy: 'Allow', suspend: false });
    expect(spec.startingDeadlineSeconds).to.be.lessThan(60);
    expect(spec.jobTemplate.spec!.activeDeadlineSeconds).to.be.lessThan(120 - COORDINATOR_GRACE_SECONDS);
    expect(spec.successfulJobsHistoryLimit).to.be.a('number');
    expect(spec.failedJobsHistoryLimit).to.be.a('number');
    const pod = spec.jobTemplate.spec!.template.spec!;
    const container = pod.containers[0]!;
    expect(container.args!.slice(0, 1)).to.deep.equal(['coordinator']);
    expect(container).not.to.have.property('envFrom');
    expect(container.env!.filter((variable) => variable.valueFrom?.secretKeyRef)).to.deep.equal(
      ['NODE_WALLET_MNEMONIC', 'PROVIDER_URL'].map((key) => ({
        name: key,
        valueFrom: { secretKeyRef: { name: 'minimal-secrets', key } },
      })),
    );
    expect(container.volumeMounts!.map((m) => m.mountPath)).to.include('/etc/oracle-node');
    expect(pod.serviceAccountName).to.equal('minimal-dev-coordinator');
    expect(pod.restartPolicy).to.equal('Never');
    // The node's uid, so the coordinator Lease the coordinator creates is owned by (and deleted with) the node.
    const owned = one<V1CronJob>(buildChildren(inputFor('minimal', (node) => (node.metadata.uid = 'uid-1'))), 'CronJob')
      .spec!.jobTemplate.spec!.template.spec!.containers[0]!.env!;
    expect(owned.filter((v) => v.name === 'ORACLE_NODE_UID')).to.deep.equal([
      { name: 'ORACLE_NODE_UID', value: 'uid-1' },
    ]);
    const unowned = one<V1CronJob>(buildChildren(inputFor('minimal', (node) => delete node.metadata.uid)), 'CronJob')
      .spec!.jobTemplate.spec!.template.spec!.containers[0]!.env!;
    expect(unowned.some((v) => v.name === 'ORACLE_NODE_UID')).to.equal(false);
    expect(
      buildChildren(inputFor('minimal'), { holdForRollout: true }).some(
        (c) => (c.object as V1CronJob).spec?.suspend === true,
      ),
    ).to.equal(true);
  });

  it('every pod runs with the restricted pod security settings', () => {
    const children = buildChildren(inputFor('full-multi-chain'));
    const cronJob = one<V1CronJob>(children, 'CronJob');
    const deployment = one<V1Deployment>(children, 'Deployment');
    const worker = buildWorkerTemplate(inputFor('full-multi-chain')).template;
    for (const pod of [cronJob.spec!.jobTemplate.spec!.template.spec!, deployment.spec!.template.spec!, worker.spec!]) {
      expect(pod.securityContext).to.include({ runAsNonRoot: true });
      expect(pod.securityContext!.seccompProfile).to.deep.equal({ type: 'RuntimeDefault' });
      for (const container of pod.containers) {
        expect(container.securityContext).to.include({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
        expect(container.securityContext!.capabilities).to.deep.equal({ drop: ['ALL'] });
      }
    }
  });

  it('worker pods call no Kubernetes API: no token, no Role; they hold only the keys of their OIS', () => {
    const input = inputFor('full-multi-chain');
    const worker = buildWorkerTemplate(input).template.spec!;
    expect(worker.automountServiceAccountToken).to.equal(false);
    expect(worker.serviceAccountName).to.equal('full-prod-a-worker');
    const children = buildChildren(input);
    const rbac = children.filter((c) => ['Role', 'RoleBinding'].includes(c.object.kind));
    expect(rbac.map((c) => c.object.metadata.name)).to.not.include('full-prod-a-worker');
    const keys = (worker.containers[0]!.env ?? []).flatMap((v) => (v.valueFrom?.secretKeyRef ? [v.name] : []));
    expect(keys).to.deep.equal(secretScopes(input.rawConfig).worker);
    expect(keys).to.not.include('NODE_WALLET_MNEMONIC');
    expect(keys.some((key) => key.includes('PROVIDER'))).to.equal(false);
  });

  it('gateway: probes on /healthz and /readyz of the metrics port, Service type and port from the spec', () => {
    const children = buildChildren(inputFor('full-multi-chain'));
    const container = one<V1Deployment>(children, 'Deployment').spec!.template.spec!.containers[0]!;
    expect(container.livenessProbe!.httpGet).to.deep.equal({ path: '/healthz', port: 'metrics' });
    expect(container.readinessProbe!.httpGet).to.deep.equal({ path: '/readyz', port: 'metrics' });
    expect(container.ports!.map((port) => [port.name, port.containerPort])).to.deep.equal([
      ['http', 3000],
      ['metrics', GATEWAY_METRICS_PORT],
    ]);
    expect(container.args!.slice(-2)).to.deep.equal(['--metrics-port', String(GATEWAY_METRICS_PORT)]);
    const service = one<V1Service>(children, 'Service');
    expect(service.spec).to.include({ type: 'ClusterIP' });
    // Only the caller-facing port: health and metrics are not reachable through the Service.
    expect(service.spec!.ports).to.have.length(1);
    expect(service.spec!.ports![0]).to.include({ port: 8080, targetPort: 'http' });
    expect(one<V1Deployment>(children, 'Deployment').spec!.replicas).to.equal(2);
  });

  it('gateway autoscaling: an autoscaling/v2 HPA on CPU by default, the Deployment leaves replicas to it', () => {
    const children = buildChildren(
      inputFor('gateways-only', (node) => {
        node.spec.gateway = { ...node.spec.gateway, replicas: 2, autoscaling: { maxReplicas: 6 } };
      }),
    );
    const hpa = one<V2HorizontalPodAutoscaler>(children, 'HorizontalPodAutoscaler');
    const deployment = one<V1Deployment>(children, 'Deployment');
    expect(hpa.apiVersion).to.equal('autoscaling/v2');
    expect(hpa.metadata!.name).to.equal(deployment.metadata!.name);
    expect(hpa.metadata!.ownerReferences![0]).to.include({ kind: 'OracleNode', controller: true });
    expect(hpa.spec).to.deep.equal({
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: deployment.metadata!.name },
      minReplicas: 2,
      maxReplicas: 6,
      metrics: [
        { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } },
      ],
    });
    expect(deployment.spec).to.not.have.property('replicas');
    expect(byKind(children, 'PodDisruptionBudget')).to.have.length(1);
  });

  it('gateway autoscaling: minReplicas, CPU target and custom metrics from the spec; none without it', () => {
    const metrics = [
      { type: 'Pods', pods: { metric: { name: 'rps' }, target: { type: 'AverageValue', averageValue: '100' } } },
    ];
    const custom = buildChildren(
      inputFor('gateways-only', (node) => {
        node.spec.gateway = { autoscaling: { minReplicas: 1, maxReplicas: 1, targetCPUUtilizationPercentage: 50 } };
      }),
    );
    expect(one<V2HorizontalPodAutoscaler>(custom, 'HorizontalPodAutoscaler').spec).to.deep.include({
      minReplicas: 1,
      maxReplicas: 1,
      metrics: [
        { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } } },
      ],
    });
    expect(byKind(custom, 'PodDisruptionBudget')).to.have.length(0);
    const withMetrics = buildChildren(
      inputFor('gateways-only', (node) => {
        node.spec.gateway = { autoscaling: { maxReplicas: 3, metrics } };
      }),
    );
    expect(one<V2HorizontalPodAutoscaler>(withMetrics, 'HorizontalPodAutoscaler').spec!.metrics).to.deep.equal(metrics);
    expect(byKind(buildChildren(inputFor('full-multi-chain')), 'HorizontalPodAutoscaler')).to.have.length(0);
    expect(
      byKind(
        buildChildren(
          inputFor('minimal', (node) => {
            node.spec.gateway = { autoscaling: { maxReplicas: 3 } };
          }),
        ),
        'HorizontalPodAutoscaler',
      ),
    ).to.have.length(0);
  });

  it('least privilege: namespaced Roles, no wildcards, writes only to its own cache and cycle ConfigMaps', () => {
    const roles = byKind(buildChildren(inputFor('minimal')), 'Role') as unknown as V1Role[];
    for (const role of roles)
      for (const rule of role.rules ?? []) {
        expect(rule.verbs).not.to.include('*');
        expect(rule.resources).not.to.include('*');
        expect(rule.resources).not.to.include('secrets');
      }
    const coordinator = roles.find((r) => r.metadata!.name === 'minimal-dev-coordinator')!;
    const updates = coordinator.rules!.filter((r) => r.verbs.includes('update'));
    expect(updates.map((r) => r.resourceNames)).to.deep.equal([
      ['minimal-cache', 'minimal-cycle'],
      // The hand-over Lease: per node (not per stage), read and renewed only by name.
      ['minimal-coordinator'],
    ]);
    const leases = coordinator.rules!.filter((r) => r.resources!.includes('leases'));
    expect(leases.map(({ apiGroups, resourceNames, verbs }) => ({ apiGroups, resourceNames, verbs }))).to.deep.equal([
      { apiGroups: ['coordination.k8s.io'], resourceNames: undefined, verbs: ['create'] },
      { apiGroups: ['coordination.k8s.io'], resourceNames: ['minimal-coordinator'], verbs: ['get', 'update'] },
    ]);
    expect(coordinator.rules!.find((r) => r.resources!.includes('jobs'))!.verbs).to.include.members([
      'create',
      'delete',
      'watch',
    ]);
  });

  it('pod template hashes change when the config or the Secret changes, and only then', () => {
    const template = (input: BuildInput) =>
      one<V1CronJob>(buildChildren(input), 'CronJob').spec!.jobTemplate.spec!.template.metadata!.annotations!;
    const base = template(inputFor('minimal'));
    expect(template(inputFor('minimal'))).to.deep.equal(base);
    const edited = template(
      inputFor('minimal', (node) => {
        (node.spec.config.nodeSettings as { logLevel: string }).logLevel = 'DEBUG';
      }),
    );
    expect(edited['oracle-node.io/config-hash']).not.to.equal(base['oracle-node.io/config-hash']);
    expect(edited['oracle-node.io/secret-hash']).to.equal(base['oracle-node.io/secret-hash']);
    const rotated = template(inputFor('minimal', undefined, 'secret-hash-2'));
    expect(rotated['oracle-node.io/secret-hash']).not.to.equal(base['oracle-node.io/secret-hash']);
    expect(rotated['oracle-node.io/config-hash']).to.equal(base['oracle-node.io/config-hash']);
  });

  it('names are stage-qualified, so two stages never collide', () => {
    const names = (stage: string) =>
      buildChildren(
        inputFor('minimal', (node) => {
          (node.spec.config.nodeSettings as { stage: string }).stage = stage;
        }),
      )
        .filter((c) => c.object.metadata.labels['oracle-node.io/stage'])
        .map((c) => `${c.object.kind}/${c.object.metadata.name}`);
    const blue = names('blue');
    const green = names('green');
    expect(blue.filter((n) => green.includes(n))).to.deep.equal([]);
  });

  it('every environment variable the builders set is one the pods read (the contract), and parses', () => {
    const input = inputFor('full-multi-chain');
    const children = buildChildren(input);
    const cronJob = children.find((c) => c.object.kind === 'CronJob')!.object as V1CronJob;
    const deployment = children.find((c) => c.object.kind === 'Deployment')!.object as V1Deployment;
    const worker = buildWorkerTemplate(input).template;
    const contract = new Set<string>(Object.values(ENV));
    const containers = [
      ...cronJob.spec!.jobTemplate.spec!.template.spec!.containers,
      ...deployment.spec!.template.spec!.containers,
      ...worker.spec!.containers,
    ];
    // Besides the contract's variables, only single keys of the node's own Secret.
    for (const container of containers)
      for (const variable of container.env ?? [])
        expect(
          contract.has(variable.name) || variable.valueFrom?.secretKeyRef?.name === 'full-secrets',
          `${container.name}: ${variable.name}`,
        ).to.equal(true);
    // What the coordinator pod would see (fieldRefs filled in as the kubelet does) satisfies the contract.
    const env = Object.fromEntries(
      (cronJob.spec!.jobTemplate.spec!.template.spec!.containers[0]!.env ?? []).map((v) => [
        v.name,
        v.valueFrom?.fieldRef?.fieldPath === 'status.podIP'
          ? '10.244.0.7'
          : (v.value ?? `from-${v.valueFrom?.fieldRef?.fieldPath}`),
      ]),
    );
    expect(readCoordinatorEnvironment(env)!.workerTemplate).to.deep.equal(JSON.parse(env[ENV.workerTemplate]!));
    // The pod IP from the downward API: where the window's workers reach the coordinator.
    expect(readCoordinatorEnvironment(env)!.podIp).to.equal('10.244.0.7');
  });

  describe('coordinator window', () => {
    const coordinatorOf = (edit?: (node: OracleNode) => void) => {
      const cronJob = one<V1CronJob>(buildChildren(inputFor('minimal', edit)), 'CronJob');
      const job = cronJob.spec!.jobTemplate.spec!;
      return {
        args: job.template.spec!.containers[0]!.args!,
        activeDeadlineSeconds: job.activeDeadlineSeconds,
        concurrencyPolicy: cronJob.spec!.concurrencyPolicy,
      };
    };
    const coordinator = (settings: { schedule?: string; pollInterval?: number }) =>
      coordinatorOf((node) => {
        node.spec.coordinator = { ...node.spec.coordinator, ...settings } as typeof node.spec.coordinator;
      });
    const oneShot = ['coordinator', '-c', '/etc/oracle-node/config.json'];

    it('by default each run is a 70 s window polling every second that hands over through the node Lease', () => {
      expect(coordinatorOf()).to.deep.equal({
        args: [...oneShot, '--window', '70', '--poll-interval', '1', '--handover-lease', 'minimal-coordinator'],
        activeDeadlineSeconds: 80,
        concurrencyPolicy: 'Allow',
      });
      expect(HANDOVER_ALLOWANCE_SECONDS).to.equal(10);
    });

    it('the hand-over timing rule: the window outlasts the next tick by the allowance, at most two runs overlap', () => {
      for (const schedule of ['* * * * *', '*/5 * * * *', '0,20,50 * * * *', '0 * * * *']) {
        const period = scheduleMinPeriodSeconds(schedule);
        const run = coordinatorRun(schedule, 1, 'n-coordinator');
        const window = Number(run.windowArgs[run.windowArgs.indexOf('--window') + 1]);
        const span = Math.min(period, MAX_WINDOW_SPAN_SECONDS);
        // The next run (its pod starting up to the allowance later than this one's did) waits while this one polls.
        expect(window, schedule).to.equal(span + HANDOVER_ALLOWANCE_SECONDS);
        // The Job's deadline leaves the hard end and a 5 s start-up after the window.
        expect(window + HARD_END_MARGIN_MS / 1000 + 5, schedule).to.be.at.most(run.activeDeadlineSeconds);
        // Deadline and grace end before the tick after next: never three coordinators at once.
        expect(run.activeDeadlineSeconds + COORDINATOR_GRACE_SECONDS, schedule).to.be.below(2 * period);
        expect(run.concurrencyPolicy).to.equal('Allow');
      }
    });

    it('spec.redundancy.standbyDelayBlocks makes the coordinator a standby; 0 or absent, the primary (no argument)', () => {
      const redundancy = (standbyDelayBlocks?: number) =>
        coordinatorOf((node) => {
          node.spec.redundancy = standbyDelayBlocks === undefined ? undefined : { standbyDelayBlocks };
        }).args;
      expect(redundancy(6)).to.deep.equal([...coordinatorOf().args, '--standby-delay-blocks', '6']);
      // Switchover and failback are this one field: the primary's args are exactly those of a node without it.
      expect(redundancy(0)).to.deep.equal(coordinatorOf().args);
      expect(redundancy(undefined)).to.deep.equal(coordinatorOf().args);
    });

    it("spec.apiRetryWindowSeconds is the coordinator's --api-retry-window; absent, the engine's default (no argument)", () => {
      const retried = (apiRetryWindowSeconds?: number) =>
        coordinatorOf((node) => {
          if (apiRetryWindowSeconds !== undefined) node.spec.apiRetryWindowSeconds = apiRetryWindowSeconds;
        }).args;
      expect(retried(600)).to.deep.equal([...coordinatorOf().args, '--api-retry-window', '600']);
      expect(retried(0)).to.deep.equal([...coordinatorOf().args, '--api-retry-window', '0']);
      expect(retried(undefined)).to.deep.equal(coordinatorOf().args);
    });

    it('after SIGTERM the cycle in flight settles and the report is written within the grace period', () => {
      const pod = one<V1CronJob>(buildChildren(inputFor('minimal')), 'CronJob').spec!.jobTemplate.spec!.template.spec!;
      expect(pod.terminationGracePeriodSeconds! * 1000).to.be.greaterThan(
        SETTLE_AFTER_STOP_MS + REPORT_AFTER_SIGTERM_MS,
      );
    });

    it('the Lease is per node, not per stage: two stages of a node hand over through the same one', () => {
      const leaseOf = (stage: string) => {
        const { args } = coordinatorOf((node) => {
          (node.spec.config.nodeSettings as { stage: string }).stage = stage;
        });
        return args[args.indexOf('--handover-lease') + 1];
      };
      expect(leaseOf('blue')).to.equal('minimal-coordinator');
      expect(leaseOf('green')).to.equal('minimal-coordinator');
    });

    it('spec.coordinator.pollInterval sets the poll interval of the window', () => {
      expect(coordinator({ pollInterval: 2.5 }).args.slice(3)).to.deep.equal([
        '--window',
        '70',
        '--poll-interval',
        '2.5',
        '--handover-lease',
        'minimal-coordinator',
      ]);
    });

    it('pollInterval 0 turns windows off: one cycle per tick, exactly the args, deadline and Forbid of before', () => {
      expect(coordinator({ pollInterval: 0 })).to.deep.equal({
        args: oneShot,
        activeDeadlineSeconds: COORDINATOR_DEADLINE_SECONDS,
        concurrencyPolicy: 'Forbid',
      });
      expect(COORDINATOR_DEADLINE_SECONDS).to.equal(55);
    });

    it('a schedule every 5 minutes gets a window of its period plus the hand-over allowance', () => {
      const run = coordinator({ schedule: '*/5 * * * *' });
      expect(run.args.slice(3, 5)).to.deep.equal(['--window', '310']);
      expect(run.activeDeadlineSeconds).to.equal(320);
    });

    it('a poll interval below the engine least is raised to it', () => {
      const { args } = coordinator({ pollInterval: 0.01 });
      expect(args[args.indexOf('--poll-interval') + 1]).to.equal('0.1');
    });

    it('the period of a schedule is the smallest gap between its ticks, 60 s for what it cannot read, hours capped', () => {
      expect(scheduleMinPeriodSeconds('* * * * *')).to.equal(60);
      expect(scheduleMinPeriodSeconds('*/10 * * * *')).to.equal(600);
      expect(scheduleMinPeriodSeconds('0,20,50 * * * *')).to.equal(600);
      expect(scheduleMinPeriodSeconds('5 * * * *')).to.equal(3600);
      expect(scheduleMinPeriodSeconds('10-20/5 * * * *')).to.equal(300);
      expect(scheduleMinPeriodSeconds('*/7 * * * *')).to.equal(240); // 56 -> 0 of the next hour
      expect(scheduleMinPeriodSeconds('@hourly')).to.equal(60);
      expect(scheduleMinPeriodSeconds('MON * * * *')).to.equal(60);
      expect(coordinatorRun('0 * * * *', 1, 'n-coordinator')).to.deep.equal({
        windowArgs: [
          '--window',
          String(MAX_WINDOW_SPAN_SECONDS + HANDOVER_ALLOWANCE_SECONDS),
          '--poll-interval',
          '1',
          '--handover-lease',
          'n-coordinator',
        ],
        activeDeadlineSeconds: MAX_WINDOW_SPAN_SECONDS + HANDOVER_ALLOWANCE_SECONDS + 10,
        concurrencyPolicy: 'Allow',
      });
    });
  });

  it('spec.telemetry.otlpEndpoint reaches the coordinator, worker and gateway pods as OTEL_EXPORTER_OTLP_ENDPOINT, and nothing without it', () => {
    const endpointOf = (input: BuildInput) => {
      const children = buildChildren(input);
      const cronJob = children.find((c) => c.object.kind === 'CronJob')!.object as V1CronJob;
      const deployment = children.find((c) => c.object.kind === 'Deployment')!.object as V1Deployment;
      return [
        cronJob.spec!.jobTemplate.spec!.template.spec!.containers[0]!,
        deployment.spec!.template.spec!.containers[0]!,
        buildWorkerTemplate(input).template.spec!.containers[0]!,
      ].map((container) => container.env?.find((v) => v.name === ENV.otlpEndpoint)?.value);
    };
    const endpoint = 'http://otel-collector.observability:4318';
    expect(
      endpointOf(
        inputFor('full-multi-chain', (node) => {
          node.spec.telemetry = { otlpEndpoint: endpoint };
        }),
      ),
    ).to.deep.equal([endpoint, endpoint, endpoint]);
    expect(endpointOf(inputFor('full-multi-chain'))).to.deep.equal([undefined, undefined, undefined]);
  });

  it('spec.telemetry sets the standard variables on every pod: headers by Secret reference only, the resource naming the node', () => {
    const input = inputFor('full-multi-chain', (node) => {
      node.spec.telemetry = {
        otlpEndpoint: 'http://otel-collector.observability:4318',
        headersSecretRef: { name: 'collector-auth', key: 'headers' },
        serviceName: 'price-node',
        resourceAttributes: { 'deployment.environment': 'prod', team: 'a,b=$(SECRET)' },
        sampler: 'parentbased_traceidratio',
        samplerRatio: 0.25,
      };
    });
    const children = buildChildren(input);
    const cronJob = children.find((c) => c.object.kind === 'CronJob')!.object as V1CronJob;
    const deployment = children.find((c) => c.object.kind === 'Deployment')!.object as V1Deployment;
    const stage = input.config.nodeSettings.stage;
    for (const container of [
      cronJob.spec!.jobTemplate.spec!.template.spec!.containers[0]!,
      deployment.spec!.template.spec!.containers[0]!,
      buildWorkerTemplate(input).template.spec!.containers[0]!,
    ]) {
      const env = container.env ?? [];
      const named = (name: string) => env.find((v) => v.name === name);
      expect(named(ENV.otlpHeaders)).to.deep.equal({
        name: ENV.otlpHeaders,
        valueFrom: { secretKeyRef: { name: 'collector-auth', key: 'headers' } },
      });
      expect(named(ENV.otelServiceName)?.value).to.equal('price-node');
      expect(named(ENV.otelSampler)?.value).to.equal('parentbased_traceidratio');
      expect(named(ENV.otelSamplerArg)?.value).to.equal('0.25');
      // The user's values percent-encoded (a comma or "$(" cannot split the list or reach the kubelet's expansion);
      // the namespace from the downward-API variable defined before it.
      expect(named(ENV.otelResourceAttributes)?.value).to.equal(
        `deployment.environment=prod,team=a%2Cb%3D%24(SECRET),k8s.namespace.name=$(${ENV.namespace}),` +
          `oracle_node.name=${input.node.metadata.name},oracle_node.stage=${stage}`,
      );
      expect(env.findIndex((v) => v.name === ENV.namespace)).to.be.below(
        env.findIndex((v) => v.name === ENV.otelResourceAttributes),
      );
    }
    // Without an endpoint the rest of spec.telemetry sets nothing: tracing is off.
    const off = buildChildren(
      inputFor('full-multi-chain', (node) => {
        node.spec.telemetry = { serviceName: 'x', headersSecretRef: { name: 'a', key: 'b' } };
      }),
    );
    const offEnv = (off.find((c) => c.object.kind === 'CronJob')!.object as V1CronJob).spec!.jobTemplate.spec!.template
      .spec!.containers[0]!.env!;
    expect(offEnv.filter((v) => v.name.startsWith('OTEL_'))).to.deep.equal([]);
  });

  describe('worker Jobs', () => {
    const template = buildWorkerTemplate(inputFor('full-multi-chain'));

    it('Indexed, parallelism never above maxConcurrency, completions = shards, TTL cleanup', () => {
      for (const [shards, concurrency] of [
        [10, 4],
        [3, 4],
        [1, 100],
        [250, 100],
      ] as const) {
        const job = buildWorkerJob(template, { name: 'x-1', shardCount: shards, concurrency, chainId: '1' });
        expect(job.spec!.completionMode).to.equal('Indexed');
        expect(job.spec!.completions).to.equal(shards);
        expect(job.spec!.parallelism).to.be.at.most(concurrency);
        expect(job.spec!.parallelism).to.equal(Math.min(shards, concurrency));
        expect(job.spec!.ttlSecondsAfterFinished).to.equal(600);
        expect(job.spec!.activeDeadlineSeconds).to.equal(45);
        expect(job.spec!.suspend).to.equal(true);
      }
    });

    it('workers run `oracle-node worker --shard` on their index, with the shard inputs mounted', () => {
      const job = buildWorkerJob(template, { name: 'x-1', shardCount: 2, concurrency: 2, chainId: '1' });
      const pod = job.spec!.template.spec!;
      expect(pod.containers[0]!.args).to.include('worker');
      expect(pod.containers[0]!.args!.join(' ')).to.contain('shard-$(JOB_COMPLETION_INDEX).json');
      expect(pod.volumes!.find((v) => v.name === 'shards')!.configMap!.name).to.equal('x-1');
      expect(job.metadata!.labels).to.include({
        'app.kubernetes.io/component': 'worker',
        'oracle-node.io/name': 'full',
      });
    });

    it('Job names stay within 63 characters', () => {
      const long = workerJobName(`${'a'.repeat(60)}-prod-worker`, 'abc123-31337');
      expect(long.length).to.be.at.most(63);
      expect(workerJobName('n-dev-worker', 'c1')).to.equal('n-dev-worker-c1');
      expect(hashOf({ a: 1, b: 2 })).to.equal(hashOf({ b: 2, a: 1 }));
    });
  });
});
