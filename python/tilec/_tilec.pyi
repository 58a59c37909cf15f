"""Type stubs of the extension module (python/src/lib.rs)."""

from typing import Dict, List, Optional, Tuple, Union

__version__: str
HAS_COMPILER: bool

class CompileError(Exception):
    diagnostics: List[Tuple[str, int, int, str, str]]

class LaunchError(RuntimeError): ...
class ArgumentError(LaunchError): ...
class NoDriverError(LaunchError): ...

_Tensor = Tuple[int, str, List[int], List[int], int]
_Value = Union[int, float, bool, _Tensor]

def compile(
    source: str,
    file: str,
    options: List[Tuple[str, str]],
    cubin: bool,
    cache: Optional[str],
) -> Dict[str, object]: ...
def cache_dir() -> Optional[str]: ...
def check_manifest(manifest: str) -> None: ...
def device_count() -> int: ...
def bind(
    manifest: str, args: List[Tuple[str, _Value]], device: int = 0, sm_count: int = 132
) -> Dict[str, object]: ...

class Launcher:
    def __init__(
        self, manifest: str, ptx: str, cubin: Optional[bytes] = None, device: int = 0
    ) -> None: ...
    def launch(
        self,
        args: List[Tuple[str, _Value]],
        stream: int = 0,
        grid: Optional[Tuple[int, int, int]] = None,
    ) -> Tuple[int, int, int]: ...
    @property
    def sm_count(self) -> int: ...
    @property
    def device_name(self) -> str: ...
    @property
    def compute_capability(self) -> Tuple[int, int]: ...
