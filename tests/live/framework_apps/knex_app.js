// A Node app on knex (issue 23 live test): the handler of POST /orders (controller orders,
// action create) opens a transaction, locks a row and updates another with every query
// carrying a sqlcommenter comment through knex's own .comment(), and leaves it idle.
// Same protocol as django_app.py:  node knex_app.js pg|mysql2 HOST PORT DATABASE TABLE
'use strict';
const readline = require('readline');
const knexFactory = require('knex');

const [client, host, port, database, table] = process.argv.slice(2);
const knex = knexFactory({
  client,
  connection: { host, port: Number(port), database,
                user: client === 'pg' ? 'postgres' : 'root', password: '' },
  pool: { min: 1, max: 1 },
});
const lines = readline.createInterface({ input: process.stdin });
const queue = [];
lines.on('line', () => { const next = queue.shift(); if (next) next(); });
function say(word) {
  process.stdout.write(word + '\n');
  return new Promise((resolve) => queue.push(resolve));
}

function sqlcommenter(tags) {
  return Object.keys(tags).sort().map((k) =>
    `${encodeURIComponent(k)}='${encodeURIComponent(tags[k]).replace(/'/g, "\\'")}'`).join(',');
}

async function createOrder(trx, tags) {
  await trx(table).where('id', 1).forUpdate().first().comment(sqlcommenter(tags));
  await say('STEP1');
  await trx(table).where('id', 2).update({ s: 'created' }).comment(sqlcommenter(tags));
  await say('READY');
}

(async () => {
  const tags = { application: 'Shop', controller: 'orders', action: 'create',
                 framework: `knex:${require('knex/package.json').version}` };
  // one pooled connection: the session id read before the transaction is the transaction's
  const q = client === 'pg' ? 'select pg_backend_pid() as id' : 'select connection_id() as id';
  const res = await knex.raw(q);
  const row = client === 'pg' ? res.rows[0] : res[0][0];
  process.stdout.write(`ID ${row.id}\n`);
  await knex.transaction(async (trx) => {
    await createOrder(trx, tags);
    await trx.rollback();
  }).catch(() => {});
  process.stdout.write('DONE 200\n');
  await knex.destroy();
  lines.close();
})();
