"""Imports the built-in backends so that they register their spec prefixes.

Heavy libraries (torch models, open_clip, colpali-engine) are imported inside the
factories, so importing this module is cheap.
"""

from mmrag.embed import colpali_backend, fake, hf_colpali_backend, open_clip_backend, sentence  # noqa: F401
