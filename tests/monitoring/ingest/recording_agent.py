"""The real agent CLI, recording every samples frame it takes (seq, ts, GPU UUIDs) as JSON lines.

python -m tests.monitoring.ingest.recording_agent RECORD_FILE [agent arguments...]
"""

import json
import sys

from monitoring.agent import __main__ as cli
from monitoring.agent import client


def main() -> int:
    record = open(sys.argv[1], "a", buffering=1)
    take = client.samples_frame

    def recorded(backend, seq, now=None):
        frame = take(backend, seq, now)
        gpus = [sample["gpu"] for sample in frame["samples"]]
        ts = frame["samples"][0]["ts"] if frame["samples"] else None
        record.write(json.dumps({"seq": seq, "ts": ts, "gpus": gpus}) + "\n")
        return frame

    client.samples_frame = recorded
    return cli.main(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
