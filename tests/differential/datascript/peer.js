// Datascript for tests/differential: one request a line on stdin, its answer a line on stdout.
// A request is {schema, txs, query, inputs}; the answer holds the query's result after each
// transaction of txs, in turn, or the error Datascript threw.
const d = require("datascript");
const readline = require("readline");

function answer(request) {
  let db = d.empty_db(request.schema);
  return request.txs.map((tx) => {
    try {
      db = d.db_with(db, tx);
      return { rows: d.q(request.query, db, ...request.inputs) };
    } catch (error) {
      return { error: String(error.message || error) };
    }
  });
}

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  let out;
  try {
    out = { steps: answer(JSON.parse(line)) };
  } catch (error) {
    out = { error: String(error.message || error) };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
});
