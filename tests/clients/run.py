"""The real-client suite: every export of every policy in policies/ (and a
tuned policy) loaded by the software that consumes it. Run by
.ci/real-clients with the pinned venv of .ci/venv.sh:
    python tests/clients/run.py [grpc|envoy|aws|mesh ...]
Prints one line per case, a target x client table, and the closing line
`clients: N passed, N failed, N skipped`; exits 1 on any failure."""

import os
import shutil
import sys

sys.dont_write_bytecode = True  # nothing written into the working tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import Suite  # noqa: E402


def main():
    only = set(sys.argv[1:]) or {"grpc", "envoy", "aws", "mesh"}
    suite = Suite()
    if "grpc" in only:
        import grpc_client

        grpc_client.run(suite)
    if "aws" in only:
        import aws_client

        aws_client.run(suite, sys.executable)
    if "envoy" in only:
        import envoy_client

        envoy = shutil.which("envoy", path=os.path.dirname(sys.executable)) or shutil.which("envoy")
        envoy_client.run(suite, envoy)
    if "mesh" in only:
        import mesh_clients

        mesh_clients.run(suite)
    return suite.summary()


if __name__ == "__main__":
    sys.exit(main())
