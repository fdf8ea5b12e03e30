"""The pure tier's shared fixture: its run folders leave no live marker behind."""
import pytest


@pytest.fixture(autouse=True)
def _private_live_markers(tmp_path_factory, monkeypatch):  # type: ignore[no-untyped-def]
    """Run folders made by pure tests keep their live markers in a temporary folder: under
    root, the real one (/run/dcrepro/folders) would outlive the test, and the next real run
    would mark the test's folder killed and say so."""
    from harness import runfolder
    monkeypatch.setattr(runfolder, "LIVE_DIR", tmp_path_factory.mktemp("live"))
