# Prepended to each VM scenario's testScript before mypy reads it, as the NixOS test driver's
# build prepends its own type hints (nixpkgs nixos/lib/test-script-prepend.py, read from
# nixos/lib/testing/driver.nix): the globals the driver gives a script. Written for
# boxmaker; the node names follow this file (tests/vmscript/check.sh adds `NAME: Machine`).
from collections.abc import Callable
from typing import ContextManager, Protocol

from test_driver.machine import Machine


class RetryProtocol(Protocol):
    def __call__(self, fn: Callable, timeout: int = 900) -> None:
        raise Exception("type information only")


start_all: Callable[[], None]
join_all: Callable[[], None]
subtest: Callable[[str], ContextManager[None]]
retry: RetryProtocol
machines: list[Machine]
