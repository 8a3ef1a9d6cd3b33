"""Where the tests find the repository, their own data and the package's bundled samples."""

from pathlib import Path

import sarag_assets

REPO = Path(__file__).resolve().parents[1]
TEST_DATA = REPO / "sarag_assets_tests" / "data"
SAMPLES = Path(sarag_assets.__file__).resolve().parent / "sample_data"
