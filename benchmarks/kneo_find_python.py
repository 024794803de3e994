"""How long a kneo workload's process takes to find kneo-serv's Python >= 3.12 (``targets/kneo/venv.find_python``),
looking through the candidates as it did, against the interpreter handed over in ``SWARMGAUGE_KNEO_PYTHON`` (what
``swarmgauge demo`` now does), alternating, in fresh processes, with the load average. Figures only; writes the JSON.

    python -m benchmarks.kneo_find_python [--repeats 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from swarmgauge.cli.demo_pages import KNEO_PYTHON_VARIABLE
from swarmgauge.files import write_json
from swarmgauge.targets.kneo import find_python

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "kneo_find_python.json"


def seconds(env: dict[str, str]) -> float:
    """A fresh interpreter's find_python(), its imports left out (timed inside it)."""
    code = "import time; from swarmgauge.targets.kneo import find_python; t = time.monotonic(); find_python(); print(time.monotonic() - t)"
    return float(
        subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    args = parser.parse_args()
    interpreter, _version = find_python()
    plain = {k: v for k, v in os.environ.items() if k != KNEO_PYTHON_VARIABLE}
    runs: dict[str, list[float]] = {"looked_for": [], "handed_over": []}
    for _ in range(args.repeats):
        runs["looked_for"].append(round(seconds(plain), 3))
        runs["handed_over"].append(round(seconds({**plain, KNEO_PYTHON_VARIABLE: interpreter}), 3))
        time.sleep(0.1)
    doc = {
        **runs,
        "median": {k: statistics.median(v) for k, v in runs.items()},
        "load_avg": round(os.getloadavg()[0], 1),
    }
    print(doc)
    print(f"written {write_json(Path(args.out), doc)}")


if __name__ == "__main__":
    main()
