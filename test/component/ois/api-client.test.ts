import zlib from 'node:zlib';
import { expect } from 'chai';
import { callApi } from '../../../src/ois/api-client.js';
import { ApiServer } from './api-server.js';

describe('ois/api-client against loopback APIs', function () {
  this.timeout(30_000);
  let api: ApiServer;
  let other: ApiServer;

  beforeEach(async () => {
    api = await new ApiServer().start();
    other = await new ApiServer().start();
  });
  afterEach(async () => {
    await api.stop();
    await other.stop();
  });

  const get = (path: string, options: Parameters<typeof callApi>[1] = {}) =>
    callApi({ method: 'GET', url: `${api.url}${path}`, headers: {} }, { timeoutsMs: [2_000, 2_000], ...options });

  it('parses JSON answers and reuses pooled connections', async () => {
    const ports: number[] = [];
    api.route('/ok', (request, _body, response) => {
      ports.push(request.socket.remotePort!);
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"price":1.5}');
    });
    expect(await get('/ok')).to.deep.equal({ success: true, status: 200, data: { price: 1.5 } });
    expect(await get('/ok')).to.deep.include({ success: true });
    expect(ports[0]).to.equal(ports[1]);
  });

  it('sends POST bodies with their headers', async () => {
    api.json('/post', { ok: true });
    const result = await callApi({
      method: 'POST',
      url: `${api.url}/post`,
      headers: { 'Content-Type': 'application/json', 'X-Key': 'k' },
      body: '{"a":1}',
    });
    expect(result.success).to.equal(true);
    expect(api.requests[0]).to.deep.include({ method: 'POST', body: '{"a":1}' });
    expect(api.requests[0]!.headers['x-key']).to.equal('k');
    expect(api.requests[0]!.headers['content-type']).to.equal('application/json');
  });

  it('sends headers the pooled client refuses (Keep-Alive, Host) exactly as given, through node:http', async () => {
    api.json('/headers', { ok: true });
    const result = await callApi(
      { method: 'GET', url: `${api.url}/headers`, headers: { 'Keep-Alive': 'timeout=5', Host: 'api.example' } },
      { timeoutsMs: [2_000] },
    );
    expect(result).to.deep.include({ success: true });
    expect(api.requests[0]!.headers['keep-alive']).to.equal('timeout=5');
    expect(api.requests[0]!.headers.host).to.equal('api.example');
  });

  it('sends the method upper-cased whatever its spelling in the request', async () => {
    api.json('/method', { ok: true });
    const result = await callApi(
      { method: 'get' as 'GET', url: `${api.url}/method`, headers: {} },
      { timeoutsMs: [2_000] },
    );
    expect(result).to.deep.include({ success: true });
    expect(api.requests[0]!.method).to.equal('GET');
  });

  it('turns non-2xx answers into "API call failed with status code N" after one retry', async () => {
    api.json('/fail', { error: 'boom' }, 500);
    expect(await get('/fail')).to.deep.equal({ success: false, errorMessage: 'API call failed with status code 500' });
    expect(api.requests).to.have.length(2);
    expect(await get('/missing', { timeoutsMs: [1_000] })).to.deep.equal({
      success: false,
      errorMessage: 'API call failed with status code 404',
    });
  });

  it('times out slow APIs per attempt and succeeds on the retry when the API recovers', async () => {
    let calls = 0;
    api.route('/slow', (_request, _body, response) => {
      calls++;
      const delay = calls === 1 ? 600 : 10;
      setTimeout(() => response.writeHead(200, { 'content-type': 'application/json' }).end('{"v":1}'), delay);
    });
    expect(await get('/slow', { timeoutsMs: [200, 2_000] })).to.deep.include({ success: true, data: { v: 1 } });
    // The first answer (600 ms) would have been accepted without the 200 ms timeout: the retry proves the cut.
    expect(calls).to.equal(2);
    calls = -100; // every later answer is slow
    api.route('/slower', (_request, _body, response) => {
      setTimeout(() => response.writeHead(200).end('{}'), 1_000);
    });
    expect(await get('/slower', { timeoutsMs: [100, 150] })).to.deep.equal({
      success: false,
      errorMessage: 'API call failed with no response',
    });
  });

  it('times out an API that stalls in the middle of the body', async () => {
    api.route('/stall', (_request, _body, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"a":');
    });
    expect(await get('/stall', { timeoutsMs: [150] })).to.deep.equal({
      success: false,
      errorMessage: 'API call failed with no response',
    });
  });

  it('requires JSON', async () => {
    api.route('/html', (_request, _body, response) =>
      response.writeHead(200, { 'content-type': 'text/html' }).end('<html>'),
    );
    expect(await get('/html')).to.deep.equal({
      success: false,
      errorMessage: 'API call failed with a response that is not valid JSON',
    });
  });

  it('caps the response size: declared, streamed and decompressed', async () => {
    const big = JSON.stringify({ data: 'x'.repeat(2 * 1024 * 1024) });
    api.route('/declared', (_request, _body, response) => response.writeHead(200).end(big));
    api.route('/chunked', (_request, _body, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      const chunk = 'x'.repeat(64 * 1024);
      let sent = 0;
      const timer = setInterval(() => {
        if (response.destroyed || sent > 64) {
          clearInterval(timer);
          response.end();
          return;
        }
        response.write(chunk);
        sent++;
      }, 1);
    });
    const bomb = zlib.gzipSync(Buffer.alloc(50 * 1024 * 1024, 32));
    api.route('/bomb', (_request, _body, response) =>
      response.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(bomb),
    );
    const limit = { maxResponseBytes: 1024 * 1024, timeoutsMs: [5_000] };
    const message = 'API call failed with a response larger than 1048576 bytes';
    expect(await get('/declared', limit)).to.deep.equal({ success: false, errorMessage: message });
    expect(await get('/chunked', limit)).to.deep.equal({ success: false, errorMessage: message });
    expect(await get('/bomb', limit)).to.deep.equal({ success: false, errorMessage: message });
    // The default limit (4 MiB) accepts the 2 MiB answer.
    expect((await get('/declared')).success).to.equal(true);
  });

  it('decompresses gzip answers', async () => {
    api.route('/gzip', (_request, _body, response) =>
      response
        .writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
        .end(zlib.gzipSync('{"z":[1,2]}')),
    );
    expect(await get('/gzip')).to.deep.include({ success: true, data: { z: [1, 2] } });
  });

  it('reports a body that does not decompress', async () => {
    api.route('/corrupt', (_request, _body, response) =>
      response
        .writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
        .end('not gzip at all'),
    );
    expect(await get('/corrupt', { timeoutsMs: [2_000] })).to.deep.equal({
      success: false,
      errorMessage: 'API call failed with a response that could not be decompressed',
    });
  });

  it('follows same-origin redirects only', async () => {
    api.route('/moved', (_request, _body, response) => response.writeHead(302, { location: '/target' }).end());
    api.json('/target', { here: true });
    expect(await get('/moved?key=secret')).to.deep.include({ success: true, data: { here: true } });

    other.json('/steal', { stolen: true });
    api.route('/away', (_request, _body, response) =>
      response.writeHead(301, { location: `${other.url}/steal` }).end(),
    );
    expect(await get('/away?api_key=secret')).to.deep.equal({
      success: false,
      errorMessage: 'API call failed with status code 301',
    });
    expect(other.requests).to.have.length(0);

    api.route('/loop', (_request, _body, response) => response.writeHead(302, { location: '/loop' }).end());
    expect(await get('/loop', { timeoutsMs: [2_000] })).to.deep.equal({
      success: false,
      errorMessage: 'API call failed with status code 302',
    });
  });

  it('turns POST into GET on 303 and keeps it on 307', async () => {
    api.route('/see-other', (_request, _body, response) => response.writeHead(303, { location: '/target' }).end());
    api.route('/temporary', (_request, _body, response) => response.writeHead(307, { location: '/target' }).end());
    api.json('/target', { ok: 1 });
    const post = (path: string) =>
      callApi({
        method: 'POST',
        url: `${api.url}${path}`,
        headers: { 'Content-Type': 'application/json' },
        body: '{"a":1}',
      });
    expect((await post('/see-other')).success).to.equal(true);
    expect(api.requests.at(-1)).to.deep.include({ method: 'GET', body: '' });
    expect((await post('/temporary')).success).to.equal(true);
    expect(api.requests.at(-1)).to.deep.include({ method: 'POST', body: '{"a":1}' });
  });

  it('reports refused connections and bad URLs without leaking the URL', async () => {
    const refused = await callApi(
      { method: 'GET', url: 'http://127.0.0.1:1/x?api_key=topsecret', headers: { 'X-Key': 'topsecret' } },
      { timeoutsMs: [500, 500] },
    );
    expect(refused).to.deep.equal({ success: false, errorMessage: 'API call failed with no response' });
    const invalid = await callApi({ method: 'GET', url: 'not a url topsecret', headers: {} });
    expect(invalid).to.deep.equal({ success: false, errorMessage: 'API call failed in building the HTTP request' });
    const badHeader = await callApi({ method: 'GET', url: `${api.url}/x`, headers: { 'X-Key': 'top\nsecret' } });
    expect(badHeader).to.deep.equal({ success: false, errorMessage: 'API call failed in building the HTTP request' });
  });
});
