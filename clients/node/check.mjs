// node-redis 6 in its default mode (HELLO 3, no fallback to RESP2) against
// a Sediment server: typed replies, a pipeline inside MULTI, pub/sub, and a
// blocking pop served by another client. Usage: node check.mjs host:port
import { createClient } from 'redis';
import assert from 'node:assert/strict';

const url = `redis://${process.argv[2]}`;
const fail = (e) => { console.error('FAIL', e); process.exit(1); };
const c = createClient({ url });
c.on('error', fail);
await c.connect();
assert.equal((await c.sendCommand(['HELLO'])).proto, 3);

await c.hSet('node:h', { a: '1', b: '2' });
assert.deepEqual({ ...(await c.hGetAll('node:h')) }, { a: '1', b: '2' });
await c.sAdd('node:s', ['x', 'y']);
assert.deepEqual([...(await c.sMembers('node:s'))].sort(), ['x', 'y']);
await c.zAdd('node:z', [{ score: 1.5, value: 'm' }, { score: 2, value: 'n' }]);
assert.deepEqual(await c.zRangeWithScores('node:z', 0, -1), [{ value: 'm', score: 1.5 }, { value: 'n', score: 2 }]);
assert.equal(await c.zScore('node:z', 'm'), 1.5);
assert.equal(await c.get('node:nosuch'), null);
const id = await c.xAdd('node:st', '*', { f: 'v' });
const read = await c.xRead({ key: 'node:st', id: '0' });
assert.equal(read[0].messages[0].id, id);
const info = await c.xInfoStream('node:st');
assert.equal(info.length, 1);

const [, incr, hget] = await c.multi().set('node:k', '1').incr('node:k').hGet('node:h', 'a').exec();
assert.equal(incr, 2);
assert.equal(hget, '1');

const sub = c.duplicate();
sub.on('error', fail);
await sub.connect();
const got = new Promise((resolve) => sub.subscribe('node:ch', resolve));
await new Promise((r) => setTimeout(r, 50));
assert.equal(await c.publish('node:ch', 'hello'), 1);
assert.equal(await got, 'hello');

const popper = c.duplicate();
popper.on('error', fail);
await popper.connect();
const popped = popper.blPop('node:q', 5);
await new Promise((r) => setTimeout(r, 100));
await c.rPush('node:q', 'job');
assert.deepEqual({ ...(await popped) }, { key: 'node:q', element: 'job' });

await Promise.all([c.quit(), sub.quit(), popper.quit()]);
console.log('node-redis ok');
