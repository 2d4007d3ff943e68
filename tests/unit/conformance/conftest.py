"""Each conformance module holds its cases in ``CASES``; its tests take them as ``case``
(every case, a strict xfail for each difference) and ``refused`` (the cases deltalog
refuses)."""

from __future__ import annotations

import pytest

from tests.unit.conformance.datascript import params, refusals


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    cases = getattr(metafunc.module, "CASES", None)
    if cases is None:
        return
    if "case" in metafunc.fixturenames:
        metafunc.parametrize("case", params(cases))
    if "refused" in metafunc.fixturenames:
        metafunc.parametrize("refused", refusals(cases))
