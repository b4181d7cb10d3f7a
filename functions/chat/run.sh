#!/bin/bash
# The Lambda Web Adapter (AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap) runs this as the handler, with
# the function's environment and the task root as the working directory, and proxies the API
# Gateway stream to the server. Lambda's Python bootstrap puts the layers (/opt/python) on
# sys.path only for handler functions; this script is not one, so it adds them itself, as the
# adapter's zip examples do. The task root (this folder: fastapi, uvicorn, anthropic) is on the
# path through `python -m`, which puts the working directory first. The protocol is uvicorn's
# h11 with deadlines for slow request heads and bodies (docchat/serve/protocol.py).
PATH=/var/lang/bin:$PATH
PYTHONPATH=$PYTHONPATH:/opt/python:$LAMBDA_RUNTIME_DIR exec python -m uvicorn --factory docchat.wiring.cloud:cloud_app --http docchat.serve.protocol:DeadlineH11Protocol --host 127.0.0.1 --port "${AWS_LWA_PORT:-8080}" --no-access-log
