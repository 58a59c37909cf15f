"""Type stubs of the tilec package (python/tilec/__init__.py)."""

from typing import Any, Dict, Optional, Sequence, Tuple, Union

from . import library as library
from .builder import Builder as Builder, GridExpr as GridExpr, Value as Value
from ._tilec import (
    ArgumentError as ArgumentError,
    BuildError as BuildError,
    CompileError as CompileError,
    LaunchError as LaunchError,
    NoDriverError as NoDriverError,
    __version__ as __version__,
    device_count as device_count,
)

HAS_COMPILER: bool

def compile(
    source: Union[str, Builder],
    target: str = ...,
    *,
    file: str = ...,
    cubin: bool = ...,
    cache: bool = ...,
    device: Optional[int] = ...,
    **options: Any,
) -> Kernel: ...
def isolated_compile(
    source: Union[str, Builder], target: str = ..., *, timeout: Optional[float] = ..., **kw: Any
) -> Kernel: ...
def load(directory: str, name: str, *, device: Optional[int] = ...) -> Kernel: ...

class Kernel:
    name: str
    ptx: str
    cubin: Optional[bytes]
    manifest_json: str
    manifest: Dict[str, Any]
    cache: str
    def __init__(
        self,
        name: str,
        ptx: str,
        manifest: str,
        cubin: Optional[bytes] = ...,
        *,
        device: Optional[int] = ...,
        cache: str = ...,
    ) -> None: ...
    @property
    def params(self) -> Sequence[str]: ...
    def launcher(self, device: int = ...) -> Any: ...
    def bind(self, args: Sequence[Any], kwargs: Dict[str, Any]) -> list: ...
    def check(
        self, *args: Any, device: int = ..., sm_count: int = ..., **kwargs: Any
    ) -> Dict[str, Any]: ...
    def __call__(
        self,
        *args: Any,
        grid: Optional[Tuple[int, int, int]] = ...,
        stream: Any = ...,
        **kwargs: Any,
    ) -> Tuple[int, int, int]: ...
