"""The examples in public docstrings run and give what they show."""

import doctest
import importlib
import pkgutil

import pytest

import tapeflow

MODULES = sorted(m.name for m in pkgutil.walk_packages(tapeflow.__path__, "tapeflow.")
                 if ".examples." not in m.name)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} doctest example(s) failed in {name}"
