"""bench.job_end_cost on tiny sizes: both corpora grow, every round times both, the RESULT line has the
paired ratio with its bounds and the forced re-weights."""

from __future__ import annotations

import sys

from bench import job_end_cost


def test_a_tiny_run_prints_the_ratio_and_the_reweights(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["job_end_cost", "--sizes", "40,120", "--rounds", "2"])
    job_end_cost.main()
    out = capsys.readouterr().out
    assert "small: forced re-weight of 48 pages" in out and "large: forced re-weight of 128 pages" in out
    (result,) = [line for line in out.splitlines() if line.startswith("RESULT ")]
    fields = dict(f.split("=") for f in result.split()[1:])
    assert {"job_ratio", "job_ratio_lo", "job_ratio_hi", "job_small_s", "job_large_s", "reweight_small_s",
            "reweight_large_s", "loaded"} <= fields.keys()
    assert float(fields["job_ratio_lo"]) <= float(fields["job_ratio"]) <= float(fields["job_ratio_hi"])
    assert fields["small"] == "40" and fields["large"] == "120"
