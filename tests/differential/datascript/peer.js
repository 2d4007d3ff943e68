// Datascript for tests/differential: one request a line on stdin, its answer a line on stdout.
// A request is {schema, txs, query, inputs}; the answer holds, after each transaction of txs
// in turn, the query's result ({rows}), with {refused} when Datascript refused the
// transaction (the database stays as it was), or {error} when it threw on the query.
const d = require("datascript");
const readline = require("readline");

function answer(request) {
  let db = d.empty_db(request.schema);
  return request.txs.map((tx) => {
    const step = {};
    try {
      db = d.db_with(db, tx);
    } catch (error) {
      step.refused = String(error.message || error);
    }
    try {
      step.rows = d.q(request.query, db, ...request.inputs);
    } catch (error) {
      step.error = String(error.message || error);
    }
    return step;
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
