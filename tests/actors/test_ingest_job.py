"""The job a run carries out: an interrupted job resumes with what the new run adds."""

from __future__ import annotations

from pathlib import Path

from actors.ingest import merged_job
from actors.journal import Job, JobTarget


def test_a_fresh_job_names_absolute_paths_once_and_keeps_removals_in_order(
    tmp_path: Path,
) -> None:
    job = merged_job(None, "default", [tmp_path / "a.md", tmp_path / "a.md"], ["y", "x", "y"])
    assert job.collection == "default" and job.job_id and job.created_at
    assert job.targets == (JobTarget(path=str(tmp_path / "a.md")),)
    assert job.removals == ("y", "x")


def test_an_interrupted_job_keeps_its_id_targets_and_removals_and_gains_the_new_ones(
    tmp_path: Path,
) -> None:
    old = Job(
        job_id="abc",
        collection="default",
        created_at="2026-01-01T00:00:00Z",
        targets=(JobTarget(path=str(tmp_path / "a.md")),),
        removals=("x",),
    )
    job = merged_job(old, "default", [tmp_path / "b.md", tmp_path / "a.md"], ["y"])
    assert (job.job_id, job.created_at) == ("abc", "2026-01-01T00:00:00Z")
    assert [t.path for t in job.targets] == [str(tmp_path / "a.md"), str(tmp_path / "b.md")]
    assert job.removals == ("x", "y")
    assert merged_job(old, "default", [], ()) == old  # resuming alone changes nothing


def test_a_job_of_another_collection_contributes_no_targets(tmp_path: Path) -> None:
    old = Job(
        job_id="abc",
        collection="other",
        created_at="2026-01-01T00:00:00Z",
        targets=(JobTarget(path=str(tmp_path / "a.md")),),
        removals=("x",),
    )
    job = merged_job(old, "default", [tmp_path / "b.md"], ())
    assert [t.path for t in job.targets] == [str(tmp_path / "b.md")]
    assert job.removals == ()
