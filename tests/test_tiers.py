"""The tier check itself (tests/tiers.py), run on small suites in a pytester directory.

This module is `integration`: the suites it runs start processes and listen on sockets on
purpose, in tests that the inner run's check must catch or let through.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration

CONFTEST = """
import pytest
from tests.tiers import (
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_runtest_call,
    pytest_runtest_makereport,
    pytest_runtest_setup,
    pytest_runtest_teardown,
)

@pytest.fixture(scope="session")
def mariadb():
    import subprocess
    subprocess.run(["true"], check=True)  # as a server fixture would: start a process
    yield "server"
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makeini("[pytest]\nmarkers =\n    slow: slow\n")
    return pytester


def test_a_unit_test_that_starts_a_process_fails_naming_the_rule(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_a="""
        import subprocess
        def test_spawns():
            subprocess.run(["true"])
        """
    )
    result = suite.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*tier check: test_a.py::test_spawns is in the unit tier but tried to start a subprocess*"]
    )


def test_a_unit_test_that_swallows_the_refusal_still_fails(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_b="""
        import socket
        def test_listens_and_hides_it():
            try:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", 0))
                    s.listen()
            except Exception:
                pass
        """
    )
    result = suite.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*unit tier but tried to listen on a socket (start a server)*"])


def test_a_unit_test_asking_for_a_server_fixture_is_integration_and_may_start_it(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_c="""
        def test_uses_the_server(mariadb):
            assert mariadb == "server"
        """
    )
    result = suite.runpytest("-m", "integration")
    result.assert_outcomes(passed=1)
    assert suite.runpytest("-m", "unit").ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_marks_slow_and_fork_are_caught_and_let_through_by_tier(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_d="""
        import os, subprocess, pytest

        def test_forks():
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)

        @pytest.mark.e2e
        def test_e2e_may_spawn():
            subprocess.run(["true"], check=True)

        @pytest.mark.slow
        def test_slow_is_e2e():
            subprocess.run(["true"], check=True)

        pure = lambda: None

        def test_pure():
            pure()
        """
    )
    result = suite.runpytest("-v")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*test_forks is in the unit tier but tried to fork*"])
    assert suite.runpytest("-m", "e2e").parseoutcomes() == {"passed": 2, "deselected": 2}
    assert suite.runpytest("-m", "unit").parseoutcomes() == {"failed": 1, "passed": 1, "deselected": 2}


def test_a_test_marked_unit_that_needs_a_server_is_refused_at_collection(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_e="""
        import pytest

        @pytest.mark.unit
        def test_claims_unit(mariadb):
            pass
        """
    )
    result = suite.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_claims_unit is marked unit but*make it integration*"])
