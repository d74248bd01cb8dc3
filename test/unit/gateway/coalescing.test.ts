import { expect } from 'chai';
import { coalescingKey, InFlightCalls } from '../../../src/gateway/coalescing.js';
import type { Endpoint, Ois } from '../../../src/ois/index.js';

function oisWith(endpoint: Partial<Endpoint>): Ois {
  return {
    title: 'Prices',
    apiSpecifications: { servers: [{ url: 'https://api.example' }], paths: {}, components: { securitySchemes: {} } },
    endpoints: [
      {
        name: 'price',
        operation: { path: '/price', method: 'get' },
        fixedOperationParameters: [],
        reservedParameters: [],
        parameters: [],
        ...endpoint,
      },
    ],
  } as unknown as Ois;
}

describe('gateway request coalescing', () => {
  describe('coalescingKey', () => {
    it('is the same for the same OIS, endpoint and parameters, and differs when any of them differs', () => {
      const ois = oisWith({});
      const key = coalescingKey(ois, 'price', { coin: 'eth' });
      expect(key).to.be.a('string');
      expect(coalescingKey(ois, 'price', { coin: 'eth' })).to.equal(key);
      expect(coalescingKey(ois, 'price', { coin: 'btc' })).to.not.equal(key);
      expect(coalescingKey(ois, 'price', { coin: 'eth', extra: 1 })).to.not.equal(key);
      expect(coalescingKey({ ...ois, title: 'Other' } as Ois, 'price', { coin: 'eth' })).to.not.equal(key);
    });

    it('is undefined (no sharing) for a method other than GET, a pre-processing snippet or an unknown endpoint', () => {
      expect(coalescingKey(oisWith({ operation: { path: '/price', method: 'post' } }), 'price', {})).to.equal(
        undefined,
      );
      expect(coalescingKey(oisWith({ operation: undefined }), 'price', {})).to.equal(undefined);
      const snippet = { environment: 'Node', value: 'output = input', timeoutMs: 1000 };
      expect(coalescingKey(oisWith({ preProcessingSpecifications: [snippet] }), 'price', {})).to.equal(undefined);
      expect(coalescingKey(oisWith({ preProcessingSpecificationV2: snippet }), 'price', {})).to.equal(undefined);
      expect(coalescingKey(oisWith({}), 'other', {})).to.equal(undefined);
    });

    it('is undefined for parameters that cannot be serialised, instead of throwing', () => {
      let deep: unknown = 'leaf';
      for (let i = 0; i < 200_000; i++) deep = [deep];
      expect(coalescingKey(oisWith({}), 'price', { deep })).to.equal(undefined);
    });
  });

  describe('InFlightCalls', () => {
    it('shares a call among callers with its key while it runs, and forgets it once it settled', async () => {
      const calls = new InFlightCalls<number>();
      let runs = 0;
      let finish!: (value: number) => void;
      const call = () => {
        runs++;
        return new Promise<number>((resolve) => {
          finish = resolve;
        });
      };
      const first = calls.run('k', call);
      const second = calls.run('k', call);
      expect([first.shared, second.shared, runs, calls.size]).to.deep.equal([false, true, 1, 1]);
      finish(7);
      expect(await Promise.all([first.result, second.result])).to.deep.equal([7, 7]);
      expect(calls.size).to.equal(0);
      const third = calls.run('k', async () => {
        runs++;
        return 8;
      });
      expect([third.shared, await third.result, runs]).to.deep.equal([false, 8, 2]);
    });

    it('runs every call without a key on its own, and shares a failure with the callers that waited on it', async () => {
      const calls = new InFlightCalls<number>();
      let runs = 0;
      const count = async () => ++runs;
      await Promise.all([calls.run(undefined, count).result, calls.run(undefined, count).result]);
      expect(runs).to.equal(2);
      const failing = () => Promise.reject(new Error('upstream down'));
      const results = await Promise.allSettled([calls.run('f', failing).result, calls.run('f', failing).result]);
      expect(results.map((result) => result.status)).to.deep.equal(['rejected', 'rejected']);
      expect(calls.size).to.equal(0);
    });
  });
});
