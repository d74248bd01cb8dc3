import { expect } from 'chai';
import { Registry } from 'prom-client';
import { gatewayMetrics, observeAnswer, statusClass } from '../../../src/gateway/metrics.js';
import { metricValue } from '../../../src/observability/index.js';

describe('gateway metrics', () => {
  it('groups answers by status class', () => {
    expect([200, 204, 400, 429, 500, '503', 99, 'x'].map(statusClass)).to.deep.equal([
      '2xx',
      '2xx',
      '4xx',
      '4xx',
      '5xx',
      '5xx',
      'other',
      'other',
    ]);
  });

  it('an answer counts as a request with its latency, its status class and, for a 429, a throttle', async () => {
    const registry = new Registry();
    const metrics = gatewayMetrics(registry);
    observeAnswer(metrics, { gateway: 'httpGateway', endpoint: '0x01', status: '200' }, 0.01);
    observeAnswer(metrics, { gateway: 'httpGateway', endpoint: '0x01', status: '429' }, 0.001);
    observeAnswer(metrics, { gateway: 'httpGateway', endpoint: '0x01', status: '400' }, 0.001);
    expect(await metricValue(registry, 'gateway_requests_total', { status: '429' })).to.equal(1);
    expect(await metricValue(registry, 'gateway_responses_total', { status_class: '4xx' })).to.equal(2);
    expect(await metricValue(registry, 'gateway_responses_total', { status_class: '2xx' })).to.equal(1);
    expect(await metricValue(registry, 'gateway_too_many_requests_total', { gateway: 'httpGateway' })).to.equal(1);
    // Created once per registry: a second server on the same registry shares them.
    expect(gatewayMetrics(registry).requests).to.equal(metrics.requests);
  });
});
