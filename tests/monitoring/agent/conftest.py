import sys
from pathlib import Path

# Run without pytest-django (-p no:django), nothing else puts the project root on sys.path.
ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
