import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { eq } from 'drizzle-orm';
import { parseConfig } from '@toolport/core';
import { hashPassword, PASSWORD_COST, verifyPassword } from '../packages/core/src/crypto';
import { users } from '../packages/core/src/db/schema/index';
import { newId } from '../packages/core/src/ids';
import { Client, newPerson } from './helpers/http';
import { startToolport, TEST_PASSWORD_COST, type Toolport } from './helpers/target';

/**
 * The suite hashes passwords at a cheaper scrypt cost (test/helpers/target.ts); this file checks,
 * once, that production keeps N=2^15, r=8 and that a hash is verified with the cost written in it.
 */
let tp: Toolport;
before(async () => {
  tp = await startToolport();
});
after(async () => {
  await tp?.stop();
});

const storedHash = async (email: string) => (await tp.svc.db.select({ h: users.passwordHash }).from(users).where(eq(users.email, email)))[0]!.h;

describe('password hashing cost', () => {
  it('is N=2^15, r=8, p=1 with the settings production parses (it is never read from the environment)', async () => {
    assert.deepEqual(PASSWORD_COST, { N: 32768, r: 8, p: 1 });
    for (const env of [{}, { DATABASE_URL: 'postgres://db/toolport', REDIS_URL: 'redis://cache:6379' }]) {
      const config = parseConfig(env);
      assert.equal(config.passwordCost, undefined);
      assert.match(await hashPassword('correct horse battery', config.passwordCost), /^scrypt\$32768\$8\$1\$[\w-]{22}\$[\w-]{43}$/);
    }
  });

  it('is the cheaper test cost on the suite’s servers, written into each hash', async () => {
    const p = await newPerson(tp.url);
    const { N, r, p: par } = TEST_PASSWORD_COST;
    assert.ok(N < PASSWORD_COST.N);
    assert.ok((await storedHash(p.email)).startsWith(`scrypt$${N}$${r}$${par}$`));
    assert.equal((await new Client(tp.url).post('/api/session/login', { email: p.email, password: p.password })).status, 200);
    assert.equal((await new Client(tp.url).post('/api/session/login', { email: p.email, password: 'wrong password!' })).status, 401);
  });

  it('verifies a hash by the cost it carries: one made at the production cost signs in on a server that hashes cheaper', async () => {
    const email = `old-${randomBytes(4).toString('hex')}@example.com`;
    const password = 'an older account';
    const passwordHash = await hashPassword(password);
    assert.ok(passwordHash.startsWith('scrypt$32768$8$1$'));
    await tp.svc.db.insert(users).values({ id: newId('usr'), email, passwordHash, userKey: randomBytes(18).toString('base64url') });
    assert.equal((await new Client(tp.url).post('/api/session/login', { email, password })).status, 200);
    assert.equal((await new Client(tp.url).post('/api/session/login', { email, password: 'not the password' })).status, 401);
    assert.equal(await verifyPassword(password, await hashPassword(password, TEST_PASSWORD_COST)), true);
    assert.equal(await verifyPassword('other', await hashPassword(password, TEST_PASSWORD_COST)), false);
  });
});
