"""wireserver: a Kafka-wire-protocol broker on Twisted.

One import name: ``wireserver.protocol`` (the repository's ``protocol/`` folder: the wire
codec, no I/O) and ``wireserver.storage`` (``storage/``: partition logs on disk, no Twisted)
are subpackages of this one. An installed wheel carries them inside this package
(pyproject.toml maps the folders); in a source checkout, and in an editable install of one,
they sit beside it, so the checkout's root is searched too (setuptools' editable finder does
not follow a nested package-dir mapping).
"""

import os as _os

_checkout = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if (
    not _os.path.isdir(_os.path.join(__path__[0], "protocol"))
    and _os.path.isfile(_os.path.join(_checkout, "protocol", "__init__.py"))
    and _os.path.isfile(_os.path.join(_checkout, "pyproject.toml"))
):
    __path__.append(_checkout)
