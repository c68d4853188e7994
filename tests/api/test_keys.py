"""The key store and the per-key limits as plain objects, and `mmrag keys` on a data folder."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from api.limits import JobQuota, RateLimiter
from cli import app
from mmrag.errors import InvalidInput, NotFound, Overloaded
from mmrag.keys import KeyStore


def test_scopes_and_corpora(tmp_path):
    store = KeyStore(tmp_path)
    admin, write, read = store.create("admin"), store.create("write", "docs"), store.create("read", "docs")
    assert admin.key.allows("admin", None) and admin.key.allows("write", "other")
    assert write.key.allows("read", "docs") and write.key.allows("write", "docs")
    assert not write.key.allows("write", "other") and not write.key.allows("admin", None)
    assert read.key.allows("read", "docs") and not read.key.allows("write", "docs") and not read.key.sees("other")
    assert store.resolve(read.secret) == read.key
    assert store.resolve(read.secret[:-1] + ("A" if read.secret[-1] != "A" else "B")) is None  # same id, wrong secret
    assert store.resolve("mmrag_000000000000_" + "x" * 43) is None and store.resolve("nonsense") is None
    store.revoke(read.key.id)
    assert store.resolve(read.secret) is None and not store.get(read.key.id).allows("read", "docs")
    with pytest.raises(InvalidInput):
        store.create("read")
    with pytest.raises(InvalidInput):
        store.create("admin", "docs")
    with pytest.raises(NotFound):
        store.revoke("ffffffffffff")
    store.close()


def test_rate_limiter_refills_per_key():
    now = [0.0]
    limiter = RateLimiter(rate=2.0, burst=2, clock=lambda: now[0])
    assert [limiter.take("a") for _ in range(2)] == [0.0, 0.0]
    assert limiter.take("a") == pytest.approx(0.5) and limiter.take("b") == 0.0
    now[0] = 0.5
    assert limiter.take("a") == 0.0
    assert RateLimiter(rate=0, burst=1).take("a") == 0.0


def test_job_quota_counts_unfinished_jobs():
    quota = JobQuota(2)
    finished: set[str] = set()
    for job in ("j1", "j2"):
        quota.check("k", finished.__contains__)
        quota.add("k", job)
    with pytest.raises(Overloaded):
        quota.check("k", finished.__contains__)
    quota.check("other", finished.__contains__)
    finished.add("j1")
    quota.check("k", finished.__contains__)


def test_keys_cli_on_the_data_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("MMRAG_DATA_DIR", str(tmp_path / "data"))
    runner = CliRunner()
    created = runner.invoke(app, ["keys", "create", "--corpus", "docs", "--scope", "write", "--name", "ci"])
    assert created.exit_code == 0, created.output
    secret = created.stdout.strip().splitlines()[-1]
    store = KeyStore(tmp_path / "data")
    key = store.resolve(secret)
    assert key is not None and key.scope == "write" and key.corpus == "docs"
    listed = runner.invoke(app, ["keys", "list"])
    assert key.id in listed.stdout and secret not in listed.stdout
    assert runner.invoke(app, ["keys", "revoke", key.id]).exit_code == 0
    assert store.resolve(secret) is None
    bad = runner.invoke(app, ["keys", "create", "--scope", "read"])
    assert bad.exit_code == 2 and "corpus" in bad.output
    store.close()
