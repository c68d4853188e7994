"""What the converter jail costs: the same conversions in the bubblewrap jail (``jail``, the default) and
with only a network namespace (``network``, the isolation before issue 21).

One round converts one file of each kind below with each arm; the arms alternate over ``--rounds``
rounds (ABBA). Per arm: the median seconds of a round; and the per-round ratio jail/network with its
95 % bootstrap interval (paired: the same files in the same round).

    python -m bench.convert_jail [--rounds 8]

ends with a ``RESULT`` line.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bench._stats import alternate, machine_line, result_line
from mmrag.config import IngestConfig
from mmrag.evaluate.stats import interval, paired_ratios
from mmrag.ingest.convert import convert_to_pdf
from mmrag.ingest.sniff import sniff_kind

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus" / "formats"
FILES = ["docx/word_sample.docx", "odf/text_document_01.odt", "xlsx/xlsx_01.xlsx", "pptx/powerpoint_sample.pptx",
         "doc/legacy_sample.doc", "md/wiki.md", "html/example_03.html", "epub/epub_purvis_poetry.epub"]


def one_round(files: list[tuple[bytes, str]], isolation: str) -> float:
    config = IngestConfig(convert_isolation=isolation)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    for data, kind in files:
        assert convert_to_pdf(data, kind, config).startswith(b"%PDF")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    files = []
    for rel in FILES:
        data = (args.corpus / rel).read_bytes()
        files.append((data, sniff_kind(data, rel).name))
    print(machine_line(), flush=True)
    one_round(files, "jail")  # warm the page cache and the isolation probes
    one_round(files, "network")
    out = alternate({"jail": lambda r: one_round(files, "jail"), "network": lambda r: one_round(files, "network")},
                    args.rounds)
    ratio = interval(paired_ratios(out["jail"], out["network"]))
    print(machine_line())
    print(f"{len(files)} files per round ({', '.join(k for _, k in files)})")
    print(result_line({"jail_s": interval(out["jail"]), "network_s": interval(out["network"]),
                       "jail_over_network": ratio, "files": len(files), "rounds": args.rounds}))


if __name__ == "__main__":
    main()
