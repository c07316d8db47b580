import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# Tests never see a developer's own labs: each run gets a private state directory unless told.
os.environ.setdefault("LINKLAB_STATE_DIR", str(ROOT / ".linklab" / "test-state"))
