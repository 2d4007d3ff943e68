"""The embedded demo (``deltalog demo --embedded``) prints each transaction's changes and where
its queries stepped."""

from __future__ import annotations

from workers.demo import QUERIES, TRANSACTIONS, run_embedded_demo


def test_the_embedded_demo_prints_changes_and_where_each_transaction_stepped() -> None:
    lines: list[str] = []
    engine = run_embedded_demo(out=lines.append)
    headers = [line for line in lines if line.startswith("\ntx ")]
    assert len(headers) == len(TRANSACTIONS)
    assert "(no query stepped)" in headers[0]  # the schema changes no query
    assert all("(stepped on local)" in header for header in headers[1:]), headers
    assert "  triangles            + [:ivan :petr :olga]" in lines
    assert set(engine.queries) == set(QUERIES)
