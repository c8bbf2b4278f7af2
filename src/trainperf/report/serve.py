"""``trainperf serve``: read the built book over http on loopback, where its search works.

Quarto's search (and its link previews) fetch ``search.json`` with JavaScript, which browsers refuse
for pages opened from disk (``file://``); over http they work. The standard library's
:class:`http.server.ThreadingHTTPServer` serves the folder: a static site needs nothing more, and it
binds to ``127.0.0.1`` only, so nothing is exposed beyond the machine.
"""

from __future__ import annotations

import functools
import http.server
from pathlib import Path

from trainperf.errors import ConfigError

__all__ = ["book_folder", "make_server", "serve"]


def book_folder(root: str | Path, out: str | Path = "_output") -> Path:
    """The built book to serve: the Quarto book ``<root>/_book`` when it has an ``index.html``,
    else the preview site ``<out>/site`` (``out`` relative to ``root``).

    Raises:
        ConfigError: neither was built (one line: run ``make report`` first).
    """
    root = Path(root)
    for folder in (root / "_book", root / out / "site"):
        if (folder / "index.html").is_file():
            return folder
    raise ConfigError(
        f"no built book in {root / '_book'} or {root / out / 'site'}: run `make report` first"
    )


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass  # one line per request would bury the address line


def make_server(folder: str | Path, port: int = 8000) -> http.server.ThreadingHTTPServer:
    """An http server of ``folder`` on ``127.0.0.1:port`` (``port`` 0: any free port)."""
    handler = functools.partial(_Quiet, directory=str(folder))
    return http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)


def serve(root: str | Path, out: str | Path = "_output", port: int = 8000) -> int:
    """Serve the built book until Ctrl-C; prints its address. Returns the exit status (0).

    Raises:
        ConfigError: no built book; OSError: the port is taken.
    """
    folder = book_folder(root, out)
    server = make_server(folder, port)
    host, bound = server.server_address[:2]
    print(f"serving {folder} at http://{host}:{bound}/ (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
