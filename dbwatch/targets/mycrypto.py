"""PyMySQL without `cryptography` until an RSA password exchange needs it.

`pymysql._auth` imports `cryptography` (its hazmat layer: the Rust bindings, OpenSSL, a dozen
modules) when PyMySQL is imported, for one function: `sha2_rsa_encrypt`, which sends a
password RSA-encrypted to a MySQL server authenticating with `sha256_password` or
`caching_sha2_password` over a connection without TLS. That import is ~62 M instructions, a
tenth of a whole one-target MariaDB audit, and most connections never use it (MariaDB has
neither plugin; TLS or a cached MySQL 8 login sends no RSA). `import_pymysql()` imports
PyMySQL with `cryptography` held back, then replaces `sha2_rsa_encrypt` by a function that
imports what the original would have imported (the same names, into `pymysql._auth`) on its
first call and then calls the original: the same bytes on the wire, the same RuntimeError when
`cryptography` is not installed. If `pymysql._auth` is not laid out as expected, it is
re-executed with `cryptography` available, as a plain import would have left it.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

_LOCK = threading.Lock()


def import_pymysql() -> None:
    """Import PyMySQL, `cryptography` loaded on its first RSA exchange (a no-op when PyMySQL or
    `cryptography` is imported already)."""
    if "pymysql" in sys.modules or "cryptography" in sys.modules:
        return
    sys.modules["cryptography"] = None  # type: ignore[assignment]  # ImportError inside _auth
    try:
        import pymysql._auth as auth
    finally:
        if sys.modules.get("cryptography", ...) is None:
            del sys.modules["cryptography"]
    original = getattr(auth, "sha2_rsa_encrypt", None)
    if getattr(auth, "_have_cryptography", None) is not False or not callable(original):
        importlib.reload(auth)  # an unknown layout: as a plain import would have left it
        return
    auth.sha2_rsa_encrypt = _on_first_use(auth, original)


def _on_first_use(auth: ModuleType, original: Callable[..., Any]) -> Callable[..., Any]:
    loaded: list[bool] = []

    def sha2_rsa_encrypt(password: bytes, salt: bytes, public_key: bytes) -> Any:
        if not loaded:
            with _LOCK:
                if not loaded:
                    _load_cryptography(auth)
                    loaded.append(True)
        return original(password, salt, public_key)

    sha2_rsa_encrypt.__doc__ = original.__doc__
    sha2_rsa_encrypt.__wrapped__ = original  # type: ignore[attr-defined]
    return sha2_rsa_encrypt


def _load_cryptography(auth: ModuleType) -> None:
    """What `pymysql._auth` imports at its top, into its namespace (its `_have_cryptography`
    stays False, and the original raises its RuntimeError, without `cryptography`)."""
    try:
        from cryptography.hazmat.backends import default_backend
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import padding
    except ImportError:
        return
    auth.default_backend = default_backend  # type: ignore[attr-defined]
    auth.hashes = hashes  # type: ignore[attr-defined]
    auth.serialization = serialization  # type: ignore[attr-defined]
    auth.padding = padding  # type: ignore[attr-defined]
    auth._have_cryptography = True  # type: ignore[attr-defined]
