import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# Tests never see a developer's own labs (nor their lab VM): a private state directory, inside
# the project so that the lab VM shares it.
os.environ["LINKLAB_STATE_DIR"] = str(ROOT / ".linklab" / "test-state")
