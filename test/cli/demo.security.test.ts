// The demo commands write a demo organization, a live key holding every scope and demo bookings
// executed by organization 200: never into a server database unless asked for explicitly.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { main } from '../../src/cli.js';

const saved = { ...process.env };
after(() => {
  process.env = saved;
});

// Nothing listens on port 1: were a command to go on, it would fail on connecting instead.
process.env.DATABASE_URL = 'postgres://postgres@127.0.0.1:1/production';
process.env.SVC_MASTER_KEY = 'ab'.repeat(32);
process.env.SVC_OPERATOR_TOKEN = 't'.repeat(32);

for (const args of [['demo'], ['serve', '--demo']]) {
  test(`svc ${args.join(' ')} refuses to run against DATABASE_URL`, async () => {
    await assert.rejects(main(args), (error: Error) => {
      assert.match(error.message, /DATABASE_URL/);
      assert.match(error.message, /--allow-server-database/);
      return true;
    });
  });

  test(`svc ${args.join(' ')} --allow-server-database goes on (and here fails to connect)`, async () => {
    await assert.rejects(main([...args, '--allow-server-database']), (error: Error) => {
      assert.doesNotMatch(error.message, /--allow-server-database/);
      return true;
    });
  });
}
