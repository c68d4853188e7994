"""Imports the built-in backends so that they register their spec prefixes.

Heavy libraries (torch models, open_clip, colpali-engine) are imported inside the
factories, so importing this module is cheap.
"""

from mmrag.embed import fake, sentence  # noqa: F401
