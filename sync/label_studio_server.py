"""Label Studio's own ``label-studio`` command, its server's connections with TCP_NODELAY.

``label-studio start`` serves with Django's development server, which writes a response's headers
and its body in two sends on a socket with Nagle's algorithm on: the body waits until the client
acknowledges the headers, and a client delays that acknowledgement by 40 ms. Every request then
took at least 40 ms: a ``whoami`` 50 ms of which 8 ms were Label Studio's work, 6 ms with the
option set. judgelab's commands make hundreds of requests (a sync, a pre-annotation in chunks),
so :func:`judgelab.sync.local_stack.spawn_label_studio` starts Label Studio through this module
when Label Studio is installed beside judgelab::

    python -m judgelab.sync.label_studio_server start --port 8080 ...

takes the arguments of ``label-studio`` and runs it unchanged but for that option.
"""

from __future__ import annotations

import sys


def main() -> None:
    from django.core.servers import basehttp

    # socketserver.StreamRequestHandler sets TCP_NODELAY on each connection when this is True
    basehttp.WSGIRequestHandler.disable_nagle_algorithm = True
    from label_studio.server import main as label_studio_main

    sys.argv[0] = "label-studio"
    sys.exit(label_studio_main())


if __name__ == "__main__":
    main()
