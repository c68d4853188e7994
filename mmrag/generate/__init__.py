"""The VLM engine: visual-token accounting, encoder cache, token-aware admission, backends, answers.

Build with :func:`mmrag.generate.factory.build_engine` (None when ``backend == "none"``) and wrap in
:class:`~mmrag.generate.answer_service.AnswerService`; an answer's events are
:mod:`mmrag.generate.answer_events`. Import the module you use: this package imports nothing, so a door that
reads answer events loads no engine code. Imports of torch/transformers happen only when a transformers
backend is built.
"""

