"""unisim's conformance suite against MjStepBackend: one test per check."""

import pytest

from unisim.testing import conformance_tests
from unisim_mjstep import MjStepBackend


@pytest.mark.parametrize("check", conformance_tests(MjStepBackend))
def test_conformance(check):
    check()
